"""What the two ONNX models shipped in the package share: how a session is opened, how
several inputs run side by side, and how a model file is named by its digest.

The ``nli`` layer's cross-encoder (:mod:`affidavit.answer.verify.nli`) and the ``minilm`` vector
backend (:mod:`affidavit.index.minilm_onnx`) both run one input per session call, so an
input's result never depends on what else was computed with it. One input (a query, one
claim) runs on a session with several threads; several inputs are shared out over
one-thread sessions run side by side, because one small input cannot keep two threads busy
inside one call but two calls keep two cores busy. ONNX Runtime and ``tokenizers`` are
imported by the callers' loaders, on first use.
"""

from __future__ import annotations

import hashlib
import importlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")


def cpu_session(model: Path, threads: int, *, spin: bool = False) -> Any:
    """An ONNX Runtime CPU session on ``threads`` threads; :class:`ImportError` without the
    runtime. Without ``spin`` its threads sleep rather than spin when idle (a busy machine
    loses nothing to them); with it, a thread waiting for the next operation's share spins
    briefly instead of being woken, which is most of a short input's latency on two threads
    (a query of 16 tokens: 3.4 ms on one thread, 2.1 ms on two spinning)."""
    ort = importlib.import_module("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning",
                                     "1" if spin and threads > 1 else "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


class SessionPool:
    """One multi-thread session for a single input (its threads spin between operations:
    a single input is a request someone waits for), and one-thread workers, opened on first
    need, for several inputs run side by side."""

    def __init__(self, model: Path, *, threads: int, workers: int) -> None:
        self.model = model
        self.session = cpu_session(model, threads, spin=True)
        self._worker_count = workers
        self._workers: list[Any] = []
        self._lock = threading.Lock()

    def map(self, run: Callable[[Any, Job], Result], jobs: Sequence[Job]) -> list[Result]:
        """``run(session, job)`` for every job, in order."""
        workers = self._worker_sessions() if len(jobs) > 1 else []
        if len(workers) < 2:
            return [run(self.session, job) for job in jobs]
        shares = [list(jobs[i::len(workers)]) for i in range(len(workers))]
        with ThreadPoolExecutor(len(workers)) as pool:  # ONNX Runtime frees the GIL
            done = list(pool.map(lambda share: [run(share[0], job) for job in share[1]],
                                 zip(workers, shares, strict=True)))
        return [done[i % len(workers)][i // len(workers)] for i in range(len(jobs))]

    def _worker_sessions(self) -> list[Any]:
        with self._lock:
            if not self._workers:
                self._workers = [cpu_session(self.model, 1)
                                 for _ in range(self._worker_count)]
            return self._workers


def file_digest(path: Path) -> str:
    """The first 16 hex digits of a file's SHA-256: how a settings file names the model
    file it was made for."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
