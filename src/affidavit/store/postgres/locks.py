"""The ingestion lock of a PostgreSQL store: a session advisory lock per tenant.

The lock is taken on a connection of its own, outside the pool (a pooled connection is
reset and reused, and an advisory lock would outlive the run on it). PostgreSQL releases it
when that session ends, so a killed run leaves no stale lock: its connection closes with it.
"""

from __future__ import annotations

import contextlib
import struct

import psycopg
from psycopg_pool import ConnectionPool

from affidavit.errors import StoreError
from affidavit.records import sha256_hex
from affidavit.store.postgres.base import Connection
from affidavit.store.postgres.setup import connect

# The first key of the two-key advisory lock space: "affi" in ASCII, so that other users of
# advisory locks in the same database do not collide with these.
_LOCK_CLASS = 0x61666669


def tenant_lock_key(tenant: str) -> int:
    """The second advisory lock key of ``tenant``: 32 bits of a digest of its id."""
    value: int = struct.unpack(">i", bytes.fromhex(sha256_hex(tenant.encode("utf-8"))[:8]))[0]
    return value


class AdvisoryIngestLock:
    """A held lock; :meth:`release` ends its session, which lets the next run in."""

    def __init__(self, connection: Connection) -> None:
        self._connection: Connection | None = connection

    def release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(psycopg.Error):
                connection.close()


class PostgresIngestLocks:
    """The store methods for ingestion locks (mixed into the PostgreSQL store)."""

    _pool: ConnectionPool[Connection]

    def try_ingest_lock(self, tenant: str) -> AdvisoryIngestLock | None:
        """Hold ``tenant``'s ingestion lock until ``release()``; None while it is held."""
        conninfo = self._pool.conninfo
        connection = connect(conninfo() if callable(conninfo) else conninfo, autocommit=True)
        try:
            row = connection.execute("SELECT pg_try_advisory_lock(%s, %s)",
                                     (_LOCK_CLASS, tenant_lock_key(tenant))).fetchone()
        except psycopg.Error as exc:
            connection.close()
            raise StoreError(f"cannot take the ingestion lock: {exc}") from exc
        if not row or not row[0]:
            connection.close()
            return None
        return AdvisoryIngestLock(connection)
