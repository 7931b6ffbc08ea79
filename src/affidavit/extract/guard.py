"""Parsing binary formats in a disposable child process, under a time and a memory limit.

PDF and DOCX parsers run third-party code over attacker-shaped structures: a page tree, a
filter chain, an XML tree. Their own caps stop every attack we know of, and this guard
stops the ones we do not: the parse runs in a forked child whose address space may grow
by at most a fixed budget (``RLIMIT_AS``) and which is killed when the parse time limit
passes. The parent only waits on a pipe, so neither a stuck nor a bloated parse can take
the ingestion process down with it. The child's result comes back pickled; it is our own
code's output (frozen dataclasses of strings and numbers), never the document's bytes.

Refusals: ``PARSE_TIMEOUT`` (killed at the time limit), ``PARSE_MEMORY_LIMIT`` (the child
ran out of its address-space budget), ``PARSE_FAILED`` (the parser broke: a bug or a
crash in native code; the document is quarantined rather than failing the run).

Where ``os.fork`` does not exist the task runs in-process without those two limits, its
failures mapped to the same reason codes.

The child is forked from the ingesting process; on Python 3.12 and later, forking a
process that runs threads warns (``DeprecationWarning``), which a threaded host that
turns warnings into errors must allow for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import selectors
import signal
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected

PARSE_TIMEOUT = "PARSE_TIMEOUT"
PARSE_MEMORY_LIMIT = "PARSE_MEMORY_LIMIT"
PARSE_FAILED = "PARSE_FAILED"
NESTING_TOO_DEEP = "NESTING_TOO_DEEP"

REASON_CODES = (PARSE_FAILED, PARSE_MEMORY_LIMIT, PARSE_TIMEOUT)
"""Every reason code the guard itself refuses a document with."""

MIN_MEMORY_BUDGET_BYTES = 384 * 1024 * 1024
"""Address space a parse may add to what the child inherits, at the least."""

_CAN_FORK = hasattr(os, "fork")
_READ_BLOCK = 1024 * 1024

T = TypeVar("T")

_Outcome = tuple[str, object]


def memory_budget(limits: IngestSettings) -> int:
    """Address space a parse may add: room for three copies of the largest inflated part."""
    return max(MIN_MEMORY_BUDGET_BYTES, 3 * limits.max_decompressed_bytes)


def parse_isolated(task: Callable[[], T], *, timeout_seconds: float, memory_bytes: int) -> T:
    """``task()`` run in a forked child; its value, or its ``InputRejected``, comes back."""
    if not _CAN_FORK:
        return cast(T, _result(*_outcome(task)))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        try:
            os.close(read_fd)
            _run_child(task, write_fd, memory_bytes)
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        payload = _collect(read_fd, deadline=time.monotonic() + timeout_seconds)
    except BaseException:  # interrupted while waiting: leave no parser running
        _kill(pid)
        raise
    finally:
        os.close(read_fd)
    if payload is None:
        _kill(pid)
        raise InputRejected(PARSE_TIMEOUT, f"parsing took longer than {timeout_seconds:g} s")
    _, status = os.waitpid(pid, 0)
    return cast(T, _unpack(payload, status))


# ---------------------------------------------------------------------- the child


def _run_child(task: Callable[[], object], write_fd: int, memory_bytes: int) -> None:
    _limit_address_space(memory_bytes)
    # Nobody reads the child's warnings or log lines; under a test runner they would turn
    # a document the parent would accept into an error.
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    outcome = _outcome(task)
    try:
        payload = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        payload = pickle.dumps(("memory", "no memory left to return the parsed document"))
    view = memoryview(payload)
    while view:
        written = os.write(write_fd, view)
        view = view[written:]
    os.close(write_fd)


def _outcome(task: Callable[[], object]) -> _Outcome:
    try:
        return ("ok", task())
    except InputRejected as exc:
        return ("rejected", (exc.reason_code, exc.detail))
    except MemoryError:
        return ("memory", "the parse ran out of its memory budget")
    except RecursionError:
        return ("rejected", (NESTING_TOO_DEEP, "nesting too deep to read"))
    except Exception as exc:  # a parser bug must quarantine one document, not end the run
        return ("failed", f"{type(exc).__name__}: {exc}"[:300])


def _limit_address_space(memory_bytes: int) -> None:
    """Allow the child ``memory_bytes`` of address space beyond what it inherited."""
    try:
        import resource  # POSIX only, like fork itself

        statm = Path("/proc/self/statm").read_text(encoding="ascii")
        inherited = int(statm.split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = inherited + memory_bytes
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        pass  # no /proc or no RLIMIT_AS here: the time limit still applies


# ---------------------------------------------------------------------- the parent


def _collect(read_fd: int, *, deadline: float) -> bytes | None:
    """Everything the child writes until it closes the pipe; None when time runs out."""
    pieces: list[bytes] = []
    with selectors.DefaultSelector() as selector:
        selector.register(read_fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                return None
            piece = os.read(read_fd, _READ_BLOCK)
            if not piece:
                return b"".join(pieces)
            pieces.append(piece)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _unpack(payload: bytes, status: int) -> object:
    if not payload:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
            raise InputRejected(PARSE_MEMORY_LIMIT, "the parser was killed (out of memory)")
        raise InputRejected(PARSE_FAILED, f"the parser died (wait status {status})")
    # The payload was pickled by our own forked code, from values it built; the document's
    # bytes never reach pickle.loads directly.
    kind, value = pickle.loads(payload)  # noqa: S301
    return _result(kind, value)


def _result(kind: str, value: object) -> object:
    """The task's value, or the refusal its outcome stands for."""
    if kind == "ok":
        return value
    if kind == "rejected":
        code, detail = cast(tuple[str, str], value)
        raise InputRejected(code, detail)
    if kind == "memory":
        raise InputRejected(PARSE_MEMORY_LIMIT, str(value))
    raise InputRejected(PARSE_FAILED, str(value))
