"""The ingestion lock of a SQLite store: an ``flock`` on a file beside the database.

Two ingestion runs of one tenant would derive the same versions at once and trip over each
other's writes, so a run holds its tenant's lock from start to finish. The lock is the
kernel's, on ``<database>-ingest-<tenant>.lock``: it belongs to the open file, so it is
released when its holder exits, however it exits (a killed run leaves no stale lock), and
two stores in one process exclude each other as two processes do.

Where ``fcntl`` does not exist (Windows), runs are not locked.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from affidavit.errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

_PLAIN_TENANT = re.compile(r"[A-Za-z0-9_-]{1,64}")


class FileIngestLock:
    """A held lock; :meth:`release` lets the next run in."""

    def __init__(self, descriptor: int | None) -> None:
        self._descriptor = descriptor

    def release(self) -> None:
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            os.close(descriptor)  # closing the file releases its flock


def lock_path(database: str, tenant: str) -> Path:
    """The lock file of ``tenant``'s ingestion runs on ``database``."""
    name = tenant if _PLAIN_TENANT.fullmatch(tenant) else tenant.encode("utf-8").hex()[:128]
    return Path(f"{database}-ingest-{name}.lock")


def try_file_lock(database: str, tenant: str) -> FileIngestLock | None:
    """The tenant's ingestion lock, or None while another run holds it."""
    if database == ":memory:" or fcntl is None:
        return FileIngestLock(None)  # a private database, or no file locks to take
    path = lock_path(database, tenant)
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StoreError(f"cannot open the ingestion lock {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.close(descriptor)
        raise StoreError(f"cannot lock {path}: {exc.strerror}") from exc
    return FileIngestLock(descriptor)


class SQLiteIngestLocks:
    """The store methods for ingestion locks (mixed into the SQLite store)."""

    path: str

    def try_ingest_lock(self, tenant: str) -> FileIngestLock | None:
        """Hold ``tenant``'s ingestion lock until ``release()``; None while it is held."""
        return try_file_lock(self.path, tenant)
