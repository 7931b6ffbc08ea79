"""SQLite table of policy events: the append-only, hash-chained audit trail of every change
to a tenant's policy (:mod:`affidavit.audit`).

A mixin of :class:`~affidavit.store.sqlite.store.SQLiteStore`; triggers refuse every UPDATE and
DELETE of ``policy_events``, and the chain is extended inside one write transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager

from affidavit.audit.chain import GENESIS_HASH, event_hash
from affidavit.errors import StoreError
from affidavit.store.protocol import PolicyEvent
from affidavit.store.rows import policy_event

_COLUMNS = "seq, kind, actor, at, before_json, after_json, prev_hash, event_hash"


class PolicyEventTables:
    """Append and read one tenant's policy events."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def _ensure_tenant(self, conn: sqlite3.Connection, tenant: str) -> None:
        raise NotImplementedError

    def append_policy_event(self, tenant: str, *, kind: str, actor: str, at: str,
                            before_json: str, after_json: str) -> PolicyEvent:
        try:
            with self._write() as conn:
                self._ensure_tenant(conn, tenant)
                return append_event(conn, tenant, kind=kind, actor=actor, at=at,
                                    before_json=before_json, after_json=after_json)
        except sqlite3.Error as exc:
            raise StoreError(f"policy event append failed: {exc}") from exc

    def iter_policy_events(self, tenant: str, *, after_seq: int = 0) -> Iterator[PolicyEvent]:
        rows = self._read(f"SELECT {_COLUMNS} FROM policy_events WHERE tenant_id = ? "
                          "AND seq > ? ORDER BY seq", (tenant, after_seq))
        for row in rows:
            yield policy_event(row)

    def policy_head(self, tenant: str) -> tuple[int, str]:
        rows = self._read("SELECT seq, event_hash FROM policy_events WHERE tenant_id = ? "
                          "ORDER BY seq DESC LIMIT 1", (tenant,))
        return (int(str(rows[0][0])), str(rows[0][1])) if rows else (0, GENESIS_HASH)


def append_event(conn: sqlite3.Connection, tenant: str, *, kind: str, actor: str, at: str,
                 before_json: str, after_json: str) -> PolicyEvent:
    """Extend ``tenant``'s chain inside the caller's write transaction, so that a change to
    a policy table and its event commit together or not at all."""
    row = conn.execute("SELECT seq, event_hash FROM policy_events WHERE "
                       "tenant_id = ? ORDER BY seq DESC LIMIT 1", (tenant,)).fetchone()
    seq, prev = (int(row[0]) + 1, str(row[1])) if row else (1, GENESIS_HASH)
    digest = event_hash(tenant=tenant, seq=seq, kind=kind, actor=actor, at=at,
                        before_json=before_json, after_json=after_json, prev_hash=prev)
    event = PolicyEvent(seq, kind, actor, at, before_json, after_json, prev, digest)
    conn.execute(f"INSERT INTO policy_events (tenant_id, {_COLUMNS}) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (tenant, *_row(event)))
    return event


def _row(event: PolicyEvent) -> tuple[object, ...]:
    return (event.seq, event.kind, event.actor, event.at, event.before_json, event.after_json,
            event.prev_hash, event.event_hash)
