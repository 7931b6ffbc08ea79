"""The embedding step: every served chunk gets one vector per model id, once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from tests.retrieval.governed_corpus import document, governed_settings, ingest, synthetic_documents

from affidavit.errors import ProviderError
from affidavit.index import HashEmbeddingBackend, embed_missing, embed_query
from affidavit.index.vectors import Vectors
from affidavit.ingest.run import Ingestor
from affidavit.sources.memory import StaticSource


class CountingBackend(HashEmbeddingBackend):
    """The hash backend, counting the texts it was asked to embed."""

    def __init__(self, dimensions: int = 16) -> None:
        super().__init__(dimensions)
        self.texts: list[str] = []

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return super().embed_texts(texts)


class BrokenBackend(HashEmbeddingBackend):
    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        return np.full((1, 3), np.nan, dtype=np.float32)


def test_every_head_chunk_is_embedded_once_in_rounds(tmp_path: Path) -> None:
    settings = governed_settings()
    store = ingest(tmp_path, synthetic_documents(30), settings)
    backend = CountingBackend()
    chunks = store.lexical_stats(settings.tenant).n_chunks
    report = embed_missing(store, settings.tenant, backend, batch_size=4, fetch_batches=2)
    assert report.embedded == chunks == len(backend.texts)
    assert report.rounds == -(-chunks // 8)
    ids, blobs = store.head_vectors(settings.tenant, backend.model_id)
    assert len(ids) == chunks and all(len(b) == 16 * 4 for b in blobs)
    again = embed_missing(store, settings.tenant, backend)
    assert again.embedded == 0 and len(backend.texts) == chunks


def test_a_new_model_id_re_embeds_and_the_old_vectors_stay(tmp_path: Path) -> None:
    settings = governed_settings()
    store = ingest(tmp_path, synthetic_documents(5), settings)
    embed_missing(store, settings.tenant, HashEmbeddingBackend(16))
    report = embed_missing(store, settings.tenant, HashEmbeddingBackend(32))
    assert report.embedded == store.lexical_stats(settings.tenant).n_chunks
    assert report.model_id != HashEmbeddingBackend(16).model_id
    assert len(store.head_vectors(settings.tenant, HashEmbeddingBackend(16).model_id)[0]) > 0


def test_only_the_new_version_is_embedded_after_a_change(tmp_path: Path) -> None:
    settings = governed_settings()
    store = ingest(tmp_path, [document("a", "Hotel policy.", acl=("*",)),
                              document("b", "Board minutes.", acl=("*",))], settings)
    backend = CountingBackend()
    embed_missing(store, settings.tenant, backend)
    backend.texts.clear()
    Ingestor(store, settings).run([StaticSource([document("a", "Hotel policy, revised.",
                                                          acl=("*",))])])
    embed_missing(store, settings.tenant, backend)
    assert backend.texts == ["Hotel policy, revised."]


def test_a_backend_returning_garbage_fails_and_stores_nothing(tmp_path: Path) -> None:
    settings = governed_settings()
    store = ingest(tmp_path, synthetic_documents(3), settings)
    backend = BrokenBackend(3)
    with pytest.raises(ProviderError):
        embed_missing(store, settings.tenant, backend)
    assert store.head_vectors(settings.tenant, backend.model_id) == ([], [])


def test_query_vector_is_one_checked_row() -> None:
    vector = embed_query(HashEmbeddingBackend(8), "hotel")
    assert vector.shape == (8,)
