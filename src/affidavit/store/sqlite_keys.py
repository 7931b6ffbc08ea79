"""SQLite table of service API keys: salted hashes, never the keys.

A mixin of :class:`~affidavit.store.sqlite.SQLiteStore`; it uses the store's transaction
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
from affidavit.store.base import ApiKeyRecord
from affidavit.store.sqlite_policy import append_event

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
    # revocation is in the trail, authenticates nobody (affidavit.service.keys).
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


def created(record: ApiKeyRecord) -> dict[str, object]:
    """An ``api_key.create`` event's ``after``: never the secret or its hash."""
    return {"key_id": record.key_id, "principal": record.principal, "role": record.role,
            "expires_at": record.expires_at}


def revoked(key_id: str, principal: str, role: str,
            at: str) -> tuple[dict[str, object], dict[str, object]]:
    """An ``api_key.revoke`` event's ``before`` and ``after``."""
    described: dict[str, object] = {"key_id": key_id, "principal": principal, "role": role}
    return {**described, "revoked_at": None}, {**described, "revoked_at": at}


def api_key_row(record: ApiKeyRecord) -> tuple[object, ...]:
    """The stored columns of ``record``, in ``_COLUMNS`` order (shared with PostgreSQL)."""
    return (record.key_id, record.principal, record.role, record.salt, record.secret_hash,
            record.created_at, record.expires_at, record.revoked_at)


def api_key_record(row: Sequence[object]) -> ApiKeyRecord:
    """The record of one row read in ``_COLUMNS`` order."""
    return ApiKeyRecord(
        key_id=str(row[0]), principal=str(row[1]), role=str(row[2]), salt=str(row[3]),
        secret_hash=str(row[4]), created_at=str(row[5]),
        expires_at=None if row[6] is None else str(row[6]),
        revoked_at=None if row[7] is None else str(row[7]))
