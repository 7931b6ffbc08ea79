"""The exact vector scan finds vectors by the caller's readable versions (migration 18).

The version a vector names is a way in, never the check: each candidate is admitted by its
own (chunk, version) row, head, of a granted label and of the pinned label epoch. These
tests try to get an unreadable vector through that way in (a forged version, a version
left behind by an edit, a stale label epoch, restricted neighbours), and check that every
way of writing vectors names the head version, so nothing readable is missed either.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import psycopg
import pytest

from affidavit.records import AuthzContext
from affidavit.store import VersionBundle
from affidavit.store.postgres.bulk import bulk_commit, bulk_put_vectors
from affidavit.store.postgres.store import PostgresStore
from tests.pg_fixture import PgCluster
from tests.postgres.conftest import edited_keeping_chunks, make_bundle

pytestmark = pytest.mark.postgres

T = "tenant-vv"
DIM = 8
MODEL = "model-v"
VERSIONS, CHUNKS = 12, 60
NARROW_VERSION, SECRET_VERSION, OTHER_VERSION = 3, 4, 7


def tokens(*groups: int) -> frozenset[str]:
    return frozenset(f"group:g{g}#member" for g in groups)


NARROW = AuthzContext(T, "user:narrow", tokens(NARROW_VERSION), frozenset({"INTERNAL"}), "pv")


def corpus() -> list[VersionBundle]:
    """Version 4 carries the narrow reader's token but is RESTRICTED."""
    out = []
    for v in range(VERSIONS):
        group = NARROW_VERSION if v == SECRET_VERSION else v
        label = "RESTRICTED" if v == SECRET_VERSION else "INTERNAL"
        out.append(make_bundle(T, f"n{v}", f"v{v:03d}", CHUNKS, label=label,
                               acl=(f"group:g{group}#member",)))
    return out


def vectors_of(bundles: list[VersionBundle], seed: int = 5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {c.chunk_id: rng.standard_normal(DIM).astype(np.float32)
            for b in bundles for c in b.chunks}


def brute_force(vectors: dict[str, np.ndarray], ids: list[str], query: np.ndarray,
                k: int) -> list[str]:
    ids = sorted(ids)
    matrix = np.vstack([vectors[i] for i in ids]).astype(np.float64)
    scores = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    return [ids[i] for i in order[:k]]


def search(store: PostgresStore, authz: AuthzContext, query: np.ndarray,
           limit: int = 10) -> list[str]:
    hits = store.vector_search(authz, MODEL, query.tolist(), limit=limit)
    assert all(h.exact for h in hits)
    return [h.chunk_id for h in hits]


def ids_of(bundle: VersionBundle) -> list[str]:
    return sorted(c.chunk_id for c in bundle.chunks)


@pytest.fixture(scope="module")
def loaded(pg_cluster: PgCluster) -> Iterator[tuple[str, dict[str, np.ndarray]]]:
    dsn = pg_cluster.new_database("vversions")
    store = PostgresStore(dsn)
    bundles = corpus()
    for bundle in bundles:
        store.commit_version(bundle)
    vectors = vectors_of(bundles)
    store.put_vectors(T, MODEL, vectors)
    store.close()
    yield dsn, vectors


def test_every_vector_names_its_chunks_head_version(loaded: tuple) -> None:
    dsn, _ = loaded
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT v.version_id, c.version_id FROM vectors v JOIN chunks c "
            "ON c.tenant_id = v.tenant_id AND c.chunk_id = v.chunk_id AND c.is_head").fetchall()
    assert len(rows) == VERSIONS * CHUNKS
    assert all(named == head for named, head in rows)


