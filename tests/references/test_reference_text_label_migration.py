"""A reference stored before its text had a label of its own (SQLite migration 23,
PostgreSQL 22) keeps its text under its classification, which already included that text's
label: shown to a reader granted it, withheld from one who is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.records import REASON_WITHHELD
from affidavit.store import SQLiteStore
from affidavit.store.postgres.migrations import POSTGRES_MIGRATIONS
from affidavit.store.sqlite.migrations import SQLITE_MIGRATIONS
from tests.pg_fixture import PgCluster

T = "default"
COLUMNS = ("tenant_id, ref_id, kind, source_type, source_id, target_id, target_chunk_id, "
           "location_type, location_detail, label, reason, classification, created_by, "
           "created_at")
ROW = (T, "ref-old", "CrossReference", "document", "a", "b", None, None, "{}", "",
       "ask pilot.jones@example.com", "PII", "user:x", "2026-01-01T00:00:00+00:00")


def test_a_sqlite_reference_stored_before_migration_23_keeps_its_text_under_its_label(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    monkeypatch.setattr("affidavit.store.sqlite.store.SQLITE_MIGRATIONS",
                        tuple(m for m in SQLITE_MIGRATIONS if m.version != 23))
    old = SQLiteStore(path)
    try:
        old.ensure_tenant(T)
        with old._write() as conn:
            conn.execute(f"INSERT INTO refs ({COLUMNS}) VALUES ({', '.join('?' * 14)})", ROW)
    finally:
        old.close()
    monkeypatch.setattr("affidavit.store.sqlite.store.SQLITE_MIGRATIONS", SQLITE_MIGRATIONS)
    store = SQLiteStore(path)
    try:
        (stored,) = store.references_touching(T, ["b"], direction="in", labels={"PII"},
                                              limit=10)
        assert stored.text_label == "PII"
        assert stored.shown_to({"PII"}).reason == ROW[10]
        assert stored.shown_to({"INTERNAL"}).reason == REASON_WITHHELD
    finally:
        store.close()


@pytest.mark.postgres
def test_a_postgres_reference_stored_before_migration_22_keeps_its_text_under_its_label(
        pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.store.postgres.base import ensure_tenant_rows
    from affidavit.store.postgres.store import PostgresStore

    pg_cluster.admin('CREATE DATABASE "refs_before_22"')
    dsn = pg_cluster.dsn("refs_before_22")
    monkeypatch.setattr("affidavit.store.postgres.setup.POSTGRES_MIGRATIONS",
                        tuple(m for m in POSTGRES_MIGRATIONS if m.version != 22))
    old = PostgresStore(dsn)
    try:
        with old.transaction(T) as conn:
            ensure_tenant_rows(conn, T)
            conn.execute(f"INSERT INTO refs ({COLUMNS}) VALUES ({', '.join(['%s'] * 14)})",
                         ROW)
    finally:
        old.close()
    monkeypatch.setattr("affidavit.store.postgres.setup.POSTGRES_MIGRATIONS",
                        POSTGRES_MIGRATIONS)
    store = PostgresStore(dsn)
    try:
        (stored,) = store.references_touching(T, ["b"], direction="in", labels={"PII"},
                                              limit=10)
        assert stored.text_label == "PII"
        assert stored.shown_to({"PII"}).reason == ROW[10]
        assert stored.shown_to({"INTERNAL"}).reason == REASON_WITHHELD
    finally:
        store.close()
