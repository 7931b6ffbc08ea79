"""A PostgreSQL database written before migration 18 (vectors without their version)
migrates: every vector of a head chunk names its head version, the HNSW graph is built
again from its own definition, search finds what it found before on the exact and the HNSW
paths, and the owner's row-level security is forced again. The owner is an ordinary role,
as in production, so the update runs under the row-level security such an owner has."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from affidavit.records import AuthzContext
from affidavit.store.postgres.store import PostgresStore
from tests.pg_fixture import PgCluster
from tests.postgres.conftest import (
    database_owned_by,
    edited_keeping_chunks,
    make_bundle,
    named_and_head_versions,
    row_security_forced,
    run_script,
)

pytestmark = pytest.mark.postgres

T = "tenant-mig18"
MODEL = "model-m"
READER = AuthzContext(T, "user:r", frozenset({"group:g1#member"}), frozenset({"INTERNAL"}),
                      "pv")
UNDO_18 = """
ALTER TABLE vectors DROP COLUMN version_id;
DELETE FROM schema_migrations WHERE version = 18;
"""
GRAPHS = ("SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
          "WHERE indrelid = 'vectors'::regclass AND pg_get_indexdef(indexrelid) LIKE "
          "'%USING hnsw%' ORDER BY 1")


def search(store: PostgresStore) -> dict[int, list[str]]:
    """The top 15 on the exact path and on the HNSW walk."""
    query = np.linspace(-1.0, 1.0, 16).tolist()
    found = {}
    for threshold in (10**9, 0):
        store.exact_vector_threshold = threshold
        found[threshold] = [h.chunk_id for h in store.vector_search(READER, MODEL, query,
                                                                      limit=15)]
    return found


def test_a_database_written_before_migration_18_migrates(pg_cluster: PgCluster) -> None:
    admin_dsn, owner = database_owned_by(pg_cluster, "mig18_owner", "vectors_before_18")
    rng = np.random.default_rng(18)
    store = PostgresStore(owner)
    try:
        first = make_bundle(T, "a", "va1", 12, acl=("group:g1#member",))
        store.commit_version(first)
        store.put_vectors(T, MODEL, {c.chunk_id: rng.standard_normal(16).tolist()
                                     for c in first.chunks})
        # An edit keeping the chunk ids: the vectors stay and must name "va2".
        edited = edited_keeping_chunks(first, "va2", ("group:g1#member",))
        store.commit_version(edited)
        other = make_bundle(T, "b", "vb1", 8, acl=("group:g2#member",))
        store.commit_version(other)
        store.put_vectors(T, MODEL, {c.chunk_id: rng.standard_normal(16).tolist()
                                     for c in other.chunks})
        before = search(store)
        assert len(before[10**9]) == 12 and sorted(before[0]) == sorted(before[10**9])
    finally:
        store.close()
    with psycopg.connect(owner, autocommit=True) as conn:
        graphs = conn.execute(GRAPHS).fetchall()
        assert len(graphs) == 1
    run_script(owner, UNDO_18)  # the owner, as before migration 18

    store = PostgresStore(owner)
    try:
        assert store.schema_version() >= 18
        assert search(store) == before
    finally:
        store.close()
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        rows = named_and_head_versions(conn, "vectors")
        assert len(rows) == 12 + 8
        assert all(named == head for named, head in rows)
        assert {named for named, _ in rows} == {"va2", "vb1"}
        assert conn.execute(GRAPHS).fetchall() == graphs
        assert row_security_forced(conn, "vectors", "chunks") == [("chunks", True),
                                                                 ("vectors", True)]
