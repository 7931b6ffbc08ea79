"""Filtered vector search on pgvector: exact top-k when the caller may read 1% of the rows."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from affidavit.config.settings import StoreSettings
from affidavit.errors import StoreError
from affidavit.records import AuthzContext
from affidavit.store import open_store
from affidavit.store.postgres.store import PostgresStore
from affidavit.store.postgres.vectors import hnsw_index_name
from tests.pg_fixture import PgCluster
from tests.postgres.conftest import make_bundle

pytestmark = pytest.mark.postgres

T = "tenant-a"
DIM = 32
VERSIONS, CHUNKS_PER_VERSION = 100, 50  # 5,000 chunks
READABLE_VERSION = 37  # its 50 chunks are 1% of the rows
READER = AuthzContext(T, "user:r", frozenset({"group:readers#member"}),
                      frozenset({"INTERNAL"}), "pv")


@pytest.fixture(scope="module")
def corpus(pg_cluster: PgCluster) -> Iterator[tuple[str, dict[str, np.ndarray]]]:
    """5,000 chunks with random vectors; the reader may read the 50 of one version."""
    dsn = pg_cluster.new_database("vectors")
    store = PostgresStore(dsn)
    rng = np.random.default_rng(20260101)
    vectors: dict[str, np.ndarray] = {}
    for v in range(VERSIONS):
        acl = ("group:readers#member",) if v == READABLE_VERSION else ("group:others#member",)
        bundle = make_bundle(T, f"n{v}", f"v{v:03d}", CHUNKS_PER_VERSION, acl=acl)
        store.commit_version(bundle)
        for chunk in bundle.chunks:
            vectors[chunk.chunk_id] = rng.standard_normal(DIM).astype(np.float32)
    assert store.put_vectors(T, "model-a", vectors) == len(vectors)
    store.close()
    yield dsn, vectors


def readable_ids(vectors: dict[str, np.ndarray]) -> list[str]:
    bundle = make_bundle(T, f"n{READABLE_VERSION}", f"v{READABLE_VERSION:03d}",
                         CHUNKS_PER_VERSION)
    return sorted(c.chunk_id for c in bundle.chunks)


def brute_force(vectors: dict[str, np.ndarray], ids: list[str], query: np.ndarray,
                k: int) -> list[str]:
    matrix = np.vstack([vectors[i] for i in ids]).astype(np.float64)
    scores = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    return [ids[i] for i in order[:k]]


def test_the_hnsw_index_was_built_for_the_model(corpus: tuple) -> None:
    dsn, _ = corpus
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                           (hnsw_index_name("model-a", DIM),)).fetchone()
    assert row == (True,)


def test_recall_at_10_is_exact_when_one_percent_is_readable(corpus: tuple) -> None:
    dsn, vectors = corpus
    ids = readable_ids(vectors)
    store = PostgresStore(dsn)
    rng = np.random.default_rng(7)
    unreadable_nearest = 0
    try:
        for _ in range(20):
            query = rng.standard_normal(DIM)
            hits = store.vector_search(READER, "model-a", query.tolist(), limit=10)
            assert [h.chunk_id for h in hits] == brute_force(vectors, ids, query, 10)
            assert all(h.exact for h in hits)
            expected = brute_force(vectors, ids, query, 1)[0]
            assert hits[0].score == pytest.approx(
                float(vectors[expected] @ query / (np.linalg.norm(vectors[expected])
                                                   * np.linalg.norm(query))), abs=1e-5)
            global_top = brute_force(vectors, sorted(vectors), query, 10)
            unreadable_nearest += not set(global_top) & set(ids)
    finally:
        store.close()
    # A top-10 taken first and filtered after would have returned nothing for most queries.
    assert unreadable_nearest >= 15


def test_the_index_path_keeps_the_filter_inside_the_scan(corpus: tuple) -> None:
    dsn, vectors = corpus
    ids = set(readable_ids(vectors))
    store = PostgresStore(dsn, exact_vector_threshold=0)  # always the HNSW path
    try:
        query = np.random.default_rng(11).standard_normal(DIM)
        hits = store.vector_search(READER, "model-a", query.tolist(), limit=10)
    finally:
        store.close()
    assert len(hits) == 10  # the iterative scan went on until ten readable rows were found
    assert {h.chunk_id for h in hits} <= ids
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert not any(h.exact for h in hits)  # an HNSW walk says it may not be the top-k


def test_a_walk_stopped_short_of_the_limit_gives_way_to_the_exact_scan(
        corpus: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    dsn, vectors = corpus
    # Ten candidates and no scan beyond them: at 1% readable, fewer than ten readable rows.
    monkeypatch.setattr("affidavit.store.postgres.vectors.EF_SEARCH_MAX", 10)
    store = PostgresStore(dsn, exact_vector_threshold=0)
    store.max_scan_tuples = 1
    try:
        plan = store.vector_plan(READER, limit=10)
        query = np.random.default_rng(13).standard_normal(DIM)
        hits = store.vector_search(READER, "model-a", query.tolist(), limit=10)
    finally:
        store.close()
    assert (plan.exact, plan.max_scan_tuples) == (False, 1)
    assert [h.chunk_id for h in hits] == brute_force(vectors, readable_ids(vectors), query, 10)
    assert all(h.exact for h in hits)


def test_the_store_settings_choose_the_plan(corpus: tuple) -> None:
    # [store] exact_vector_threshold and hnsw_ef_search reach the store open_store opens.
    dsn, vectors = corpus
    walk = open_store(dsn, settings=StoreSettings(exact_vector_threshold=0, hnsw_ef_search=7))
    scan = open_store(dsn, settings=StoreSettings())
    query = np.random.default_rng(21).standard_normal(DIM)
    try:
        assert isinstance(walk, PostgresStore) and isinstance(scan, PostgresStore)
        walked, scanned = walk.vector_plan(READER, limit=5), scan.vector_plan(READER, limit=5)
        hits = walk.vector_search(READER, "model-a", query.tolist(), limit=5)
    finally:
        walk.close()
        scan.close()
    # 1% readable: the candidate list is the setting divided by the fraction
    assert (walked.exact, walked.ef_search) == (False, 700)
    assert scanned.exact
    assert {h.chunk_id for h in hits} <= set(readable_ids(vectors))


def test_the_plan_counts_what_the_caller_may_read(corpus: tuple) -> None:
    dsn, _ = corpus
    store = PostgresStore(dsn)
    try:
        plan = store.vector_plan(READER, limit=10)
    finally:
        store.close()
    assert plan.exact
    assert plan.readable_fraction == pytest.approx(CHUNKS_PER_VERSION
                                                   / (VERSIONS * CHUNKS_PER_VERSION))


def test_nobody_reads_anything_without_tokens_or_labels(corpus: tuple) -> None:
    dsn, _ = corpus
    store = PostgresStore(dsn)
    try:
        nobody = AuthzContext(T, "user:n", frozenset(), frozenset({"INTERNAL"}), "pv")
        assert store.vector_search(nobody, "model-a", [1.0] * DIM, limit=10) == []
        other_tenant = AuthzContext("tenant-b", "user:r", READER.tokens,
                                    READER.granted_labels, "pv")
        assert store.vector_search(other_tenant, "model-a", [1.0] * DIM, limit=10) == []
    finally:
        store.close()


def test_a_model_keeps_one_dimension(pg_store: PostgresStore) -> None:
    bundle = make_bundle(T, "n", "v", 2)
    pg_store.commit_version(bundle)
    first, second = (c.chunk_id for c in bundle.chunks)
    pg_store.put_vectors(T, "m", {first: [1.0, 0.0]})
    with pytest.raises(StoreError, match="dimension"):
        pg_store.put_vectors(T, "m", {second: [1.0, 0.0, 0.0]})
    reader = AuthzContext(T, "u", frozenset({"group:staff#member"}), frozenset({"INTERNAL"}),
                          "pv")
    with pytest.raises(StoreError, match="dimensions"):
        pg_store.vector_search(reader, "m", [1.0, 0.0, 0.0], limit=1)
    with pytest.raises(StoreError, match="finite"):
        pg_store.put_vectors(T, "m", {second: [float("nan"), 0.0]})