def test_restricted_neighbours_in_a_readable_version_are_passed_over(
        loaded: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """The query sits among the RESTRICTED chunks of a version the narrow reader's token
    names: the nearest candidates all fail the check, so later batches (and, with fewer
    rounds, the scan that checks every row) must still give the exact top-k."""
    dsn, vectors = loaded
    secret = ids_of(corpus()[SECRET_VERSION])
    query = np.mean([vectors[i] for i in secret[:3]], axis=0)
    expected = brute_force(vectors, ids_of(corpus()[NARROW_VERSION]), query, 10)
    nearest_overall = brute_force(vectors, list(vectors), query, 40)
    assert sum(i in set(secret) for i in nearest_overall) >= 3  # the secret is in the way
    store = PostgresStore(dsn)
    try:
        for rounds in (2, 1, 0):
            monkeypatch.setattr("affidavit.store.postgres.vectors.EXACT_ROUNDS", rounds)
            assert search(store, NARROW, query) == expected, rounds
        # More than there is: every readable chunk, none of the secret ones.
        monkeypatch.setattr("affidavit.store.postgres.vectors.EXACT_ROUNDS", 2)
        assert sorted(search(store, NARROW, query, limit=1000)) == ids_of(
            corpus()[NARROW_VERSION])
    finally:
        store.close()


def test_a_vector_forged_to_name_a_readable_version_admits_nothing(
        pg_cluster: PgCluster) -> None:
    """Were a vector's version wrong (here forged to name the narrow reader's version), the
    (chunk, version) row it names must still be head and readable: it is not."""
    dsn = pg_cluster.new_database("vforged")
    store = PostgresStore(dsn)
    try:
        bundles = corpus()
        for bundle in bundles:
            store.commit_version(bundle)
        vectors = vectors_of(bundles)
        store.put_vectors(T, MODEL, vectors)
        forged = ids_of(bundles[SECRET_VERSION]) + ids_of(bundles[OTHER_VERSION])
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("UPDATE vectors SET version_id = 'v003' WHERE chunk_id = ANY(%s)",
                         (forged,))
        query = vectors[ids_of(bundles[OTHER_VERSION])[0]]
        found = search(store, NARROW, query, limit=1000)
        assert sorted(found) == ids_of(bundles[NARROW_VERSION])
    finally:
        store.close()


def test_an_unchanged_chunks_vector_follows_the_new_heads_acl(pg_cluster: PgCluster) -> None:
    """An edit keeps an unchanged chunk's id and its vector; the vector then names the new
    head version, whose ACL decides: the old version's readers lose it, the new ones find
    it (a vector left naming the old version would be missed by them)."""
    store = PostgresStore(pg_cluster.new_database("vreacl"))
    try:
        first = make_bundle(T, "doc", "v-old", 30, acl=("group:g3#member",))
        store.commit_version(first)
        vectors = vectors_of([first], seed=9)
        store.put_vectors(T, MODEL, vectors)
        store.commit_version(edited_keeping_chunks(first, "v-new", ("group:g5#member",)))
        old_reader = AuthzContext(T, "user:old", tokens(3), frozenset({"INTERNAL"}), "pv")
        new_reader = AuthzContext(T, "user:new", tokens(5), frozenset({"INTERNAL"}), "pv")
        query = np.ones(DIM, dtype=np.float32)
        assert search(store, old_reader, query, limit=100) == []
        assert search(store, new_reader, query, limit=100) == brute_force(
            vectors, list(vectors), query, 100)
    finally:
        store.close()


def test_only_chunks_of_the_pinned_label_epoch_are_admitted(loaded: tuple) -> None:
    dsn, vectors = loaded
    store = PostgresStore(dsn)
    query = np.arange(DIM, dtype=np.float32)
    try:
        stale = replace(NARROW, label_epoch="epoch-not-the-chunks")
        current = replace(NARROW, label_epoch="")  # the epoch the bundles were written under
        assert search(store, stale, query) == []
        assert search(store, current, query) == brute_force(
            vectors, ids_of(corpus()[NARROW_VERSION]), query, 10)
    finally:
        store.close()


def test_a_version_reached_by_two_tokens_is_scored_once(pg_cluster: PgCluster) -> None:
    both = AuthzContext(T, "user:both", tokens(1, 2), frozenset({"INTERNAL"}), "pv")
    shared = make_bundle(T, "shared", "v-two", 20, acl=("group:g1#member", "group:g2#member"))
    store = PostgresStore(pg_cluster.new_database("vtwo"))
    try:
        bundles = corpus()
        for bundle in [*bundles, shared]:
            store.commit_version(bundle)
        vectors = vectors_of(bundles)
        store.put_vectors(T, MODEL, vectors)
        extra = vectors_of([shared], seed=11)
        store.put_vectors(T, MODEL, extra)
        query = np.ones(DIM, dtype=np.float32)
        readable = ids_of(corpus()[1]) + ids_of(corpus()[2]) + ids_of(shared)
        found = search(store, both, query, limit=1000)
        assert len(found) == len(set(found)) == len(readable)
        assert found == brute_force({**vectors, **extra}, readable, query, 1000)
    finally:
        store.close()


def test_the_bulk_path_names_the_head_version_too(pg_cluster: PgCluster) -> None:
    dsn = pg_cluster.new_database("vbulk")
    store = PostgresStore(dsn)
    try:
        bundles = corpus()
        bulk_commit(store, bundles)
        vectors = vectors_of(bundles)
        ids = sorted(vectors)
        bulk_put_vectors(store, T, MODEL, ids, np.vstack([vectors[i] for i in ids]))
        with psycopg.connect(dsn) as conn:
            unnamed = conn.execute("SELECT count(*) FROM vectors v JOIN chunks c ON "
                                   "c.chunk_id = v.chunk_id AND c.is_head "
                                   "WHERE v.version_id IS DISTINCT FROM c.version_id"
                                   ).fetchone()[0]
        assert unnamed == 0
        query = np.ones(DIM, dtype=np.float32)
        assert search(store, NARROW, query) == brute_force(
            vectors, ids_of(bundles[NARROW_VERSION]), query, 10)
    finally:
        store.close()


def test_the_plan_estimates_from_versions_and_walks_above_the_threshold(
        loaded: tuple) -> None:
    dsn, _ = loaded
    store = PostgresStore(dsn, exact_vector_threshold=CHUNKS * 2)
    try:
        narrow = store.vector_plan(NARROW, limit=10)  # two versions' worth of chunks
        wide = store.vector_plan(replace(NARROW, tokens=tokens(*range(VERSIONS))), limit=10)
    finally:
        store.close()
    assert narrow.exact and narrow.readable_fraction == pytest.approx(2 / VERSIONS)
    assert not wide.exact


def test_vectors_are_written_after_any_head_move_in_progress(loaded: tuple) -> None:
    """Vector writes take the corpus lock head moves hold: a vector written while a move
    is under way would name the head version from before it, and the move's renaming
    would not see the uncommitted row."""
    import threading

    dsn, vectors = loaded
    store = PostgresStore(dsn)
    done = threading.Event()
    chunk = ids_of(corpus()[NARROW_VERSION])[0]
    try:
        with psycopg.connect(dsn) as holder:
            holder.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                           (f"affidavit:corpus:{T}",))
            writer = threading.Thread(target=lambda: (
                store.put_vectors(T, MODEL, {chunk: vectors[chunk].tolist()}), done.set()))
            writer.start()
            assert not done.wait(0.5)  # waiting for the move in progress
            holder.rollback()
        writer.join(10)
        assert done.is_set()
    finally:
        store.close()
