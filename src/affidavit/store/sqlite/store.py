"""SQLite backend: the embedded default, one file under ``.affidavit/``.

Every statement names ``tenant_id``; writes of one document version happen in one
``BEGIN IMMEDIATE`` transaction so that a crash leaves the version fully written or absent.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from affidavit.errors import StoreError
from affidavit.policy.derived import compact_derived_json, derived_from_json
from affidavit.records import AuthzContext, Chunk, ParagraphLabel, RawBlob
from affidavit.store.protocol import (
    COUNTABLE_TABLES,
    ChunkRecord,
    HeadInfo,
    LexicalHit,
    LexicalStats,
)
from affidavit.store.sqlite.batch import (
    BATCH_DOCUMENTS,
    BATCH_SECONDS,
    IngestBatch,
    open_batch_connection,
)
from affidavit.store.sqlite.chunks import (
    read_paragraph_labels,
)
from affidavit.store.sqlite.commits import VersionCommits
from affidavit.store.sqlite.governance import GovernanceTables
from affidavit.store.sqlite.identity import IdentityTables
from affidavit.store.sqlite.keys import ApiKeyTables
from affidavit.store.sqlite.lexical import (
    document_frequencies_sql,
    lexical_search_sql,
)
from affidavit.store.sqlite.locks import SQLiteIngestLocks
from affidavit.store.sqlite.migrations import SQLITE_MIGRATIONS
from affidavit.store.sqlite.policy import PolicyEventTables
from affidavit.store.sqlite.readers import ReadConnections
from affidavit.store.sqlite.references import ReferenceTables
from affidavit.store.sqlite.rows import CHUNK_COLUMNS, chunk_record, row_chunk
from affidavit.store.sqlite.texts import (
    VersionTexts,
    blob_span,
    deflate,
    unpack_blob,
)
from affidavit.store.sqlite.vectors import VectorTables, visibility_sql
from affidavit.store.views import first_row_per_chunk

READ_CACHE_KIB = 65_536


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _placeholders(n: int) -> str:
    return ",".join("?" * n)


class SQLiteStore(VersionCommits, SQLiteIngestLocks, GovernanceTables, VectorTables, ApiKeyTables,
                  IdentityTables,
                  PolicyEventTables, ReferenceTables):
    """The :class:`~affidavit.store.protocol.Store` on one SQLite file."""

    backend = "sqlite"

    def __init__(self, path: str | Path, *, create: bool = True):
        self.path = str(path)
        if self.path != ":memory:":
            file = Path(self.path)
            if not create and not file.exists():
                raise StoreError(f"no database at {self.path}; run 'affidavit init' first")
            file.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            # FULL: what this connection commits (a ledger record above all) is on disk
            # before the call returns. Ingest batches have their own, NORMAL, connection.
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute("PRAGMA busy_timeout=10000")
            # Lexical search reads one chunk row per posting, across the whole table: with
            # the default 2 MiB page cache most of those reads went back to the file.
            self._conn.execute(f"PRAGMA cache_size=-{READ_CACHE_KIB}")
            # For migration 17, which deflates stored blobs and blanks chunk texts that are
            # spans of their blob's text.
            self._conn.create_function("affidavit_deflate", 1, deflate, deterministic=True)
            self._conn.create_function("affidavit_blob_span", 4, blob_span,
                                       deterministic=True)
            # For migration 18, which stores derived labels in their compact form.
            self._conn.create_function("affidavit_compact_derived", 1, compact_derived_json,
                                       deterministic=True)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        self._texts = VersionTexts()
        self._lock = threading.RLock()
        self._batches = threading.local()
        self._migrate()
        # Reads on a connection of their own per thread: WAL lets readers run beside each
        # other and beside the one writer, instead of queueing behind one lock.
        self._readers = ReadConnections(None if self.path == ":memory:" else self.path)

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        self._readers.close()
        with self._lock:
            self._conn.close()

    @contextmanager
    def batched(self, *, max_documents: int = BATCH_DOCUMENTS,
                max_seconds: float = BATCH_SECONDS) -> Iterator[None]:
        """Write this thread's document versions in batch transactions, each version still
        all or nothing (see :mod:`affidavit.store.sqlite.batch`)."""
        if self.path == ":memory:" or self._batch() is not None:
            yield  # a second connection to :memory: would be another database
            return
        batch = IngestBatch(open_batch_connection(self.path), self.path,
                            max_documents=max_documents, max_seconds=max_seconds)
        self._batches.current = batch
        try:
            yield
        finally:
            self._batches.current = None
            batch.close()

    def _batch(self) -> IngestBatch | None:
        batch: IngestBatch | None = getattr(self._batches, "current", None)
        return batch

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        batch = self._batch()
        if batch is not None:
            with batch.unit() as conn:
                yield conn
            return
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot start a transaction: {exc}") from exc
            outer = self._writing()
            self._batches.writing = True
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._batches.writing = outer

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        batch = self._batch()
        try:
            if batch is not None:  # this thread's own uncommitted documents are visible
                return batch.read(sql, params)
            reader = self._readers.connection()
            if reader is None or self._writing():
                # In its own write transaction a thread must see what it wrote so far.
                with self._lock:
                    return list(self._conn.execute(sql, params).fetchall())
            return list(reader.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            raise StoreError(f"query failed: {exc}") from exc

    def _writing(self) -> bool:
        return bool(getattr(self._batches, "writing", False))

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            done = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}
            for migration in SQLITE_MIGRATIONS:
                if migration.version in done:
                    continue
                for statement in _split_sql(migration.sql):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                             (migration.version, migration.name, _now()))

    def schema_version(self) -> int:
        rows = self._read("SELECT MAX(version) FROM schema_migrations")
        return int(str(rows[0][0] or 0))

    def _ensure_tenant(self, conn: sqlite3.Connection, tenant: str) -> None:
        conn.execute("INSERT OR IGNORE INTO tenants VALUES (?, ?)", (tenant, _now()))
        conn.execute("INSERT OR IGNORE INTO lexical_stats (tenant_id, n_chunks, total_length) "
                     "VALUES (?, 0, 0)", (tenant,))

    def tenant_exists(self, tenant: str) -> bool:
        return bool(self._read("SELECT 1 FROM tenants WHERE tenant_id = ?", (tenant,)))

    def ensure_tenant(self, tenant: str) -> None:
        with self._write() as conn:
            self._ensure_tenant(conn, tenant)

    def count_rows(self, tenant: str, table: str) -> int:
        if table not in COUNTABLE_TABLES:
            raise StoreError(f"unknown table {table!r}")
        rows = self._read(f"SELECT COUNT(*) FROM {table} WHERE tenant_id = ?", (tenant,))
        return int(str(rows[0][0]))

    # ------------------------------------------------------------------ ingestion
    def head(self, tenant: str, node_id: str) -> HeadInfo | None:
        rows = self._read(
            "SELECT h.node_id, h.version_id, h.raw_digest, v.fingerprint, v.alias FROM head_map h "
            "JOIN versions v ON v.tenant_id = h.tenant_id AND v.version_id = h.version_id "
            "WHERE h.tenant_id = ? AND h.node_id = ?", (tenant, node_id))
        return HeadInfo(*(str(x) for x in rows[0])) if rows else None

    def heads(self, tenant: str) -> list[HeadInfo]:
        rows = self._read(
            "SELECT h.node_id, h.version_id, h.raw_digest, v.fingerprint, v.alias FROM head_map h "
            "JOIN versions v ON v.tenant_id = h.tenant_id AND v.version_id = h.version_id "
            "WHERE h.tenant_id = ? ORDER BY h.node_id", (tenant,))
        return [HeadInfo(*(str(x) for x in row)) for row in rows]

    def version_metadata(self, tenant: str, version_id: str) -> str | None:
        rows = self._read("SELECT metadata_json FROM versions WHERE tenant_id = ? "
                          "AND version_id = ?", (tenant, version_id))
        return str(rows[0][0]) if rows else None

    def withdraw(self, tenant: str, node_id: str, *, run_id: str, at: str) -> bool:
        with self._write() as conn:
            row = conn.execute("SELECT version_id FROM head_map WHERE tenant_id = ? "
                               "AND node_id = ?", (tenant, node_id)).fetchone()
            if not row or row[0] is None:
                return False
            self._move_head(conn, tenant, node_id, None, None, run_id, at)
            conn.execute("DELETE FROM head_map WHERE tenant_id = ? AND node_id = ?",
                         (tenant, node_id))
        return True

    # ------------------------------------------------------------------ retrieval
    def source_chunk_ids(self, tenant: str, source_id: str) -> list[str]:
        rows = self._read(
            "SELECT c.chunk_id FROM nodes n CROSS JOIN chunks c ON c.tenant_id = n.tenant_id "
            "AND c.node_id = n.node_id WHERE n.tenant_id = ? AND n.source_id = ? "
            "AND c.is_head = 1 ORDER BY c.chunk_id", (tenant, source_id))
        return [str(r[0]) for r in rows]

    def document_chunk_ids(self, tenant: str, node_id: str) -> list[str]:
        rows = self._read(
            "SELECT c.chunk_id FROM head_map h JOIN chunks c ON c.tenant_id = h.tenant_id "
            "AND c.version_id = h.version_id WHERE h.tenant_id = ? AND h.node_id = ? "
            "AND c.is_head = 1 ORDER BY c.ordinal, c.chunk_id", (tenant, node_id))
        return [str(r[0]) for r in rows]

    def paragraph_labels(self, tenant: str, version_id: str) -> list[ParagraphLabel]:
        return read_paragraph_labels(self._read, tenant, version_id)

    def corpus_generation(self, tenant: str) -> int:
        rows = self._read("SELECT generation FROM lexical_stats WHERE tenant_id = ?", (tenant,))
        return int(str(rows[0][0])) if rows else 0

    def label_stale_heads(self, tenant: str, label_epoch: str) -> list[HeadInfo]:
        rows = self._read(
            "SELECT h.node_id, h.version_id, h.raw_digest, v.fingerprint, v.alias FROM head_map h "
            "JOIN versions v ON v.tenant_id = h.tenant_id AND v.version_id = h.version_id "
            "WHERE h.tenant_id = ? AND EXISTS (SELECT 1 FROM chunks c WHERE c.tenant_id = "
            "h.tenant_id AND c.version_id = h.version_id AND c.label_epoch <> ?) "
            "ORDER BY h.node_id", (tenant, label_epoch))
        return [HeadInfo(*(str(x) for x in row)) for row in rows]

    def blob(self, tenant: str, raw_digest: str) -> RawBlob | None:
        rows = self._read(
            "SELECT raw_digest, content, source_system, source_id, source_rev, fetched_at, "
            "encoding FROM blobs WHERE tenant_id = ? AND raw_digest = ?", (tenant, raw_digest))
        if not rows:
            return None
        r = rows[0]
        return RawBlob(str(r[0]), unpack_blob(r[1], r[6]), str(r[2]), str(r[3]), str(r[4]),
                       str(r[5]))

    def version_chunks(self, tenant: str, version_id: str) -> list[Chunk]:
        rows = self._read(
            f"SELECT {CHUNK_COLUMNS}, v.title, v.alias, c.derived_json FROM chunks c "
            "JOIN versions v ON v.tenant_id = c.tenant_id AND v.version_id = c.version_id "
            "WHERE c.tenant_id = ? AND c.version_id = ? ORDER BY c.ordinal, c.chunk_id",
            (tenant, version_id))
        rows = self._spans(tenant, rows)
        return [replace(row_chunk(r, r[12], r[13]), derived=derived_from_json(
                    r[13], title=str(r[11]), alias=str(r[12])))
                for r in rows]

    def restamp_version(self, tenant: str, version_id: str, *, label_epoch: str, witness: str,
                        fingerprint: str) -> None:
        with self._write() as conn:
            conn.execute("UPDATE versions SET witness = ?, fingerprint = ? WHERE tenant_id = ? "
                         "AND version_id = ?", (witness, fingerprint, tenant, version_id))
            # The chunks' witness is the version's, just set: stored there only.
            conn.execute("UPDATE chunks SET label_epoch = ?, witness = '' WHERE tenant_id = ? "
                         "AND version_id = ?", (label_epoch, tenant, version_id))
            conn.execute("UPDATE lexical_stats SET generation = generation + 1 "
                         "WHERE tenant_id = ?", (tenant,))

    def lexical_stats(self, tenant: str) -> LexicalStats:
        rows = self._read("SELECT n_chunks, total_length FROM lexical_stats WHERE tenant_id = ?",
                          (tenant,))
        if not rows:
            return LexicalStats(0, 0)
        return LexicalStats(int(str(rows[0][0])), int(str(rows[0][1])))

    def document_frequencies(self, tenant: str, terms: Sequence[str]) -> dict[str, int]:
        unique = sorted(set(terms))
        if not unique:
            return {}
        rows = self._read(document_frequencies_sql(len(unique)), (tenant, *unique))
        found = {str(r[0]): int(str(r[1])) for r in rows}
        return {term: found.get(term, 0) for term in unique}

    def lexical_search(self, authz: AuthzContext, term_idf: Mapping[str, float], *, k1: float,
                       b: float, avg_length: float, limit: int,
                       postings: int | None = None) -> list[LexicalHit]:
        terms = sorted(term_idf)
        if not terms or avg_length <= 0 or limit <= 0:
            return []
        visible, visible_params = visibility_sql(authz)
        sql = lexical_search_sql(len(terms), visible)
        params: list[object] = []
        for term in terms:
            params.extend((term, term_idf[term]))
        params.extend((k1, b, b, avg_length, authz.tenant, authz.tenant, *visible_params, limit))
        return [LexicalHit(str(r[0]), float(str(r[1]))) for r in self._read(sql, params)]

    def get_chunks(self, authz: AuthzContext, chunk_ids: Sequence[str]) -> list[ChunkRecord]:
        ids = sorted(set(chunk_ids))
        if not ids:
            return []
        visible, visible_params = visibility_sql(authz, per_row=True)
        rows = self._read(
            f"SELECT {CHUNK_COLUMNS}, v.title, v.alias, n.source_id, n.source_system, c.is_head, "
            "c.derived_json FROM chunks c JOIN versions v ON v.tenant_id = c.tenant_id "
            "AND v.version_id = c.version_id JOIN nodes n ON n.tenant_id = c.tenant_id "
            f"AND n.node_id = c.node_id WHERE c.tenant_id = ? AND c.chunk_id IN "
            f"({_placeholders(len(ids))}) AND {visible}",
            (authz.tenant, *ids, *visible_params))
        by_id = {str(r[0]): r for r in self._spans(authz.tenant, rows)}
        return [chunk_record(authz, by_id[i]) for i in chunk_ids if i in by_id]

    def chunks_with_label(self, tenant: str, chunk_ids: Sequence[str],
                          label: str) -> list[Chunk]:
        ids = sorted(set(chunk_ids))
        if not ids:
            return []
        rows = self._read(
            f"SELECT {CHUNK_COLUMNS}, v.title, v.alias, c.derived_json FROM chunks c "
            "JOIN versions v ON v.tenant_id = c.tenant_id AND v.version_id = c.version_id "
            "WHERE c.tenant_id = ? AND c.label = ? "
            f"AND c.chunk_id IN ({_placeholders(len(ids))}) "
            "ORDER BY c.chunk_id, c.is_head DESC, v.created_at DESC, c.version_id DESC",
            (tenant, label, *ids))
        return [replace(row_chunk(r, r[12], r[13]), derived=derived_from_json(
                    r[13], title=str(r[11]), alias=str(r[12])))
                for r in self._spans(tenant, first_row_per_chunk(rows))]

    def _spans(self, tenant: str, rows: Sequence[tuple[object, ...]]
               ) -> list[tuple[object, ...]]:
        """Chunk rows (``CHUNK_COLUMNS`` first) with the text of span rows filled in."""
        return self._texts.fill(self._read, tenant, rows, text=6, version=2, start=4, end=5)

    def _chunk_texts(self, tenant: str, rows: Sequence[tuple[object, ...]]
                     ) -> list[tuple[object, ...]]:
        """(chunk id, text, version id, start, end) rows with span texts filled in."""
        return self._texts.fill(self._read, tenant, rows, text=1, version=2, start=3, end=4)

def _split_sql(script: str) -> list[str]:
    """Split a migration into statements; triggers keep their inner semicolons."""
    statements: list[str] = []
    buffer: list[str] = []
    in_trigger = False
    for line in script.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("--"):
            continue
        buffer.append(line)
        if stripped.upper().startswith("CREATE TRIGGER"):
            in_trigger = True
        if (in_trigger and stripped.upper().endswith("END;")) or (
                not in_trigger and stripped.endswith(";")):
            statements.append("\n".join(buffer))
            buffer, in_trigger = [], False
    if buffer:
        statements.append("\n".join(buffer))
    return statements
