"""A PostgreSQL database written before migration 17 (postings without their version)
migrates: every posting of a head chunk gets its head version, a posting of no head chunk
goes, search finds what it found before on both plans, and the owner's row-level security
is forced again. The owner here is an ordinary role, not a superuser, so the migration's
update runs under the same row-level security a production owner has."""

from __future__ import annotations

import psycopg
import pytest

from affidavit.records import AuthzContext
from tests.pg_fixture import PgCluster
from tests.postgres.conftest import (
    database_owned_by,
    make_bundle,
    named_and_head_versions,
    row_security_forced,
    run_script,
)

pytestmark = pytest.mark.postgres

T = "tenant-mig17"
READER = AuthzContext(T, "user:r", frozenset({"group:g1#member"}), frozenset({"INTERNAL"}),
                      "pv")
UNDO_17 = """
ALTER TABLE postings DROP CONSTRAINT postings_pkey;
ALTER TABLE postings DROP COLUMN version_id;
ALTER TABLE postings ADD PRIMARY KEY (tenant_id, term, chunk_id) INCLUDE (tf);
DROP INDEX postings_term;
DELETE FROM schema_migrations WHERE version = 17;
"""


def search(store: object, small: int) -> list[tuple[str, float]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("affidavit.store.postgres.lexical.SMALL_POSTINGS", small)
        found = store.lexical_search(READER, {"alpha": 1.0, "beta": 2.0},  # type: ignore[attr-defined]
                                     k1=1.2, b=0.75, avg_length=2.0, limit=100)
    return [(h.chunk_id, round(h.score, 9)) for h in found]


def test_a_database_written_before_migration_17_migrates(pg_cluster: PgCluster) -> None:
    from affidavit.store.postgres.store import PostgresStore

    admin_dsn, owner = database_owned_by(pg_cluster, "mig17_owner", "postings_before_17")
    store = PostgresStore(owner)
    try:
        store.commit_version(make_bundle(T, "a", "va1", 12, terms=("alpha", "beta"),
                                         acl=("group:g1#member",)))
        edited = make_bundle(T, "a", "va2", 12, terms=("alpha", "beta"),
                             acl=("group:g1#member",))
        store.commit_version(edited)
        store.commit_version(make_bundle(T, "b", "vb1", 8, terms=("alpha",),
                                         acl=("group:g2#member",)))
        before = {small: search(store, small) for small in (0, 10**9)}
        assert before[0] == before[10**9] and len(before[0]) == 12
    finally:
        store.close()
    run_script(owner, UNDO_17)  # the owner, as before migration 17
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        # A posting whose chunk is no head row serves nothing and goes.
        conn.execute("INSERT INTO postings VALUES (%s, 'alpha', 'no-such-chunk', 1)", (T,))
        assert conn.execute("SELECT count(*) FROM postings").fetchone()[0] == 12 * 2 + 8 + 1

    store = PostgresStore(owner)
    try:
        assert store.schema_version() >= 17
        assert {small: search(store, small) for small in (0, 10**9)} == before
    finally:
        store.close()
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        rows = named_and_head_versions(conn, "postings")
        assert len(rows) == 12 * 2 + 8
        assert all(posting == head for posting, head in rows)
        assert {posting for posting, _ in rows} == {"va2", "vb1"}
        assert row_security_forced(conn, "postings", "chunks") == [("chunks", True),
                                                                  ("postings", True)]
