"""Ingest batches on SQLite: many versions per transaction, each version all or nothing."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from tests.store.test_store_contract import NOW, STAFF, T, bundle

from affidavit.errors import StoreError
from affidavit.store import SQLiteStore


def committed_versions(db: Path) -> set[str]:
    """What any other process sees: committed rows only."""
    with sqlite3.connect(db) as conn:
        return {str(r[0]) for r in conn.execute("SELECT version_id FROM versions")}


def rows_of(db: Path, version: str) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return {table: conn.execute(f"SELECT COUNT(*) FROM {table} WHERE version_id = ?",
                                    (version,)).fetchone()[0]
                for table in ("versions", "chunks", "paragraph_labels", "acl_tokens", "sire")}


def test_a_failed_version_rolls_back_alone_inside_a_batch(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = SQLiteStore(db)
    good = bundle("n1", "v1", [("INTERNAL", "alpha", {"alpha": 1})])
    broken = bundle("n2", "v2", [("INTERNAL", "beta", {"beta": 1}),
                                 ("INTERNAL", "gamma", {"gamma": 1})])
    # Two chunks with one id: the chunk insert fails after the blob and version rows.
    broken = dataclasses.replace(broken, chunks=(broken.chunks[0], broken.chunks[0]))
    later = bundle("n3", "v3", [("INTERNAL", "delta", {"delta": 1})])
    with store.batched():
        store.commit_version(good)
        with pytest.raises(Exception):  # noqa: B017 - whichever error the database raises
            store.commit_version(broken)
        store.commit_version(later)
    assert committed_versions(db) == {"v1", "v3"}
    assert rows_of(db, "v2") == dict.fromkeys(rows_of(db, "v2"), 0)
    assert store.head(T, "n2") is None
    assert store.count_rows(T, "blobs") == 2
    stats = store.lexical_stats(T)
    assert (stats.n_chunks, stats.total_length) == (2, 2)


def test_a_batch_is_invisible_to_others_until_it_commits(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = SQLiteStore(db)
    seen_by_other_thread: list[object] = []
    with store.batched(max_documents=100, max_seconds=60):
        store.commit_version(bundle("n1", "v1", [("INTERNAL", "alpha", {"alpha": 1})]))
        assert store.head(T, "n1") is not None, "the writing thread reads its own batch"
        other = threading.Thread(target=lambda: seen_by_other_thread.append(
            store.get_chunks(STAFF, [c.chunk_id for c in bundle(
                "n1", "v1", [("INTERNAL", "alpha", {})]).chunks])))
        other.start()
        other.join()
        assert seen_by_other_thread == [[]], "another thread sees nothing uncommitted"
        assert committed_versions(db) == set()
    assert committed_versions(db) == {"v1"}
    assert len(store.get_chunks(STAFF, ["v1-c0".ljust(32, "0")])) == 1


def test_a_batch_commits_every_max_documents(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = SQLiteStore(db)
    with store.batched(max_documents=3, max_seconds=60):
        for i in range(7):
            store.commit_version(bundle(f"n{i}", f"v{i}", [("INTERNAL", "x", {"x": 1})]))
            assert len(committed_versions(db)) == 3 * ((i + 1) // 3)
    assert len(committed_versions(db)) == 7


def test_an_idle_batch_commits_within_max_seconds(tmp_path: Path) -> None:
    """A slow fetch between two documents must not hold the write lock."""
    db = tmp_path / "b.db"
    store = SQLiteStore(db)
    with store.batched(max_documents=100, max_seconds=0.2):
        store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))
        deadline = time.monotonic() + 5
        while not committed_versions(db) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert committed_versions(db) == {"v1"}
        store.commit_version(bundle("n2", "v2", [("INTERNAL", "y", {"y": 1})]))
    assert committed_versions(db) == {"v1", "v2"}


def test_a_ledger_record_is_committed_while_a_batch_is_open(tmp_path: Path) -> None:
    """Another thread's ledger append commits on its own connection, not in the batch."""
    db = tmp_path / "b.db"
    store = SQLiteStore(db)
    store.ensure_tenant(T)
    appended: list[object] = []
    with store.batched(max_documents=100, max_seconds=0.3):
        store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))
        writer = threading.Thread(target=lambda: appended.append(store.append_ledger(
            T, record_id="r1", request_id="q1", created_at=NOW, payload="{}")))
        writer.start()
        writer.join(timeout=20)
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM ledger").fetchone()[0] == 1
    assert len(appended) == 1


def test_the_main_connection_writes_synchronously(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    assert store._read("PRAGMA synchronous") == [(2,)], "FULL: a ledger record is on disk"


def test_a_batch_on_an_in_memory_store_is_the_plain_path() -> None:
    store = SQLiteStore(":memory:")
    with store.batched():
        store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))
    assert store.head(T, "n1") is not None
    with pytest.raises(StoreError), store.batched():
        store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))
