"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, llama.cpp
server, Ollama, text-embeddings-inference).

The key is read from the environment variable named by ``[vectors] api_key_env`` (never from
the settings file). The dimension is learned from the first response and is part of the
``model_id``; a server that later answers with another length is an error, because vectors
of two shapes must never share one id.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from affidavit.config.settings import VectorSettings
from affidavit.errors import ConfigurationError, ProviderError
from affidavit.index.vectors import Vectors, l2_normalize

OPENAI_BACKEND_VERSION = "1"
DEFAULT_TIMEOUT_SECONDS = 60.0
_PROBE_TEXT = "dimension probe"


def embeddings_url(endpoint: str) -> str:
    """``…/v1/embeddings`` for a base URL given with or without ``/v1`` or the path."""
    base = endpoint.strip().rstrip("/")
    if base.endswith("/embeddings"):
        return base
    if base.endswith("/v1"):
        return base + "/embeddings"
    return base + "/v1/embeddings"


def parse_embeddings(payload: Any, expected: int) -> list[list[float]]:
    """The vectors of an embeddings response in input order; malformed -> ProviderError."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("data"), list):
        raise ProviderError("embeddings response has no 'data' list")
    rows: dict[int, list[float]] = {}
    for position, item in enumerate(payload["data"]):
        if not isinstance(item, Mapping) or not isinstance(item.get("embedding"), list):
            raise ProviderError("embeddings response item without an 'embedding' list")
        index = item.get("index", position)
        if not isinstance(index, int) or index in rows:
            raise ProviderError("embeddings response has a bad or repeated 'index'")
        rows[index] = [float(x) for x in item["embedding"]]
    if sorted(rows) != list(range(expected)):
        raise ProviderError(f"embeddings response has {len(rows)} vectors for {expected} texts")
    return [rows[i] for i in range(expected)]


class OpenAIEmbeddingBackend:
    """One POST per :meth:`embed_texts` call; the caller batches."""

    name = "openai"

    def __init__(self, endpoint: str, model: str, *, api_key: str | None = None,
                 timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        if not endpoint.strip():
            raise ConfigurationError("the openai backend needs an endpoint",
                                     key="vectors.endpoint")
        if not model.strip():
            raise ConfigurationError("the openai backend needs a model name", key="vectors.model")
        self.url = embeddings_url(endpoint)
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout_seconds
        self._dimensions: int | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: VectorSettings) -> OpenAIEmbeddingBackend:
        """Endpoint, model and key (from the named environment variable)."""
        key = None
        if settings.api_key_env:
            key = os.environ.get(settings.api_key_env)
            if not key:
                raise ConfigurationError(f"environment variable {settings.api_key_env} is not set",
                                         key="vectors.api_key_env")
        return cls(settings.endpoint, settings.model, api_key=key)

    @property
    def model_id(self) -> str:
        """``openai/<model>@<host>/d<dims>/v<version>`` (asks the server once for the dims)."""
        host = urlsplit(self.url).netloc
        return f"openai/{self.model}@{host}/d{self.dimensions}/v{OPENAI_BACKEND_VERSION}"

    @property
    def dimensions(self) -> int:
        """Vector length, learned from the server on first need."""
        if self._dimensions is None:
            self.embed_texts([_PROBE_TEXT])
        assert self._dimensions is not None  # set by embed_texts or it raised
        return self._dimensions

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors for ``texts``; any transport or protocol fault is a ProviderError."""
        if not texts:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        try:
            response = httpx.post(self.url, json={"model": self.model, "input": list(texts)},
                                  headers=self._headers, timeout=self._timeout)
            response.raise_for_status()
            payload = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderError(f"embeddings endpoint failed: {type(exc).__name__}") from exc
        rows = parse_embeddings(payload, len(texts))
        self._check_dimensions({len(row) for row in rows})
        return l2_normalize(np.array(rows, dtype=np.float64))

    def _check_dimensions(self, lengths: set[int]) -> None:
        if len(lengths) != 1 or 0 in lengths:
            raise ProviderError("embeddings response has vectors of different lengths")
        (length,) = lengths
        with self._lock:
            if self._dimensions is None:
                self._dimensions = length
            elif self._dimensions != length:
                raise ProviderError(f"the endpoint changed dimension ({self._dimensions} to "
                                    f"{length})")
