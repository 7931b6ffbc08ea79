"""SQLite tables of node identity: which source path owns each node, and the operators'
recorded resolutions of identity collisions.

A mixin of :class:`~affidavit.store.sqlite.store.SQLiteStore`, plus :func:`claim_identity`, which
``commit_version`` calls inside the version's transaction so that a claim and the version
it admits are written together or not at all.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager

from affidavit.errors import InputRejected
from affidavit.store.protocol import TAKE_OVER, IdentityResolution, identity_collision

_RESOLUTION_COLUMNS = ("node_id, source_id, claimant, owner, decision, resolved_by, "
                       "resolved_at, note")


# The owner: the claim, or (for a node ingested before claims were kept) the path of the
# node's newest version.
_OWNER = ("SELECT COALESCE((SELECT alias FROM identity_claims WHERE tenant_id = ? "
          "AND node_id = ?), (SELECT alias FROM versions WHERE tenant_id = ? AND node_id = ? "
          "ORDER BY created_at DESC, version_id DESC LIMIT 1))")


def _owner(conn: sqlite3.Connection, tenant: str, node_id: str) -> str | None:
    row = conn.execute(_OWNER, (tenant, node_id, tenant, node_id)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def claim_identity(conn: sqlite3.Connection, tenant: str, node_id: str, source_id: str,
                   alias: str, at: str, submitted_by: str | None = None) -> None:
    """Claim ``node_id`` for ``alias`` if nobody has; refuse when another path owns it.
    The first version's submitter becomes the node's owner (a node that has versions
    already keeps none: its first submitter is not known)."""
    owner = _owner(conn, tenant, node_id)
    if (owner or alias) != alias:
        raise identity_collision(source_id, alias)
    conn.execute("INSERT OR IGNORE INTO identity_claims (tenant_id, node_id, alias, "
                 "claimed_at, submitted_by) VALUES (?, ?, ?, ?, ?)",
                 (tenant, node_id, alias, at, submitted_by if owner is None else None))


class IdentityTables:
    """Identity claims and their resolutions."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def _ensure_tenant(self, conn: sqlite3.Connection, tenant: str) -> None:
        raise NotImplementedError

    def identity_owner(self, tenant: str, node_id: str) -> str | None:
        rows = self._read(_OWNER, (tenant, node_id, tenant, node_id))
        return None if not rows or rows[0][0] is None else str(rows[0][0])

    def first_submitter(self, tenant: str, node_id: str) -> str | None:
        rows = self._read("SELECT submitted_by FROM identity_claims WHERE tenant_id = ? "
                          "AND node_id = ?", (tenant, node_id))
        return None if not rows or rows[0][0] is None else str(rows[0][0])

    def resolve_identity(self, tenant: str, resolution: IdentityResolution) -> None:
        r = resolution
        with self._write() as conn:
            self._ensure_tenant(conn, tenant)
            if _owner(conn, tenant, r.node_id) != r.owner:
                raise InputRejected("IDENTITY_OWNER_CHANGED",
                                    f"source_id {r.source_id!r} is no longer held by {r.owner}")
            seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM identity_resolutions "
                               "WHERE tenant_id = ?", (tenant,)).fetchone()[0]
            conn.execute(f"INSERT INTO identity_resolutions (tenant_id, seq, "
                         f"{_RESOLUTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (tenant, seq, r.node_id, r.source_id, r.claimant, r.owner,
                          r.decision, r.resolved_by, r.resolved_at, r.note))
            if r.decision == TAKE_OVER:
                conn.execute("INSERT INTO identity_claims (tenant_id, node_id, alias, "
                             "claimed_at) VALUES (?, ?, ?, ?) "
                             "ON CONFLICT (tenant_id, node_id) DO UPDATE SET "
                             "alias = excluded.alias, claimed_at = excluded.claimed_at",
                             (tenant, r.node_id, r.claimant, r.resolved_at))

    def list_identity_resolutions(self, tenant: str) -> list[IdentityResolution]:
        rows = self._read(f"SELECT {_RESOLUTION_COLUMNS} FROM identity_resolutions "
                          "WHERE tenant_id = ? ORDER BY seq", (tenant,))
        return [IdentityResolution(*(str(x) for x in row)) for row in rows]
