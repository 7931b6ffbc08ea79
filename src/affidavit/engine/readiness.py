"""Whether this process can serve: the checks behind ``/readyz`` and ``affidavit doctor``.

Each check answers one question an operator asks when a deployment will not come up (is the
store there and migrated, can the ledger be written, is the configured model reachable),
with a stable reason code and an explanation of what to do. A check never reads the corpus
and never names a document, a principal or a tenant's data: ``/readyz`` is served without
credentials, so what it says must be safe to say to anyone who can reach the port.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from affidavit.config.settings import Settings
from affidavit.store import POSTGRES_SCHEMES, display_location
from affidavit.store.protocol import Store
from affidavit.store.sqlite.migrations import SQLITE_MIGRATIONS

PROVIDER_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class Check:
    """One readiness check: its name, whether it passed, a reason code and what to do."""

    name: str
    ok: bool
    reason: str = "OK"
    explanation: str = ""

    def public(self) -> dict[str, object]:
        """What ``/readyz`` shows: no explanation (it may name paths or hosts)."""
        return {"name": self.name, "ok": self.ok, "reason": self.reason}


def run_checks(settings: Settings, base: Path,
               open_store: Callable[[], Store] | None = None) -> list[Check]:
    """Every check, in a fixed order; a failing store check skips the ledger check.

    ``open_store`` gives the store the caller serves from (the service's own); without it
    the settings' ``[store] db`` is checked, a relative path taken from ``base``."""
    if open_store is None:
        checks = [check_store(settings, base)]
        if checks[0].ok:
            checks.append(check_ledger_writable(settings.store.db, _sqlite_path(settings, base)))
    else:
        checks = _check_open_store(open_store)
    checks.append(check_provider(settings))
    return checks


def _check_open_store(open_store: Callable[[], Store]) -> list[Check]:
    """The store and ledger checks on the store the service holds."""
    from affidavit.store.sqlite.store import SQLiteStore

    try:
        store = open_store()
        applied = store.schema_version()
    except Exception:  # a store that will not open or answer is not ready, whatever the cause
        return [Check("store", False, "STORE_UNREACHABLE",
                      "the store could not be opened or queried")]
    if isinstance(store, SQLiteStore):
        migrated = _migrated(applied, max(m.version for m in SQLITE_MIGRATIONS))
        return [migrated] + ([check_ledger_writable("", Path(store.path))] if migrated.ok
                             else [])
    from affidavit.store.postgres.migrations import POSTGRES_MIGRATIONS

    migrated = _migrated(applied, max(m.version for m in POSTGRES_MIGRATIONS))
    if not migrated.ok:
        return [migrated]
    try:
        with store.pool_connection() as conn:  # type: ignore[attr-defined]
            row = conn.execute(_LEDGER_PRIVILEGE).fetchone()
    except Exception:
        return [migrated, Check("ledger", False, "LEDGER_UNREACHABLE",
                                "cannot check the ledger table")]
    return [migrated, _ledger_privilege(bool(row and row[0]))]


# ---------------------------------------------------------------------- the store


def _sqlite_path(settings: Settings, base: Path) -> Path:
    path = Path(settings.store.db.removeprefix("sqlite:///"))
    return path if path.is_absolute() else base / path


def check_store(settings: Settings, base: Path) -> Check:
    """The store is reachable and every migration this version knows is applied."""
    location = settings.store.db
    if location.startswith(POSTGRES_SCHEMES):
        return _check_postgres_store(location)
    path = _sqlite_path(settings, base)
    if not path.is_file():
        return Check("store", False, "STORE_MISSING",
                     f"no database at {path}: run `affidavit init` (or pass --db)")
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    except sqlite3.Error:
        return Check("store", False, "STORE_UNREADABLE",
                     f"{path} is not an Affidavit database, or cannot be read by this user")
    return _migrated(int(row[0] or 0), max(m.version for m in SQLITE_MIGRATIONS))


def _migrated(applied: int, known: int) -> Check:
    if applied < known:
        return Check("store", False, "STORE_NOT_MIGRATED",
                     f"schema version {applied}, this release needs {known}: run "
                     "`affidavit init` once (it applies the missing migrations)")
    if applied > known:
        return Check("store", False, "STORE_NEWER_THAN_RELEASE",
                     f"schema version {applied} is newer than this release knows ({known}): "
                     "upgrade this installation before serving from the database")
    return Check("store", True)


def _check_postgres_store(dsn: str) -> Check:
    try:
        import psycopg
    except ImportError:
        return Check("store", False, "STORE_DRIVER_MISSING",
                     "a PostgreSQL store needs the 'postgres' extra: "
                     "pip install 'affidavit[postgres]'")
    from affidavit.store.postgres.migrations import POSTGRES_MIGRATIONS

    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
                               ).fetchone()
    except psycopg.Error:
        return Check("store", False, "STORE_UNREACHABLE",
                     f"cannot query {display_location(dsn)}: is the server up, the DSN "
                     "right and the schema created (`affidavit init`)?")
    return _migrated(int(row[0] if row else 0), max(m.version for m in POSTGRES_MIGRATIONS))


