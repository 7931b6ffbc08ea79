"""The in-memory governed index scores exactly like the SQL path, filters inside scoring,
and follows the corpus generation."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.retrieval.governed_corpus import (
    PRINCIPALS,
    context,
    document,
    governed_settings,
    ingest,
    synthetic_documents,
)

from affidavit.config.settings import Settings
from affidavit.index import (
    HashEmbeddingBackend,
    MemoryIndex,
    SQLiteSnapshotSource,
    embed_missing,
    idf,
)
from affidavit.ingest.run import Ingestor
from affidavit.records import AuthzContext
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore
from affidavit.text.tokenize import Tokenizer

QUERIES = ["travel hotel receipt", "board merger vote", "revenue income profit forecast",
           "privacy data retention", "the", "unknownword", "audit audit security"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[SQLiteStore, Settings]:
    settings = governed_settings()
    store = ingest(tmp_path_factory.mktemp("memory"), synthetic_documents(60), settings)
    return store, settings


def sql_scores(store: SQLiteStore, settings: Settings, authz: AuthzContext,
               query: str) -> list[tuple[str, float]]:
    terms = sorted(set(Tokenizer.from_settings(settings.lexical).tokenize(query)))
    stats = store.lexical_stats(authz.tenant)
    dfs = store.document_frequencies(authz.tenant, terms)
    term_idf = {t: idf(stats.n_chunks, df) for t, df in dfs.items() if df > 0}
    hits = store.lexical_search(authz, term_idf, k1=1.2, b=0.75, avg_length=stats.avg_length,
                                limit=10_000)
    return [(h.chunk_id, h.score) for h in hits]


@pytest.mark.parametrize("principal", sorted(PRINCIPALS))
@pytest.mark.parametrize("query", QUERIES)
def test_memory_scores_equal_the_sql_path(corpus: tuple[SQLiteStore, Settings], principal: str,
                                          query: str) -> None:
    store, settings = corpus
    authz = context(store, settings, principal)
    memory = MemoryIndex(SQLiteSnapshotSource(store), store)
    terms = Tokenizer.from_settings(settings.lexical).tokenize(query)
    got = memory.lexical_search(authz, terms, k1=1.2, b=0.75, limit=10_000)
    expected = sql_scores(store, settings, authz, query)
    assert [h.chunk_id for h in got] == [cid for cid, _ in expected]
    for hit, (_, score) in zip(got, expected, strict=True):
        assert hit.score == pytest.approx(score, abs=1e-9, rel=0)


@pytest.mark.invariant
@pytest.mark.parametrize("principal", ["user:alice", "user:bob", "user:dave"])
def test_filter_removes_and_never_reorders(corpus: tuple[SQLiteStore, Settings],
                                           principal: str) -> None:
    store, settings = corpus
    memory = MemoryIndex(SQLiteSnapshotSource(store), store)
    everything = context(store, settings, "user:carol")
    authz = context(store, settings, principal)
    permitted = {r.chunk.chunk_id for r in store.get_chunks(
        authz, list(memory.tenant_index(settings.tenant).snapshot.chunk_ids))}
    tokenizer = Tokenizer.from_settings(settings.lexical)
    for query in QUERIES:
        full = memory.lexical_search(everything, tokenizer.tokenize(query), k1=1.2, b=0.75,
                                     limit=10_000)
        for limit in (1, 3, 10_000):
            filtered = memory.lexical_search(authz, tokenizer.tokenize(query), k1=1.2, b=0.75,
                                             limit=limit)
            expected = [h for h in full if h.chunk_id in permitted][:limit]
            assert filtered == expected


def test_vectors_are_searched_over_permitted_rows_only(tmp_path: Path) -> None:
    settings = governed_settings()
    store = ingest(tmp_path, synthetic_documents(40), settings)
    backend = HashEmbeddingBackend(64)
    embed_missing(store, settings.tenant, backend)
    memory = MemoryIndex(SQLiteSnapshotSource(store), store)
    query = backend.embed_texts(["board merger vote"])[0].tolist()
    everything = context(store, settings, "user:carol")
    full = memory.vector_search(everything, backend.model_id, query, limit=10_000)
    assert len(full) == memory.tenant_index(settings.tenant).size
    for principal in ("user:alice", "user:bob", "user:dave"):
        authz = context(store, settings, principal)
        via_store = store.vector_search(authz, backend.model_id, query, limit=10_000)
        permitted = {h.chunk_id for h in via_store}
        got = memory.vector_search(authz, backend.model_id, query, limit=5)
        assert got == [h for h in full if h.chunk_id in permitted][:5]
        assert [h.chunk_id for h in got] == [h.chunk_id for h in via_store[:5]]
        for mine, theirs in zip(got, via_store, strict=False):
            assert mine.score == pytest.approx(theirs.score, abs=1e-6)


def test_a_new_generation_is_seen_by_the_next_search(tmp_path: Path) -> None:
    settings = governed_settings()
    store = ingest(tmp_path, synthetic_documents(8), settings)
    memory = MemoryIndex(SQLiteSnapshotSource(store), store)
    authz = context(store, settings, "user:alice")
    terms = ["zeppelin"]
    assert memory.lexical_search(authz, terms, k1=1.2, b=0.75, limit=5) == []
    before = memory.tenant_index(settings.tenant).generation
    Ingestor(store, settings).run([StaticSource([document(
        "new-1", "A zeppelin policy.", acl=("group:staff#member",))])])
    hits = memory.lexical_search(authz, terms, k1=1.2, b=0.75, limit=5)
    assert len(hits) == 1
    assert memory.tenant_index(settings.tenant).generation > before


def test_a_pinned_search_ranks_and_reads_back_at_one_generation(tmp_path: Path) -> None:
    """Inside ``pinned`` a thread's calls share the index current on entry (the generation
    is read once); a commit in between is seen by the next search, not half-way through."""
    settings = governed_settings()
    store = ingest(tmp_path, synthetic_documents(8), settings)
    memory = MemoryIndex(SQLiteSnapshotSource(store), store)
    authz = context(store, settings, "user:alice")
    reads: list[int] = []
    source = memory.source
    real = source.corpus_generation

    def counted(tenant: str) -> int:
        reads.append(1)
        return real(tenant)

    source.corpus_generation = counted  # type: ignore[method-assign]
    with memory.pinned(settings.tenant) as index:
        Ingestor(store, settings).run([StaticSource([document(
            "new-1", "A zeppelin policy.", acl=("group:staff#member",))])])
        assert memory.lexical_search(authz, ["zeppelin"], k1=1.2, b=0.75, limit=5) == []
        with memory.pinned(settings.tenant) as inner:  # nested: the outer pin holds
            assert inner is index
        assert memory.get_chunks(authz, []) == []
        assert memory.tenant_index(settings.tenant) is index
    assert len(reads) == 1
    hits = memory.lexical_search(authz, ["zeppelin"], k1=1.2, b=0.75, limit=5)
    assert len(hits) == 1 and memory.tenant_index(settings.tenant) is not index


def test_another_tenants_context_sees_nothing(corpus: tuple[SQLiteStore, Settings]) -> None:
    store, settings = corpus
    memory = MemoryIndex(SQLiteSnapshotSource(store), store)
    index = memory.tenant_index(settings.tenant)
    carol = context(store, settings, "user:carol")
    foreign = AuthzContext("other", carol.principal, carol.tokens, carol.granted_labels, "p")
    assert not index.visibility(foreign).any()
    assert memory.lexical_search(foreign, ["travel"], k1=1.2, b=0.75, limit=5) == []
