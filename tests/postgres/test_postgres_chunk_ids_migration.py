"""A PostgreSQL database written before migration 14 (chunk rows keyed by id alone) migrates
with its rows and ids, and an edit after it shares the ids of unchanged chunks."""

from __future__ import annotations

import pytest

from affidavit.store.postgres.migrations import POSTGRES_MIGRATIONS
from tests.pg_fixture import PgCluster
from tests.store.test_store_chunk_ids_across_edits import (
    EDITED,
    SECTIONS,
    TENANT,
    ingest,
    lexical_ids,
    port,
)

pytestmark = pytest.mark.postgres


def test_a_database_written_before_migration_14_migrates_and_edits(
        pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.store.postgres.store import PostgresStore

    pg_cluster.admin('CREATE DATABASE "chunk_ids_before_14"')
    dsn = pg_cluster.dsn("chunk_ids_before_14")
    # The store as it was before: the same code, every migration but 14.
    monkeypatch.setattr("affidavit.store.postgres.setup.POSTGRES_MIGRATIONS",
                        tuple(m for m in POSTGRES_MIGRATIONS if m.version != 14))
    old_store = PostgresStore(dsn)
    try:
        assert old_store.schema_version() != 14
        before = ingest(old_store, port(SECTIONS))
        (old_head,) = old_store.heads(TENANT)
    finally:
        old_store.close()
    monkeypatch.setattr("affidavit.store.postgres.setup.POSTGRES_MIGRATIONS",
                        POSTGRES_MIGRATIONS)

    store = PostgresStore(dsn)
    try:
        assert store.version_chunks(TENANT, old_head.version_id) == before
        after = ingest(store, port(EDITED))  # refused by the old key: one id, two versions
        assert after[0].chunk_id == before[0].chunk_id
        assert store.version_chunks(TENANT, old_head.version_id) == before
        assert lexical_ids(store, "user:anyone", "yard") == [after[0].chunk_id]
        assert lexical_ids(store, "user:anyone", "customs") == []
    finally:
        store.close()
