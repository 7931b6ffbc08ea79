"""Choosing the embedding backend (``[vectors] backend``): the factory sits above the
backends it constructs (:mod:`affidavit.index.vectors` for the protocol and the hash backend,
:mod:`~affidavit.index.minilm_onnx`, :mod:`~affidavit.index.minilm`,
:mod:`~affidavit.index.openai_embeddings`), so none of them imports it back. A heavy backend's
module is imported only when it is chosen."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from affidavit.config.settings import VectorSettings
from affidavit.errors import ConfigurationError
from affidavit.index.vectors import EmbeddingBackend, HashEmbeddingBackend


def _none(_: VectorSettings) -> EmbeddingBackend | None:
    return None


def _hash(settings: VectorSettings) -> EmbeddingBackend | None:
    return HashEmbeddingBackend.from_settings(settings)


def _minilm(settings: VectorSettings) -> EmbeddingBackend | None:
    if settings.runtime == "torch":
        from affidavit.index.minilm import MiniLMBackend  # the heavy extra stays unimported

        return MiniLMBackend.from_settings(settings)
    if settings.model_path:
        raise ConfigurationError("a model_path of your own runs on runtime = 'torch'",
                                 key="vectors.runtime")
    from affidavit.index.minilm_onnx import MiniLMOnnxBackend, packaged_model

    return MiniLMOnnxBackend(packaged_model(), max_length=settings.max_seq_length)


def _openai(settings: VectorSettings) -> EmbeddingBackend | None:
    from affidavit.index.openai_embeddings import OpenAIEmbeddingBackend

    return OpenAIEmbeddingBackend.from_settings(settings)


BACKENDS: Mapping[str, Callable[[VectorSettings], EmbeddingBackend | None]] = {
    "none": _none,
    "hash": _hash,
    "minilm": _minilm,
    "openai": _openai,
}
"""Backend name (``[vectors] backend``) to factory."""


def make_backend(settings: VectorSettings) -> EmbeddingBackend | None:
    """The configured backend, or ``None`` when the vector channel is off.

    Construction is light: model weights load and endpoints are contacted on first use.
    """
    factory = BACKENDS.get(settings.backend.strip().lower())
    if factory is None:
        raise ConfigurationError(f"must be one of {', '.join(BACKENDS)}", key="vectors.backend")
    return factory(settings)
