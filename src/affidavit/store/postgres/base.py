"""Tenant-scoped transactions over a pool of application-role connections.

Every unit of work is one transaction that starts with
``set_config('affidavit.tenant', <tenant>, true)``: the setting is transaction-local, so a
connection handed back to the pool carries no tenant, and the next transaction (for any
tenant) starts from nothing. The pool additionally runs ``RESET ALL`` on every returned
connection, so a session-level setting cannot survive either.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from affidavit.errors import AffidavitError, InputRejected, StoreError
from affidavit.records import AuthzContext
from affidavit.store.postgres.migrations import TENANT_SETTING
from affidavit.store.protocol import QuarantineRecord, VersionBundle

Connection = psycopg.Connection[TupleRow]
Row = tuple[Any, ...]

EMPTY_TENANT = "EMPTY_TENANT"


def check_tenant(tenant: str) -> str:
    """A tenant id must be a non-empty string: the empty one is what "unset" looks like."""
    if not isinstance(tenant, str) or not tenant:
        raise InputRejected(EMPTY_TENANT, "a tenant id must be a non-empty string")
    return tenant


class CompletionHook(Protocol):
    """Work that must commit in the same transaction as a document's final write.

    The ingestion queue uses it to mark a claimed document done exactly when its version
    (or its quarantine record) commits: both happen, or neither does.
    """

    def on_commit(self, conn: Connection, bundle: VersionBundle) -> None: ...

    def on_quarantine(self, conn: Connection, tenant: str, record: QuarantineRecord) -> None: ...


def visible_to(authz: AuthzContext) -> tuple[str, list[object]]:
    """SQL admitting a chunk row ``c`` only for this context (lexical and vector search).

    Head version, granted label, and one of the version's ACL tokens in the context: the
    filter sits inside the scoring query, never applied to a ranked list afterwards. The
    token check is a scalar subquery on purpose: the planner cannot turn it into a join
    driven by every readable chunk, so it stays one index probe per candidate row. The
    tokens are matched with ``<@`` rather than ``= ANY`` so that the probe descends the
    primary key once, to the version's few tokens, instead of once per token of the caller.
    """
    labels = sorted(authz.granted_labels)
    tokens = sorted(authz.tokens)
    if not labels or not tokens:
        return "FALSE", []
    epoch, epoch_params = label_epoch_sql(authz)
    clause = epoch + (
        "c.is_head AND c.label = ANY(%s) AND (SELECT 1 FROM acl_tokens a "
        "WHERE a.tenant_id = c.tenant_id AND a.version_id = c.version_id "
        "AND ARRAY[a.token] <@ %s::text[] LIMIT 1) IS NOT NULL"
    )
    return clause, [*epoch_params, labels, tokens]


def label_epoch_sql(authz: AuthzContext) -> tuple[str, list[object]]:
    """``c.label_epoch = %s AND `` when the context pins a label epoch: a chunk labelled
    under another sensitivity policy may carry a stale label and is not admitted."""
    if authz.label_epoch is None:
        return "", []
    return "c.label_epoch = %s AND ", [authz.label_epoch]


def _reset(conn: Connection) -> None:
    # Nothing a previous user of the connection set or locked at session level survives.
    conn.execute("RESET ALL")
    conn.execute("SELECT pg_advisory_unlock_all()")


def open_pool(app_dsn: str, *, size: int, name: str) -> ConnectionPool[Connection]:
    """An opened pool of autocommit connections (transactions are always explicit).

    Statements are never prepared server-side: a prepared statement may fall back to a
    generic plan, and the right plan for a principal who reads 1% of a corpus is not the
    one for a principal who reads 50% (the parameters decide; planning costs far less).
    """
    pool: ConnectionPool[Connection] = ConnectionPool(
        app_dsn, min_size=1, max_size=max(1, size), open=False, name=name,
        kwargs={"autocommit": True, "prepare_threshold": None},
        check=ConnectionPool.check_connection, reset=_reset)
    try:
        pool.open(wait=True, timeout=30.0)
    except PoolTimeout as exc:
        pool.close()
        raise StoreError(f"cannot open a connection pool: {exc}") from exc
    return pool


class PostgresBase:
    """Pool plumbing shared by the PostgreSQL store and its table mixins."""

    _pool: ConnectionPool[Connection]
    _completion: CompletionHook | None = None

    @contextmanager
    def transaction(self, tenant: str) -> Iterator[Connection]:
        """One transaction on a pooled connection, scoped to ``tenant`` by row-level security."""
        check_tenant(tenant)
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant))
                yield conn
        except AffidavitError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"database operation failed: {exc}") from exc

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Ingest batches (see :meth:`affidavit.store.protocol.Store.batched`) are not needed
        here: the server logs row changes, not whole pages per transaction, and large
        loads take the COPY path of :mod:`affidavit.store.postgres.bulk`."""
        yield

    @contextmanager
    def pool_connection(self) -> Iterator[Connection]:
        """A pooled connection outside any transaction (for session-level advisory locks)."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except AffidavitError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"database operation failed: {exc}") from exc

    def _rows(self, tenant: str, query: Any, params: Sequence[object] = ()) -> list[Row]:
        """All rows of one read-only statement in the tenant's transaction."""
        with self.transaction(tenant) as conn:
            return conn.execute(query, params).fetchall()


def lock_for(conn: Connection, purpose: str, tenant: str) -> None:
    """Serialise one tenant's writers of ``purpose`` (ledger, corpus, runs) until commit."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                 (f"affidavit:{purpose}:{tenant}",))


def ensure_tenant_rows(conn: Connection, tenant: str) -> None:
    """The tenant's row and its lexical statistics, created on first write."""
    conn.execute("INSERT INTO tenants VALUES (%s, %s) ON CONFLICT DO NOTHING",
                 (tenant, now_text()))
    conn.execute("INSERT INTO lexical_stats (tenant_id, n_chunks, total_length) "
                 "VALUES (%s, 0, 0) ON CONFLICT DO NOTHING", (tenant,))


def now_text() -> str:
    """UTC now in the ISO form the SQLite backend stores."""
    return datetime.now(UTC).isoformat(timespec="microseconds")
