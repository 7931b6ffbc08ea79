"""Ingest batches for the SQLite backend: many document versions per transaction.

One transaction per document version wrote every B-tree page it touched to the write-ahead
log once per document: about 1.8 MB of log for a few kilobytes of text, then the same pages
again at each checkpoint. A batch keeps one transaction open over many documents, so a page
touched by many of them is logged once per batch.

The all-or-nothing promise stays per document: each write unit (one ``commit_version``, one
quarantine record) runs inside a ``SAVEPOINT``; a unit that fails rolls back to its
savepoint alone and the batch goes on. A crash loses the uncommitted batch as a whole,
which is whole documents, and the next run derives them again.

A batch has its own connection, used only by the thread that opened it: other threads
neither see its uncommitted documents nor write into it, and their own transactions (a
ledger record above all) commit on the store's main connection as before. They wait for
the batch's write lock at most ``max_seconds``: a timer commits an idle batch, so a slow
fetch between two documents never holds the lock longer.

Durability: the batch connection runs ``synchronous=NORMAL`` (in WAL mode a power loss can
lose its last commits, never split one) and syncs the log once when the batch ends; the main
connection runs ``synchronous=FULL``, so a ledger record is on disk before the answer it
records leaves.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from affidavit.errors import StoreError

BATCH_DOCUMENTS = 200
BATCH_SECONDS = 0.5
# Pages of write-ahead log between automatic checkpoints on the batch connection (the
# default is 1000, 4 MB): a page rewritten by many batches is copied back once per 40 MB.
BATCH_WAL_PAGES = 10_000
BATCH_CACHE_KIB = 65_536


class IngestBatch:
    """An open batch on its own connection; see the module docstring."""

    def __init__(self, conn: sqlite3.Connection, path: str, *, max_documents: int,
                 max_seconds: float):
        self.conn, self.path = conn, path
        self.max_documents = max(1, max_documents)
        self.max_seconds = max_seconds
        self._mutex = threading.Lock()
        self._open = False
        self._units = 0
        self._opened_at = 0.0
        self._timer: threading.Timer | None = None
        self.commits = 0
        # tenant -> term -> key of lexical terms this connection has read or written. A
        # committed term's key never changes (no row of lexical_terms is updated or deleted),
        # so it is looked up once per batch connection, not once per document. A unit that
        # rolls back, or a commit that fails, may have taken back keys given here: the whole
        # memory is dropped then (see forget_term_keys).
        self.term_keys: dict[str, dict[str, int]] = {}

    @contextmanager
    def unit(self) -> Iterator[sqlite3.Connection]:
        """One write unit (a document version): inside the batch, all or nothing."""
        with self._mutex:
            if not self._open:
                self._begin()
            self.conn.execute("SAVEPOINT unit")
            try:
                yield self.conn
            except BaseException:
                self.forget_term_keys()
                self.conn.execute("ROLLBACK TO unit")
                self.conn.execute("RELEASE unit")
                raise
            self.conn.execute("RELEASE unit")
            self._units += 1
            if (self._units >= self.max_documents
                    or time.monotonic() - self._opened_at >= self.max_seconds):
                self._commit()

    def read(self, sql: str, params: Sequence[object]) -> list[tuple[object, ...]]:
        with self._mutex:
            return list(self.conn.execute(sql, params).fetchall())

    def close(self) -> None:
        """Commit what is complete, make it durable, and release the connection."""
        with self._mutex:
            try:
                if self._open:
                    self._commit()
                if self.commits:
                    self._sync_log()
            finally:
                self._cancel_timer()
                self.conn.close()

    def _sync_log(self) -> None:
        """The batch's commits ran ``synchronous=NORMAL``: one fsync of the write-ahead log
        at the end makes all of them durable before ``batched()`` returns (the setting
        cannot change inside a transaction, so it is not raised for the last commit)."""
        wal = self.path + "-wal"
        try:
            fd = os.open(wal, os.O_RDONLY)
        except FileNotFoundError:
            return  # checkpointed and truncated: the database file holds it
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _begin(self) -> None:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot start a transaction: {exc}") from exc
        self._open, self._units, self._opened_at = True, 0, time.monotonic()
        self._timer = threading.Timer(self.max_seconds, self._commit_when_idle)
        self._timer.daemon = True
        self._timer.start()

    def forget_term_keys(self) -> None:
        self.term_keys = {}

    def _commit(self) -> None:
        self._cancel_timer()
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.forget_term_keys()
            raise StoreError(f"cannot commit an ingest batch: {exc}") from exc
        finally:
            self._open = self.conn.in_transaction
        self.commits += 1

    def _commit_when_idle(self) -> None:
        with self._mutex:
            if self._open and time.monotonic() - self._opened_at >= self.max_seconds:
                # If it fails it stays open: the next unit or close() commits or reports it.
                with contextlib.suppress(StoreError):
                    self._commit()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None


def open_batch_connection(path: str) -> sqlite3.Connection:
    """A connection tuned for bulk writes (see the module docstring)."""
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute(f"PRAGMA wal_autocheckpoint={BATCH_WAL_PAGES}")
        conn.execute(f"PRAGMA cache_size=-{BATCH_CACHE_KIB}")
        # A savepoint keeps the prior image of every page its unit changes in a
        # sub-journal; in a temporary file that doubled the bytes written. One unit's
        # pages fit in memory.
        conn.execute("PRAGMA temp_store=MEMORY")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from exc
    return conn