# ---------------------------------------------------------------------- the ledger


def check_ledger_writable(location: str, path: Path) -> Check:
    """A ledger record could be written now (no answer leaves without one): on PostgreSQL
    the role of ``location`` may insert into it; on SQLite the file at ``path`` takes a
    write lock."""
    if location.startswith(POSTGRES_SCHEMES):
        return _check_postgres_ledger(location)
    # SQLite writes beside the file (journal, WAL): both must be writable.
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return Check("ledger", False, "LEDGER_READ_ONLY",
                     f"{path} or its folder is not writable by this user: answers would "
                     "be refused, since no answer leaves without a ledger record")
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=2.0)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        return Check("ledger", False, "LEDGER_LOCKED",
                     f"{path} could not take a write lock within 2 s: another process "
                     "holds it (a long ingest on another host's copy?)")
    return Check("ledger", True)


def _check_postgres_ledger(dsn: str) -> Check:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            row = conn.execute(_LEDGER_PRIVILEGE).fetchone()
    except psycopg.Error:
        return Check("ledger", False, "LEDGER_UNREACHABLE",
                     f"cannot check the ledger table on {display_location(dsn)}")
    return _ledger_privilege(bool(row and row[0]))


_LEDGER_PRIVILEGE = "SELECT has_table_privilege('ledger', 'INSERT')"


def _ledger_privilege(granted: bool) -> Check:
    if not granted:
        return Check("ledger", False, "LEDGER_READ_ONLY",
                     "the database role may not insert into the ledger table: answers "
                     "would be refused")
    return Check("ledger", True)


# ---------------------------------------------------------------------- the model


def check_provider(settings: Settings,
                   get: Callable[[str, float], int] | None = None) -> Check:
    """The configured answer model can be reached (nothing to check for ``extractive``)."""
    provider = settings.answer.provider
    if provider == "openai":
        return _check_openai(settings.provider.base_url, get or _http_status)
    if provider == "local":
        return _check_local(settings.local.model_path)
    return Check("provider", True, "NOT_CONFIGURED")


def _http_status(url: str, timeout: float) -> int:
    import httpx

    return httpx.get(url, timeout=timeout).status_code


def _check_openai(base_url: str, get: Callable[[str, float], int]) -> Check:
    if not base_url:
        return Check("provider", False, "PROVIDER_NOT_SET",
                     "[answer] provider = \"openai\" needs [provider] base_url")
    url = base_url.rstrip("/") + "/models"
    try:
        status = get(url, PROVIDER_TIMEOUT_SECONDS)
    except Exception:  # any transport failure means: not reachable
        return Check("provider", False, "PROVIDER_UNREACHABLE",
                     f"no answer from {base_url} within {PROVIDER_TIMEOUT_SECONDS:g} s: is "
                     "the model server running, and is its address the one in [provider]?")
    # 501: a server that does not list models still answers completions (it is up).
    if status >= 500 and status != 501:
        return Check("provider", False, "PROVIDER_FAILING",
                     f"{base_url} answered {status}: the model server is up but failing")
    return Check("provider", True)


def _check_local(model_path: str) -> Check:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return Check("provider", False, "LOCAL_RUNTIME_MISSING",
                     "[answer] provider = \"local\" needs the 'llama' extra: "
                     "pip install 'affidavit[llama]'")
    if model_path and not Path(model_path).expanduser().is_file():
        return Check("provider", False, "LOCAL_MODEL_MISSING",
                     f"[local] model_path {model_path} does not exist")
    return Check("provider", True)
