"""A small real corpus for reference tests: documents on disk, ingested into a real store
(a SQLite file, or a fresh PostgreSQL database: :func:`store_opener`), SIRE approved,
labels granted through the store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.records import AuthzContext
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from affidavit.store.protocol import Store

NOW = "2026-01-01T00:00:00+00:00"
FINANCE_READER = "user:fiona"
PLAIN_READER = "user:alice"


def write_doc(root: Path, name: str, body: str, *, label: str = "PUBLIC",
              acl: str = "*") -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(f"---\nacl: [\"{acl}\"]\nclassification: {label}\n---\n"
                             f"# {name}\n\n{body}\n", encoding="utf-8")


def ingest(store: Store, root: Path, settings: Settings | None = None) -> None:
    settings = settings or Settings()
    Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    proposed = [r.sire_id for r in store.list_sire(settings.tenant, state="PROPOSED")]
    if proposed:
        store.activate_sire(settings.tenant, proposed, by="user:reviewer", at=NOW)
    store.grant(settings.tenant, FINANCE_READER, ["FINANCIAL", "INTERNAL"], at=NOW)
    store.grant(settings.tenant, PLAIN_READER, ["INTERNAL"], at=NOW)


def node_of(store: Store, alias: str, tenant: str = "default") -> str:
    for head in store.heads(tenant):
        if head.alias == alias:
            return head.node_id
    raise AssertionError(f"no document {alias}")


def context(engine: Engine, principal: str) -> AuthzContext:
    return engine.authz_context(principal)


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""Parameters of a backend fixture: ``request.param`` goes to :func:`store_opener`."""


def store_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """Opens one store of the backend ``request.param`` names, the same one each call (a
    PostgreSQL database from the session's server; skipped where it cannot start)."""
    if request.param == "sqlite":
        db = tmp_path / "refs.db"
        return lambda: SQLiteStore(db)
    from affidavit.store.postgres.store import PostgresStore
    from tests.pg_fixture import PgCluster

    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    dsn = cluster.new_database("refs")
    return lambda: PostgresStore(dsn)
