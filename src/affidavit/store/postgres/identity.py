"""PostgreSQL tables of node identity: which source path owns each node, and the operators'
recorded resolutions of identity collisions.

A mixin of :class:`~affidavit.store.postgres.store.PostgresStore`, method for method the semantics
of :mod:`affidavit.store.sqlite.identity`, plus :func:`claim_identity`, which
``commit_version`` calls inside the version's transaction.
"""

from __future__ import annotations

from affidavit.errors import InputRejected
from affidavit.store.postgres.base import Connection, PostgresBase, ensure_tenant_rows, lock_for
from affidavit.store.protocol import TAKE_OVER, IdentityResolution, identity_collision

_RESOLUTION_COLUMNS = ("node_id, source_id, claimant, owner, decision, resolved_by, "
                       "resolved_at, note")


# The owner: the claim, or (for a node ingested before claims were kept) the path of the
# node's newest version.
_OWNER = ("SELECT COALESCE((SELECT alias FROM identity_claims WHERE tenant_id = %s "
          "AND node_id = %s), (SELECT alias FROM versions WHERE tenant_id = %s "
          "AND node_id = %s ORDER BY created_at DESC, version_id DESC LIMIT 1))")


def _owner(conn: Connection, tenant: str, node_id: str) -> str | None:
    row = conn.execute(_OWNER, (tenant, node_id, tenant, node_id)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def claim_identity(conn: Connection, tenant: str, node_id: str, source_id: str, alias: str,
                   at: str, submitted_by: str | None = None) -> None:
    """Claim ``node_id`` for ``alias`` if nobody has; refuse when another path owns it.
    The first version's submitter becomes the node's owner.

    Called under the tenant's corpus lock, so two first claims cannot both succeed."""
    owner = _owner(conn, tenant, node_id)
    if (owner or alias) != alias:
        raise identity_collision(source_id, alias)
    conn.execute("INSERT INTO identity_claims (tenant_id, node_id, alias, claimed_at, "
                 "submitted_by) VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                 (tenant, node_id, alias, at, submitted_by if owner is None else None))


class IdentityTables(PostgresBase):
    """Identity claims and their resolutions."""

    def identity_owner(self, tenant: str, node_id: str) -> str | None:
        rows = self._rows(tenant, _OWNER, (tenant, node_id, tenant, node_id))
        return None if not rows or rows[0][0] is None else str(rows[0][0])

    def first_submitter(self, tenant: str, node_id: str) -> str | None:
        rows = self._rows(tenant, "SELECT submitted_by FROM identity_claims WHERE "
                                  "tenant_id = %s AND node_id = %s", (tenant, node_id))
        return None if not rows or rows[0][0] is None else str(rows[0][0])

    def resolve_identity(self, tenant: str, resolution: IdentityResolution) -> None:
        r = resolution
        with self.transaction(tenant) as conn:
            ensure_tenant_rows(conn, tenant)
            # The corpus lock: a commit claiming this node waits for the decision.
            lock_for(conn, "corpus", tenant)
            if _owner(conn, tenant, r.node_id) != r.owner:
                raise InputRejected("IDENTITY_OWNER_CHANGED",
                                    f"source_id {r.source_id!r} is no longer held by {r.owner}")
            seq_row = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM identity_resolutions "
                                   "WHERE tenant_id = %s", (tenant,)).fetchone()
            seq = int(seq_row[0]) if seq_row else 1
            conn.execute(f"INSERT INTO identity_resolutions (tenant_id, seq, "
                         f"{_RESOLUTION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                         (tenant, seq, r.node_id, r.source_id, r.claimant, r.owner,
                          r.decision, r.resolved_by, r.resolved_at, r.note))
            if r.decision == TAKE_OVER:
                conn.execute("INSERT INTO identity_claims (tenant_id, node_id, alias, claimed_at) "
                             "VALUES (%s, %s, %s, %s) ON CONFLICT (tenant_id, node_id) DO UPDATE "
                             "SET alias = EXCLUDED.alias, claimed_at = EXCLUDED.claimed_at",
                             (tenant, r.node_id, r.claimant, r.resolved_at))

    def list_identity_resolutions(self, tenant: str) -> list[IdentityResolution]:
        rows = self._rows(tenant, f"SELECT {_RESOLUTION_COLUMNS} FROM identity_resolutions "
                                  "WHERE tenant_id = %s ORDER BY seq", (tenant,))
        return [IdentityResolution(*(str(x) for x in row)) for row in rows]
