"""The ledger's end is anchored: every stored column is hashed, and a checkpoint signed with
a key kept outside the database catches truncation and rewrite-and-rehash up to it.

Each test tampers with a real database file (SQLite) or a real server (PostgreSQL) the way
someone holding it would: with the append-only triggers switched off.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from tests.conftest import BACKENDS
from tests.pg_fixture import PgCluster

from affidavit.engine.ledger_record import LedgerWriter
from affidavit.errors import LedgerError
from affidavit.ledger.chain import GENESIS_HASH, link_hash, record_hash, verify_chain
from affidavit.ledger.checkpoint import (
    Checkpoint,
    check_signature,
    sign_checkpoint,
    verify_anchored,
)
from affidavit.store import SQLiteStore, Store

T = "acme"
NOW = "2026-01-01T00:00:00+00:00"
COLUMNS = ("record_id", "request_id", "created_at", "payload")


class Tamperer:
    """Raw access to the database file or server, triggers off: what an attacker has."""

    def __init__(self, backend: str, target: str) -> None:
        self.backend, self.target = backend, target

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.backend == "sqlite":
            import sqlite3

            with sqlite3.connect(self.target) as conn:
                conn.execute("DROP TRIGGER IF EXISTS ledger_no_update")
                conn.execute("DROP TRIGGER IF EXISTS ledger_no_delete")
                rows = conn.execute(sql, params).fetchall()
            conn.close()
            return rows
        import psycopg

        with psycopg.connect(self.target) as pg:
            pg.execute("ALTER TABLE ledger DISABLE TRIGGER USER")
            cursor = pg.execute(sql.replace("?", "%s"), params)
            rows = cursor.fetchall() if cursor.description else []
            pg.execute("ALTER TABLE ledger ENABLE TRIGGER USER")
        return [tuple(r) for r in rows]

    def rehash_from(self, seq: int, tenant: str = T) -> None:
        """Recompute every hash from ``seq`` on, as a forger rewriting history would."""
        rows = self.run("SELECT seq, record_id, request_id, created_at, payload, prev_hash "
                        "FROM ledger WHERE tenant_id = ? ORDER BY seq", (tenant,))
        prev = GENESIS_HASH
        for row in rows:
            if int(row[0]) >= seq:
                digest = link_hash(tenant=tenant, seq=int(row[0]), record_id=row[1],
                                   request_id=row[2], created_at=row[3], prev_hash=prev,
                                   payload=row[4])
                self.run("UPDATE ledger SET prev_hash = ?, record_hash = ? "
                         "WHERE tenant_id = ? AND seq = ?", (prev, digest, tenant, row[0]))
                prev = digest
            else:
                prev = self.run("SELECT record_hash FROM ledger WHERE tenant_id = ? AND seq = ?",
                                (tenant, row[0]))[0][0]


@pytest.fixture(params=BACKENDS)
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Tamperer]]:
    """A fresh store of each backend holding five records of tenant ``acme``."""
    store: Store
    if request.param == "sqlite":
        store = SQLiteStore(tmp_path / "ledger.db")
        tamper = Tamperer("sqlite", str(tmp_path / "ledger.db"))
    else:
        cluster: PgCluster = request.getfixturevalue("pg_cluster")
        from affidavit.store.postgres.store import PostgresStore

        dsn = cluster.new_database("ledger")
        store = PostgresStore(dsn)
        tamper = Tamperer("postgres", dsn)
    writer = LedgerWriter(store)
    for i in range(1, 6):
        writer.append(T, f"req-{i}", {"query": f"question {i}", "output_state": "AUTHORIZED"})
    try:
        yield store, tamper
    finally:
        store.close()


def _checkpoint(store: Store, key: Ed25519PrivateKey, tenant: str = T) -> Checkpoint:
    head = verify_chain(store.iter_ledger(tenant), tenant=tenant)
    assert head.ok
    return sign_checkpoint(key, tenant=tenant, seq=head.head_seq, record_hash=head.head_hash,
                           signed_at=NOW)


def _anchored(store: Store, checkpoint: Checkpoint, key: Ed25519PrivateKey) -> Any:
    return verify_anchored(store.iter_ledger(T), tenant=T, checkpoints=[checkpoint],
                           trusted=key.public_key())


KEY = Ed25519PrivateKey.generate()


def test_an_untouched_ledger_verifies_against_its_checkpoint(
        ledger: tuple[Store, Tamperer]) -> None:
    store, _ = ledger
    checkpoint = _checkpoint(store, KEY)
    report = _anchored(store, checkpoint, KEY)
    assert report.ok and report.checked == 5 and checkpoint.seq == 5


def test_new_records_are_written_with_every_column_bound(ledger: tuple[Store, Tamperer]) -> None:
    store, _ = ledger
    entries = list(store.iter_ledger(T))
    assert {e.link_format for e in entries} == {2}
    first = entries[0]
    assert first.record_hash == link_hash(
        tenant=T, seq=1, record_id=first.record_id, request_id=first.request_id,
        created_at=first.created_at, prev_hash=GENESIS_HASH, payload=first.payload)


def test_dropping_the_newest_records_is_detected_against_a_checkpoint(
        ledger: tuple[Store, Tamperer]) -> None:
    store, tamper = ledger
    checkpoint = _checkpoint(store, KEY)
    tamper.run("DELETE FROM ledger WHERE tenant_id = ? AND seq >= 4", (T,))
    assert verify_chain(store.iter_ledger(T), tenant=T).ok, "a chain alone cannot see this"
    report = _anchored(store, checkpoint, KEY)
    assert not report.ok and report.reason is not None and "truncated" in report.reason


@pytest.mark.parametrize("column", COLUMNS)
def test_a_rewrite_with_every_later_hash_recomputed_is_detected_against_a_checkpoint(
        ledger: tuple[Store, Tamperer], column: str) -> None:
    store, tamper = ledger
    checkpoint = _checkpoint(store, KEY)
    forged = '{"query":"forged"}' if column == "payload" else "forged"
    tamper.run(f"UPDATE ledger SET {column} = ? WHERE tenant_id = ? AND seq = 2",
               (forged, T))
    tamper.rehash_from(2)
    assert verify_chain(store.iter_ledger(T), tenant=T).ok, "a chain alone cannot see this"
    report = _anchored(store, checkpoint, KEY)
    assert not report.ok and report.first_bad_seq == 5


@pytest.mark.parametrize("column", [*COLUMNS, "prev_hash", "record_hash", "seq",
                                    "link_format", "tenant_id"])
def test_an_edit_of_any_stored_column_breaks_the_chain(ledger: tuple[Store, Tamperer],
                                                       column: str) -> None:
    store, tamper = ledger
    checkpoint = _checkpoint(store, KEY)
    value: Any = {"seq": 9, "link_format": 1, "payload": '{"query":"forged"}',
                  "prev_hash": "f" * 64, "record_hash": "e" * 64}.get(column, "forged")
    tamper.run(f"UPDATE ledger SET {column} = ? WHERE tenant_id = ? AND seq = 3", (value, T))
    report = verify_chain(store.iter_ledger(T), tenant=T)
    assert not report.ok and report.first_bad_seq is not None and report.first_bad_seq <= 4
    assert not _anchored(store, checkpoint, KEY).ok


def test_a_record_moved_to_another_tenant_does_not_verify_there(
        ledger: tuple[Store, Tamperer]) -> None:
    store, tamper = ledger
    store.ensure_tenant("other")
    tamper.run("UPDATE ledger SET tenant_id = 'other' WHERE tenant_id = ? AND seq = 1", (T,))
    report = verify_chain(store.iter_ledger("other"), tenant="other")
    assert not report.ok and report.first_bad_seq == 1


def test_records_after_the_last_checkpoint_are_covered_by_the_chain_only(
        ledger: tuple[Store, Tamperer]) -> None:
    # What remains open, pinned so that a change of it is noticed: a forger may append
    # after the last checkpoint, and drop what came after it.
    store, tamper = ledger
    checkpoint = _checkpoint(store, KEY)
    LedgerWriter(store).append(T, "req-forged", {"query": "forged"})
    assert _anchored(store, checkpoint, KEY).ok
    tamper.run("DELETE FROM ledger WHERE tenant_id = ? AND seq = 6", (T,))
    assert _anchored(store, checkpoint, KEY).ok


def test_a_checkpoint_signed_by_another_key_fails(ledger: tuple[Store, Tamperer]) -> None:
    store, _ = ledger
    other = Ed25519PrivateKey.generate()
    checkpoint = _checkpoint(store, other)
    report = _anchored(store, checkpoint, KEY)
    assert not report.ok and report.reason is not None and "checkpoint rejected" in report.reason
    assert check_signature(checkpoint, None) is None, "intact, but not by the pinned key"


def test_an_edited_checkpoint_fails_even_without_a_pinned_key(
        ledger: tuple[Store, Tamperer]) -> None:
    store, tamper = ledger
    checkpoint = _checkpoint(store, KEY)
    tamper.run("DELETE FROM ledger WHERE tenant_id = ? AND seq >= 4", (T,))
    lowered = dataclasses.replace(checkpoint, seq=3,
                                  record_hash=verify_chain(store.iter_ledger(T),
                                                           tenant=T).head_hash)
    report = verify_anchored(store.iter_ledger(T), tenant=T, checkpoints=[lowered],
                             trusted=None)
    assert not report.ok and report.reason == "checkpoint rejected: the signature does not verify"


def test_a_checkpoint_of_another_tenant_anchors_nothing(ledger: tuple[Store, Tamperer]) -> None:
    store, _ = ledger
    LedgerWriter(store).append("other", "req-o", {"query": "other"})
    checkpoint = _checkpoint(store, KEY, tenant="other")
    report = verify_anchored(store.iter_ledger(T), tenant=T, checkpoints=[checkpoint],
                             trusted=KEY.public_key())
    assert not report.ok and report.reason is not None and "another tenant" in report.reason


def test_a_malformed_checkpoint_is_refused() -> None:
    with pytest.raises(LedgerError):
        Checkpoint.from_json('{"format": "affidavit.ledger-checkpoint/1", "seq": true}')
    with pytest.raises(LedgerError):
        Checkpoint.from_json("not json")


# --------------------------------------------------------------------------- legacy records


def _legacy_rows(tamper: Tamperer, tenant: str, count: int) -> None:
    """Rows as written before every column was bound (link format 1)."""
    prev = GENESIS_HASH
    for seq in range(1, count + 1):
        payload = (f'{{"created_at":"{NOW}","query":"old {seq}","record_id":"led-old{seq}",'
                   f'"request_id":"req-old{seq}","tenant":"{tenant}"}}')
        digest = record_hash(prev, payload)
        tamper.run("INSERT INTO ledger (tenant_id, seq, record_id, request_id, created_at, "
                   "payload, prev_hash, record_hash, link_format) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
                   (tenant, seq, f"led-old{seq}", f"req-old{seq}", NOW, payload, prev, digest))
        prev = digest


@pytest.fixture(params=BACKENDS)
def legacy(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Tamperer]]:
    """A store whose tenant ``old`` has two legacy records followed by two new ones."""
    store: Store
    if request.param == "sqlite":
        store = SQLiteStore(tmp_path / "legacy.db")
        tamper = Tamperer("sqlite", str(tmp_path / "legacy.db"))
    else:
        cluster: PgCluster = request.getfixturevalue("pg_cluster")
        from affidavit.store.postgres.store import PostgresStore

        dsn = cluster.new_database("legacy")
        store = PostgresStore(dsn)
        tamper = Tamperer("postgres", dsn)
    store.ensure_tenant("old")
    _legacy_rows(tamper, "old", 2)
    for i in (3, 4):
        LedgerWriter(store).append("old", f"req-new{i}", {"query": f"new {i}"})
    try:
        yield store, tamper
    finally:
        store.close()


def test_records_written_before_every_column_was_bound_still_verify(
        legacy: tuple[Store, Tamperer]) -> None:
    store, _ = legacy
    assert [e.link_format for e in store.iter_ledger("old")] == [1, 1, 2, 2]
    report = verify_chain(store.iter_ledger("old"), tenant="old")
    assert report.ok and report.checked == 4


@pytest.mark.parametrize("column", ["record_id", "request_id", "created_at"])
def test_a_legacy_records_columns_are_checked_against_its_hashed_payload(
        legacy: tuple[Store, Tamperer], column: str) -> None:
    store, tamper = legacy
    tamper.run(f"UPDATE ledger SET {column} = 'forged' WHERE tenant_id = 'old' AND seq = 1")
    report = verify_chain(store.iter_ledger("old"), tenant="old")
    assert not report.ok and report.first_bad_seq == 1
    assert report.reason == f"the {column} column differs from the hashed record"


def test_a_new_record_downgraded_to_the_legacy_format_fails(
        legacy: tuple[Store, Tamperer]) -> None:
    store, tamper = legacy
    rows = tamper.run("SELECT prev_hash, payload FROM ledger WHERE tenant_id = 'old' "
                      "AND seq = 4")
    tamper.run("UPDATE ledger SET link_format = 1, record_hash = ? "
               "WHERE tenant_id = 'old' AND seq = 4", (record_hash(rows[0][0], rows[0][1]),))
    report = verify_chain(store.iter_ledger("old"), tenant="old")
    assert not report.ok and report.first_bad_seq == 4
    assert report.reason is not None and "downgrade" in report.reason
