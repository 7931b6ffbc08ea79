"""PostgreSQL table of service API keys: salted hashes, never the keys.

A mixin of :class:`~affidavit.store.postgres.store.PostgresStore`; rows are read and written in
the tenant's row-level-security scope like every other tenant table.
"""

from __future__ import annotations

from affidavit.audit.events import (
    API_KEY_CREATE,
    API_KEY_REVOKE,
    LIBRARY_ACTOR,
    event_json,
    event_time,
)
from affidavit.store.postgres.base import PostgresBase, ensure_tenant_rows, lock_for
from affidavit.store.postgres.policy import append_event
from affidavit.store.protocol import ApiKeyRecord
from affidavit.store.rows import api_key_record, api_key_row, created, revoked

_COLUMNS = ("key_id, principal, role, salt, secret_hash, created_at, expires_at, revoked_at")


class ApiKeyTables(PostgresBase):
    """Create, find, list and revoke API keys of one tenant."""

    # As in SQLite: a key and its policy event commit together.
    def add_api_key(self, tenant: str, record: ApiKeyRecord, *,
                    actor: str = LIBRARY_ACTOR) -> None:
        with self.transaction(tenant) as conn:
            ensure_tenant_rows(conn, tenant)
            lock_for(conn, "policy", tenant)
            conn.execute(f"INSERT INTO api_keys (tenant_id, {_COLUMNS}) "
                         "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                         (tenant, *api_key_row(record)))
            append_event(conn, tenant, kind=API_KEY_CREATE, actor=actor, at=event_time(),
                         before_json=event_json(None), after_json=event_json(created(record)))

    def get_api_key(self, tenant: str, key_id: str) -> ApiKeyRecord | None:
        rows = self._rows(tenant, f"SELECT {_COLUMNS} FROM api_keys WHERE tenant_id = %s "
                                  "AND key_id = %s", (tenant, key_id))
        return api_key_record(rows[0]) if rows else None

    def list_api_keys(self, tenant: str) -> list[ApiKeyRecord]:
        rows = self._rows(tenant, f"SELECT {_COLUMNS} FROM api_keys WHERE tenant_id = %s "
                                  "ORDER BY created_at, key_id", (tenant,))
        return [api_key_record(r) for r in rows]

    def revoke_api_key(self, tenant: str, key_id: str, *, at: str,
                       actor: str = LIBRARY_ACTOR) -> bool:
        with self.transaction(tenant) as conn:
            lock_for(conn, "policy", tenant)
            cur = conn.execute("UPDATE api_keys SET revoked_at = %s WHERE tenant_id = %s "
                               "AND key_id = %s AND revoked_at IS NULL "
                               "RETURNING principal, role", (at, tenant, key_id))
            row = cur.fetchone()
            if row is not None:
                before, after = revoked(key_id, str(row[0]), str(row[1]), at)
                append_event(conn, tenant, kind=API_KEY_REVOKE, actor=actor, at=event_time(),
                             before_json=event_json(before), after_json=event_json(after))
            return row is not None
