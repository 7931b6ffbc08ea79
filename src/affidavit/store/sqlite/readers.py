"""One read-only SQLite connection per thread, for the reads of a :class:`SQLiteStore`.

In WAL mode any number of readers run beside each other and beside the one writer, each on
the last committed state. Reads through the store's single connection instead queued behind
one lock with every write and every other read: under a service's thread pool most of a
request's time was that wait. Each reader is ``query_only`` (a bug cannot write through
it), shares the operating system's page cache through memory-mapped I/O rather than holding
a large cache of its own, and is closed with the store.
"""

from __future__ import annotations

import sqlite3
import threading

READER_CACHE_KIB = 8_192
"""Each reader's own page cache; the pages themselves are shared through mmap."""
READER_MMAP_BYTES = 1 << 30
"""How much of the database file a reader may map (the OS shares mapped pages)."""


class ReadConnections:
    """Lazily opened, thread-local read connections to the database at ``path``; ``None``
    for an in-memory database, which a second connection could not see."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def connection(self) -> sqlite3.Connection | None:
        """This thread's reader (``None`` when reads must use the store's connection)."""
        if self._path is None or self._closed:
            return None
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open(self._path)
            if not self._keep(conn):
                return None
            self._local.conn = conn
        return conn

    def _keep(self, conn: sqlite3.Connection) -> bool:
        """Track ``conn`` for :meth:`close`; a store closed meanwhile gets it closed."""
        with self._lock:
            if not self._closed:
                self._opened.append(conn)
                return True
        conn.close()
        return False

    @staticmethod
    def _open(path: str) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute(f"PRAGMA cache_size=-{READER_CACHE_KIB}")
        conn.execute(f"PRAGMA mmap_size={READER_MMAP_BYTES}")
        return conn

    def close(self) -> None:
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()
