"""Shared fixtures: real databases in temporary directories, parametrised by backend.

``sqlite``: a fresh file per test. ``postgres``: a fresh database per test on one real
PostgreSQL server for the session (see ``tests/pg_fixture.py``); skipped with the reason
when that server cannot start here, except under ``CI=true``, where it must.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from affidavit.store import SQLiteStore, Store
from tests.pg_fixture import PgCluster, session_cluster

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """One PostgreSQL server (with pgvector) for the whole session."""
    yield from session_cluster()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, migrated store of each backend."""
    s: Store
    if request.param == "sqlite":
        s = SQLiteStore(tmp_path / "contract.db")
    else:
        cluster: PgCluster = request.getfixturevalue("pg_cluster")  # skips if no server
        from affidavit.store.postgres.store import PostgresStore

        s = PostgresStore(cluster.new_database("contract"))
    try:
        yield s
    finally:
        s.close()
