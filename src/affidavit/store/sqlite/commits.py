"""Committing a document version to SQLite: blob, node, version rows, chunks, postings and the
head move, in the one ``BEGIN IMMEDIATE`` transaction of :meth:`VersionCommits.commit_version`,
so a crash leaves the version fully written or absent. A mixin of
:class:`~affidavit.store.sqlite.store.SQLiteStore`, which supplies the connection helpers."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime

from affidavit.errors import StoreError
from affidavit.store.protocol import (
    CommitResult,
    VersionBundle,
)
from affidavit.store.sqlite.batch import (
    IngestBatch,
)
from affidavit.store.sqlite.chunks import (
    write_chunk_rows,
    write_paragraph_labels,
)
from affidavit.store.sqlite.identity import claim_identity
from affidavit.store.sqlite.lexical import (
    delete_postings,
    write_postings,
)
from affidavit.store.sqlite.texts import (
    VersionTexts,
    pack_blob,
    sire_json_stored,
    version_text_row,
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _placeholders(n: int) -> str:
    return ",".join("?" * n)


class VersionCommits:
    """Writes one version and moves its node's head."""

    _texts: VersionTexts

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def _ensure_tenant(self, conn: sqlite3.Connection, tenant: str) -> None:
        raise NotImplementedError

    def _batch(self) -> IngestBatch | None:
        raise NotImplementedError

    def commit_version(self, bundle: VersionBundle) -> CommitResult:
        t = bundle.tenant
        with self._write() as conn:
            self._ensure_tenant(conn, t)
            if conn.execute("SELECT 1 FROM versions WHERE tenant_id = ? AND version_id = ?",
                            (t, bundle.version_id)).fetchone():
                raise StoreError(f"version {bundle.version_id} is already stored")
            claim_identity(conn, t, bundle.node_id, bundle.blob.source_id, bundle.alias,
                           bundle.created_at, bundle.submitted_by)
            self._write_blob_and_node(conn, bundle)
            self._write_version_rows(conn, bundle)
            previous = self._move_head(conn, t, bundle.node_id, bundle.version_id,
                                       bundle.blob.raw_digest, bundle.run_id, bundle.created_at)
        return CommitResult(bundle.version_id, len(bundle.chunks), previous)

    def _write_blob_and_node(self, conn: sqlite3.Connection, b: VersionBundle) -> None:
        blob = b.blob
        content, encoding = pack_blob(blob.content)
        conn.execute(
            "INSERT OR IGNORE INTO blobs (tenant_id, raw_digest, content, size, source_system, "
            "source_id, source_rev, fetched_at, encoding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (b.tenant, blob.raw_digest, content, len(blob.content), blob.source_system,
             blob.source_id, blob.source_rev, blob.fetched_at, encoding))
        conn.execute("INSERT OR IGNORE INTO nodes VALUES (?, ?, ?, ?, ?)",
                     (b.tenant, b.node_id, blob.source_system, blob.source_id, b.created_at))
        epoch = conn.execute("SELECT COUNT(*) FROM aliases WHERE tenant_id = ? AND node_id = ?",
                             (b.tenant, b.node_id)).fetchone()[0]
        for alias_type, value in (("path", b.alias), ("title", b.title)):
            conn.execute("INSERT OR IGNORE INTO aliases VALUES (?, ?, ?, ?, ?, ?)",
                         (b.tenant, b.node_id, alias_type, value, epoch, b.created_at))

    def _write_version_rows(self, conn: sqlite3.Connection, b: VersionBundle) -> None:
        t = b.tenant
        # The normalized text is stored once (migration 17): as the blob's own text when it is
        # that, else deflated in version_texts; a chunk that is a span of it stores ''.
        own_text = version_text_row(b.normalized_text, b.blob.content)
        if own_text is not None:
            conn.execute("INSERT OR IGNORE INTO version_texts VALUES (?, ?, ?)",
                         (t, b.version_id, own_text))
        conn.execute(
            "INSERT INTO versions (tenant_id, version_id, node_id, raw_digest, fingerprint, "
            "title, alias, metadata_json, declared_label, witness, run_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (t, b.version_id, b.node_id, b.blob.raw_digest, b.fingerprint, b.title, b.alias,
             b.metadata_json, b.declared_label, b.witness, b.run_id, b.created_at))
        write_paragraph_labels(conn, t, b.version_id, b.paragraph_labels)
        batch = self._batch()
        write_postings(conn, t, write_chunk_rows(conn, b), b.postings,
                       known=batch.term_keys if batch is not None else None)
        conn.executemany("INSERT INTO acl_tokens VALUES (?, ?, ?)",
                         [(t, b.version_id, token) for token in sorted(set(b.acl_tokens))])
        conn.execute(
            "INSERT INTO sire VALUES (?, ?, ?, ?, ?, 'PROPOSED', ?, NULL, NULL)",
            (t, "sire-" + b.version_id[:16], b.version_id, b.node_id,
             sire_json_stored(json.dumps(b.sire.to_dict(), ensure_ascii=False, sort_keys=True)),
             b.created_at))
        total = sum(b.chunk_lengths[c.chunk_id] for c in b.chunks)
        conn.execute("UPDATE lexical_stats SET n_chunks = n_chunks + ?, "
                     "total_length = total_length + ?, generation = generation + 1 "
                     "WHERE tenant_id = ?", (len(b.chunks), total, t))

    def _move_head(self, conn: sqlite3.Connection, tenant: str, node_id: str,
                   version_id: str | None, raw_digest: str | None, run_id: str,
                   at: str) -> str | None:
        row = conn.execute("SELECT version_id FROM head_map WHERE tenant_id = ? AND node_id = ?",
                           (tenant, node_id)).fetchone()
        previous = str(row[0]) if row and row[0] is not None else None
        if previous:
            if version_id is not None:
                self._carry_vectors(conn, tenant, previous, version_id)
            self._retire_version(conn, tenant, previous)
        conn.execute(
            "INSERT INTO head_map VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, node_id) "
            "DO UPDATE SET version_id = excluded.version_id, raw_digest = excluded.raw_digest, "
            "updated_at = excluded.updated_at", (tenant, node_id, version_id, raw_digest, at))
        seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM head_history WHERE tenant_id = ?",
                           (tenant,)).fetchone()[0]
        event = "withdraw" if version_id is None else ("supersede" if previous else "ingest")
        conn.execute("INSERT INTO head_history VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (tenant, seq, node_id, version_id, previous, event, run_id, at))
        return previous

    def _carry_vectors(self, conn: sqlite3.Connection, tenant: str, old: str,
                       new: str) -> None:
        """An unchanged chunk (same text, same label) keeps its vector: the backend embeds
        only what changed. Texts are compared in full, spans read from their versions."""
        def read(sql: str, params: Sequence[object]) -> list[tuple[object, ...]]:
            return list(conn.execute(sql, params).fetchall())

        rows = self._texts.fill(read, tenant, read(
            "SELECT chunk_id, version_id, start_offset, end_offset, text, label FROM chunks "
            "WHERE tenant_id = ? AND version_id IN (?, ?) ORDER BY version_id, chunk_id",
            (tenant, old, new)), text=4, version=1, start=2, end=3)
        before: dict[tuple[object, object], object] = {}
        for r in rows:
            if r[1] == old:
                before.setdefault((r[4], r[5]), r[0])
        conn.executemany(
            "INSERT OR IGNORE INTO vectors (tenant_id, model_id, chunk_id, dim, vector) "
            "SELECT tenant_id, model_id, ?, dim, vector FROM vectors WHERE tenant_id = ? "
            "AND chunk_id = ?",
            [(r[0], tenant, before[(r[4], r[5])]) for r in rows
             if r[1] == new and (r[4], r[5]) in before])

    def _retire_version(self, conn: sqlite3.Connection, tenant: str, version_id: str) -> None:
        """Take a version out of the served set: its derived lexical rows are disposable."""
        stats = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(n_tokens), 0) FROM chunks WHERE tenant_id = ? "
            "AND version_id = ? AND is_head = 1", (tenant, version_id)).fetchone()
        delete_postings(conn, tenant, version_id)
        # A chunk id the new head holds too (an unchanged chunk) keeps its vector.
        conn.execute(
            "DELETE FROM vectors WHERE tenant_id = ? AND chunk_id IN "
            "(SELECT chunk_id FROM chunks WHERE tenant_id = ? AND version_id = ?) "
            "AND chunk_id NOT IN (SELECT chunk_id FROM chunks WHERE tenant_id = ? "
            "AND is_head = 1 AND version_id <> ?)",
            (tenant, tenant, version_id, tenant, version_id))
        conn.execute("UPDATE chunks SET is_head = 0 WHERE tenant_id = ? AND version_id = ?",
                     (tenant, version_id))
        conn.execute("UPDATE lexical_stats SET n_chunks = n_chunks - ?, "
                     "total_length = total_length - ?, generation = generation + 1 "
                     "WHERE tenant_id = ?", (stats[0], stats[1], tenant))
