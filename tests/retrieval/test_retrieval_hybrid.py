"""Hybrid retrieval: both channels prefiltered by authz, fused with RRF, rewritten queries,
channel ranks and scores on every hit."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.retrieval.governed_corpus import (
    context,
    document,
    governed_settings,
    ingest,
    synthetic_documents,
)

from affidavit.config.settings import Settings, VectorSettings
from affidavit.errors import AuthorizationError
from affidavit.index import HashEmbeddingBackend, MemoryIndex, SQLiteSnapshotSource, embed_missing
from affidavit.retrieval import HybridHit, HybridRetriever, rrf_fuse, sire_gate
from affidavit.retrieval.hybrid import channels_exact
from affidavit.store import SQLiteStore
from affidavit.store.protocol import VectorHit

HASH = VectorSettings(backend="hash", dimensions=64)


def build(tmp_path: Path, settings: Settings, *, memory: bool = False
          ) -> tuple[SQLiteStore, HybridRetriever]:
    store = ingest(tmp_path, synthetic_documents(40), settings)
    index = MemoryIndex(SQLiteSnapshotSource(store), store) if memory else None
    return store, HybridRetriever.from_settings(store, settings, memory=index)


@pytest.mark.parametrize("memory", [False, True])
def test_hits_are_fused_from_both_channels_with_their_ranks(tmp_path: Path,
                                                            memory: bool) -> None:
    settings = governed_settings(vectors=HASH)
    store, retriever = build(tmp_path, settings, memory=memory)
    embed_missing(store, settings.tenant, HashEmbeddingBackend(64))
    authz = context(store, settings, "user:bob")
    hits = retriever.search(authz, "revenue income forecast", limit=8)
    assert hits and all(isinstance(h, HybridHit) for h in hits)
    channels = retriever.rankings(authz, "revenue income forecast", depth=50)
    expected = rrf_fuse(channels.id_rankings(), k=60, limit=8)
    assert [h.chunk.chunk_id for h in hits] == [f.item_id for f in expected]
    assert [h.score for h in hits] == [f.score for f in expected]
    assert [h.fused_rank for h in hits] == list(range(1, len(hits) + 1))
    assert any(h.lexical_rank is not None and h.vector_rank is not None for h in hits)
    first = hits[0].explain()
    assert set(first) >= {"lexical_rank", "lexical_score", "vector_rank", "vector_score",
                          "fused_score"}
    assert first["vector_exact"] is True  # SQLite scans the readable vectors exactly


def test_one_approximate_vector_ranking_marks_the_hits_not_exact() -> None:
    exact = (VectorHit("a", 0.9), VectorHit("b", 0.8))
    assert channels_exact((exact, ())) is True
    assert channels_exact((exact, (VectorHit("c", 0.7, exact=False),))) is False
    assert channels_exact(()) is True


def test_memory_and_store_paths_give_the_same_hits(tmp_path: Path) -> None:
    settings = governed_settings(vectors=HASH)
    store, via_store = build(tmp_path, settings)
    embed_missing(store, settings.tenant, HashEmbeddingBackend(64))
    via_memory = HybridRetriever.from_settings(
        store, settings, memory=MemoryIndex(SQLiteSnapshotSource(store), store))
    for principal in ("user:alice", "user:bob", "user:carol"):
        authz = context(store, settings, principal)
        for query in ("board merger", "privacy data retention audit", "hotel"):
            a = via_store.search(authz, query, limit=10)
            b = via_memory.search(authz, query, limit=10)
            assert [h.chunk.chunk_id for h in a] == [h.chunk.chunk_id for h in b]


@pytest.mark.invariant
@pytest.mark.parametrize("principal", ["user:alice", "user:bob", "user:dave"])
def test_no_channel_returns_a_chunk_the_caller_may_not_read(tmp_path: Path,
                                                            principal: str) -> None:
    settings = governed_settings(vectors=HASH)
    store, retriever = build(tmp_path, settings, memory=True)
    embed_missing(store, settings.tenant, HashEmbeddingBackend(64))
    authz = context(store, settings, principal)
    channels = retriever.rankings(authz, "board merger vote revenue travel", depth=1000)
    returned = {cid for ranking in channels.id_rankings() for cid in ranking}
    readable = {r.chunk.chunk_id for r in store.get_chunks(authz, sorted(returned))}
    assert returned == readable
    if principal == "user:dave":
        assert returned == set()
    labels = {r.chunk.label for r in store.get_chunks(authz, sorted(returned))}
    assert labels <= set(authz.granted_labels)


def test_no_authz_context_means_no_retrieval(tmp_path: Path) -> None:
    settings = governed_settings()
    _, retriever = build(tmp_path, settings)
    with pytest.raises(AuthorizationError):
        retriever.search(None, "hotel", limit=5)


def test_without_a_backend_it_is_lexical_order(tmp_path: Path) -> None:
    settings = governed_settings()
    store, retriever = build(tmp_path, settings)
    authz = context(store, settings, "user:carol")
    hits = retriever.search(authz, "audit security", limit=10)
    lexical = retriever.lexical_hits(authz, "audit security", limit=10)
    assert [h.chunk.chunk_id for h in hits] == [h.chunk_id for h in lexical]
    assert all(h.vector_rank is None for h in hits)
    assert [h.lexical_score for h in hits] == [h.score for h in lexical]


def test_lazy_mode_embeds_on_first_search_only(tmp_path: Path) -> None:
    settings = governed_settings(vectors=VectorSettings(backend="hash", dimensions=64,
                                                        compute="lazy"))
    store, retriever = build(tmp_path, settings)
    model = HashEmbeddingBackend(64).model_id
    assert store.head_vectors(settings.tenant, model) == ([], [])
    authz = context(store, settings, "user:carol")
    assert any(h.vector_rank for h in retriever.search(authz, "vendor invoice", limit=5))
    # Every head chunk of a declared embedding label has a vector; RESTRICTED ones never do.
    embedded = set(store.head_vectors(settings.tenant, model)[0])
    labels = dict(store._read("SELECT chunk_id, label FROM chunks WHERE tenant_id = ? "
                              "AND is_head = 1", (settings.tenant,)))
    assert embedded == {c for c, label in labels.items() if label != "RESTRICTED"}
    assert len(embedded) < store.lexical_stats(settings.tenant).n_chunks


def test_glossary_rewrite_finds_what_only_the_synonym_matches(tmp_path: Path) -> None:
    settings = governed_settings(glossary={"PTO": ("paid leave",)})
    store = ingest(tmp_path, [document("hr", "Paid leave is accrued monthly.",
                                       acl=("group:staff#member",))], settings)
    retriever = HybridRetriever.from_settings(store, settings)
    authz = context(store, settings, "user:alice")
    hits = retriever.search(authz, "PTO", limit=5)
    assert [h.doc_source_id for h in hits] == ["hr"]
    assert hits[0].queries == (1,)
    assert HybridRetriever.from_settings(store, governed_settings()).search(
        authz, "PTO", limit=5) == []


def test_hybrid_hits_pass_through_the_sire_gate(tmp_path: Path) -> None:
    settings = governed_settings()
    store, retriever = build(tmp_path, settings)
    authz = context(store, settings, "user:carol")
    hits = retriever.search(authz, "hotel travel", limit=5)
    gated = sire_gate(hits, store.active_sire(settings.tenant, [h.chunk.version_id for h in hits]))
    assert gated.kept == () and {d.reason for d in gated.dropped} == {"NO_ACTIVE_SIRE"}
