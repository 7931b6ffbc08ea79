"""SQLite table of service API keys: salted hashes, never the keys.

A mixin of :class:`~affidavit.store.sqlite.store.SQLiteStore`; it uses the store's transaction
helpers and touches only ``api_keys``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager

from affidavit.audit.events import (
    API_KEY_CREATE,
    API_KEY_REVOKE,
    LIBRARY_ACTOR,
    event_json,
    event_time,
)
from affidavit.store.protocol import ApiKeyRecord
from affidavit.store.rows import api_key_record, api_key_row, created, revoked
from affidavit.store.sqlite.policy import append_event

_COLUMNS = ("key_id, principal, role, salt, secret_hash, created_at, expires_at, revoked_at")


class ApiKeyTables:
    """Create, find, list and revoke API keys of one tenant."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def _ensure_tenant(self, conn: sqlite3.Connection, tenant: str) -> None:
        raise NotImplementedError

    # A key and its policy event commit together; a key no event created, or one whose
    # revocation is in the trail, authenticates nobody (affidavit.authz.keys).
    def add_api_key(self, tenant: str, record: ApiKeyRecord, *,
                    actor: str = LIBRARY_ACTOR) -> None:
        with self._write() as conn:
            self._ensure_tenant(conn, tenant)
            conn.execute(f"INSERT INTO api_keys (tenant_id, {_COLUMNS}) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (tenant, *api_key_row(record)))
            append_event(conn, tenant, kind=API_KEY_CREATE, actor=actor, at=event_time(),
                         before_json=event_json(None), after_json=event_json(created(record)))

    def get_api_key(self, tenant: str, key_id: str) -> ApiKeyRecord | None:
        rows = self._read(f"SELECT {_COLUMNS} FROM api_keys WHERE tenant_id = ? "
                          "AND key_id = ?", (tenant, key_id))
        return api_key_record(rows[0]) if rows else None

    def list_api_keys(self, tenant: str) -> list[ApiKeyRecord]:
        rows = self._read(f"SELECT {_COLUMNS} FROM api_keys WHERE tenant_id = ? "
                          "ORDER BY created_at, key_id", (tenant,))
        return [api_key_record(r) for r in rows]

    def revoke_api_key(self, tenant: str, key_id: str, *, at: str,
                       actor: str = LIBRARY_ACTOR) -> bool:
        with self._write() as conn:
            row = conn.execute("SELECT principal, role FROM api_keys WHERE tenant_id = ? "
                               "AND key_id = ?", (tenant, key_id)).fetchone()
            cur = conn.execute("UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? "
                               "AND key_id = ? AND revoked_at IS NULL", (at, tenant, key_id))
            if cur.rowcount > 0:
                before, after = revoked(key_id, str(row[0]), str(row[1]), at)
                append_event(conn, tenant, kind=API_KEY_REVOKE, actor=actor, at=event_time(),
                             before_json=event_json(before), after_json=event_json(after))
            return cur.rowcount > 0
