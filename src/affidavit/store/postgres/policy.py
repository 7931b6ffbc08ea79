"""PostgreSQL table of policy events (:mod:`affidavit.audit`).

A mixin of :class:`~affidavit.store.postgres.store.PostgresStore`, method for method the semantics
of :mod:`affidavit.store.sqlite.policy`. The application role may only read and insert
``policy_events`` (under the tenant's row-level security), and the chain is extended under a
per-tenant advisory lock so that concurrent writers from several processes cannot fork it.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg

from affidavit.audit.chain import GENESIS_HASH, event_hash
from affidavit.errors import StoreError
from affidavit.store.postgres.base import Connection, PostgresBase, ensure_tenant_rows, lock_for
from affidavit.store.protocol import PolicyEvent
from affidavit.store.rows import policy_event

_COLUMNS = "seq, kind, actor, at, before_json, after_json, prev_hash, event_hash"


class PolicyEventTables(PostgresBase):
    """Append and read one tenant's policy events."""

    def append_policy_event(self, tenant: str, *, kind: str, actor: str, at: str,
                            before_json: str, after_json: str) -> PolicyEvent:
        try:
            with self.transaction(tenant) as conn:
                ensure_tenant_rows(conn, tenant)
                return append_event(conn, tenant, kind=kind, actor=actor, at=at,
                                    before_json=before_json, after_json=after_json)
        except psycopg.Error as exc:
            raise StoreError(f"policy event append failed: {exc}") from exc

    def iter_policy_events(self, tenant: str, *, after_seq: int = 0) -> Iterator[PolicyEvent]:
        rows = self._rows(tenant, f"SELECT {_COLUMNS} FROM policy_events WHERE "
                                  "tenant_id = %s AND seq > %s ORDER BY seq",
                          (tenant, after_seq))
        for row in rows:
            yield policy_event(row)

    def policy_head(self, tenant: str) -> tuple[int, str]:
        rows = self._rows(tenant, "SELECT seq, event_hash FROM policy_events WHERE "
                                  "tenant_id = %s ORDER BY seq DESC LIMIT 1", (tenant,))
        return (int(rows[0][0]), str(rows[0][1])) if rows else (0, GENESIS_HASH)


def append_event(conn: Connection, tenant: str, *, kind: str, actor: str, at: str,
                 before_json: str, after_json: str) -> PolicyEvent:
    """Extend ``tenant``'s chain inside the caller's transaction (under the tenant's policy
    lock until commit), so that a change to a policy table and its event commit together."""
    lock_for(conn, "policy", tenant)
    row = conn.execute("SELECT seq, event_hash FROM policy_events WHERE "
                       "tenant_id = %s ORDER BY seq DESC LIMIT 1", (tenant,)).fetchone()
    seq, prev = (int(row[0]) + 1, str(row[1])) if row else (1, GENESIS_HASH)
    digest = event_hash(tenant=tenant, seq=seq, kind=kind, actor=actor, at=at,
                        before_json=before_json, after_json=after_json, prev_hash=prev)
    conn.execute(f"INSERT INTO policy_events (tenant_id, {_COLUMNS}) "
                 "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                 (tenant, seq, kind, actor, at, before_json, after_json, prev, digest))
    return PolicyEvent(seq, kind, actor, at, before_json, after_json, prev, digest)
