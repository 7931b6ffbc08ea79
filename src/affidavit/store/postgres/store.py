"""PostgreSQL backend: many processes, one database, tenants isolated by row-level security.

Select it with ``--db postgresql://owner@host/db`` (or ``AFFIDAVIT_DB``). Opening the store
migrates the schema as the owner and then works through a pool of connections of a separate
application role that row-level security binds (:mod:`affidavit.store.postgres.setup`).
Every method runs in one transaction that first sets the transaction-local tenant
(:mod:`affidavit.store.postgres.base`); the ``WHERE tenant_id = ...`` of each statement is
kept as well, so the policy is a second wall, not the only one.

Semantics mirror :class:`~affidavit.store.sqlite.store.SQLiteStore` method by method: one
transaction per :meth:`PostgresStore.commit_version`, postings only for head chunks,
``lexical_stats`` with a generation counter, BM25 scored inside the query in double
precision with the authz filter in its WHERE clause.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from affidavit.errors import StoreError
from affidavit.policy.derived import derived_from_json, derived_to_json
from affidavit.records import AuthzContext, Chunk, ParagraphLabel, RawBlob
from affidavit.store.postgres.base import (
    CompletionHook,
    Connection,
    Row,
    check_tenant,
    ensure_tenant_rows,
    lock_for,
    open_pool,
    visible_to,
)
from affidavit.store.postgres.governance import GovernanceTables
from affidavit.store.postgres.identity import IdentityTables, claim_identity
from affidavit.store.postgres.keys import ApiKeyTables
from affidavit.store.postgres.lexical import choose_plan
from affidavit.store.postgres.locks import PostgresIngestLocks
from affidavit.store.postgres.policy import PolicyEventTables
from affidavit.store.postgres.references import ReferenceTables
from affidavit.store.postgres.setup import (
    DEFAULT_APP_ROLE,
    check_application_role,
    connect,
    prepare_database,
    redact,
)
from affidavit.store.postgres.vectors import (
    DEFAULT_EF_SEARCH,
    DEFAULT_EXACT_THRESHOLD,
    VectorTables,
)
from affidavit.store.protocol import (
    CHUNK_INSERT_COLUMNS,
    COUNTABLE_TABLES,
    ChunkRecord,
    CommitResult,
    HeadInfo,
    LexicalHit,
    LexicalStats,
    VersionBundle,
)
from affidavit.store.views import chunk_record_for, first_row_per_chunk

_CHUNK_COLUMNS = (
    "c.chunk_id, c.node_id, c.version_id, c.ordinal, c.start_offset, c.end_offset, c.text, "
    "c.label, c.heading_path_json, c.locator, c.witness"
)
_HEAD_SELECT = (
    "SELECT h.node_id, h.version_id, h.raw_digest, v.fingerprint, v.alias FROM head_map h "
    "JOIN versions v ON v.tenant_id = h.tenant_id AND v.version_id = h.version_id "
)


def _row_chunk(row: Row) -> Chunk:
    return Chunk(
        chunk_id=str(row[0]), node_id=str(row[1]), version_id=str(row[2]), ordinal=int(row[3]),
        start=int(row[4]), end=int(row[5]), text=str(row[6]), label=str(row[7]),
        heading_path=tuple(json.loads(str(row[8]))), locator=str(row[9]), witness=str(row[10]),
    )


class PostgresStore(PostgresIngestLocks, GovernanceTables, VectorTables, ApiKeyTables,
                    IdentityTables, PolicyEventTables, ReferenceTables):
    """The :class:`~affidavit.store.protocol.Store` on PostgreSQL with pgvector.

    ``dsn`` is normally the schema owner's (see :mod:`affidavit.store.postgres.setup` for
    how the application role is derived); ``app_dsn`` names the application connection
    explicitly. ``exact_vector_threshold`` is the number of readable chunks (estimated from
    the caller's readable versions) up to which vector search scans exactly instead of
    walking the HNSW index, and ``ef_search`` the HNSW candidate list of that walk for a
    caller who may read everything; it grows as the readable fraction falls
    (:func:`~affidavit.store.postgres.vectors.plan_vector_search`).
    """

    backend = "postgres"

    def __init__(self, dsn: str, *, app_dsn: str | None = None,
                 app_role: str = DEFAULT_APP_ROLE, pool_size: int = 4,
                 exact_vector_threshold: int = DEFAULT_EXACT_THRESHOLD,
                 ef_search: int = DEFAULT_EF_SEARCH):
        self.path = redact(dsn)
        self.exact_vector_threshold = exact_vector_threshold
        self.ef_search = ef_search
        self._indexed: set[str] = set()
        self._head_counts: dict[str, tuple[int, int]] = {}
        application = prepare_database(dsn, app_dsn=app_dsn, app_role=app_role)
        self._owner_dsn = None if application == dsn else dsn
        with connect(application) as conn:
            check_application_role(conn)
        self._pool = open_pool(application, size=pool_size, name="affidavit")
        self._owns_pool = True

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        if self._owns_pool:
            self._pool.close()

    @property
    def pool(self) -> ConnectionPool[Connection]:
        """The application-role connection pool (for operators' checks and tests)."""
        return self._pool

    def completing(self, hook: CompletionHook) -> PostgresStore:
        """A view of this store (same pool) whose writes of a document also run ``hook``.

        :meth:`commit_version` and :meth:`record_quarantine` of the view call the hook inside
        their transaction; closing the view leaves the pool open.
        """
        view = copy.copy(self)
        view._completion = hook
        view._owns_pool = False
        return view

    def schema_version(self) -> int:
        try:
            with self._pool.connection() as conn:
                row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        except psycopg.Error as exc:
            raise StoreError(f"cannot read the schema version: {exc}") from exc
        return int(row[0] or 0) if row else 0

    def tenant_exists(self, tenant: str) -> bool:
        return bool(self._rows(tenant, "SELECT 1 FROM tenants WHERE tenant_id = %s", (tenant,)))

    def ensure_tenant(self, tenant: str) -> None:
        with self.transaction(tenant) as conn:
            ensure_tenant_rows(conn, tenant)

    def count_rows(self, tenant: str, table: str) -> int:
        if table not in COUNTABLE_TABLES:
            raise StoreError(f"unknown table {table!r}")
        query = sql.SQL("SELECT COUNT(*) FROM {} WHERE tenant_id = %s").format(
            sql.Identifier(table))
        return int(self._rows(tenant, query, (tenant,))[0][0])

    # ------------------------------------------------------------------ ingestion
    def head(self, tenant: str, node_id: str) -> HeadInfo | None:
        rows = self._rows(tenant, _HEAD_SELECT + "WHERE h.tenant_id = %s AND h.node_id = %s",
                          (tenant, node_id))
        return HeadInfo(*(str(x) for x in rows[0])) if rows else None

    def heads(self, tenant: str) -> list[HeadInfo]:
        rows = self._rows(tenant, _HEAD_SELECT + "WHERE h.tenant_id = %s ORDER BY h.node_id",
                          (tenant,))
        return [HeadInfo(*(str(x) for x in row)) for row in rows]

    def commit_version(self, bundle: VersionBundle) -> CommitResult:
        t = check_tenant(bundle.tenant)
        with self.transaction(t) as conn:
            ensure_tenant_rows(conn, t)
            # One writer per tenant corpus at a time: head history and stats are sequences.
            lock_for(conn, "corpus", t)
            if conn.execute("SELECT 1 FROM versions WHERE tenant_id = %s AND version_id = %s",
                            (t, bundle.version_id)).fetchone():
                raise StoreError(f"version {bundle.version_id} is already stored")
            claim_identity(conn, t, bundle.node_id, bundle.blob.source_id, bundle.alias,
                           bundle.created_at, bundle.submitted_by)
            _write_blob_and_node(conn, bundle)
            _write_version_rows(conn, bundle)
            previous = _move_head(conn, t, bundle.node_id, bundle.version_id,
                                  bundle.blob.raw_digest, bundle.run_id, bundle.created_at)
            if self._completion is not None:
                self._completion.on_commit(conn, bundle)
        return CommitResult(bundle.version_id, len(bundle.chunks), previous)

    def version_metadata(self, tenant: str, version_id: str) -> str | None:
        rows = self._rows(tenant, "SELECT metadata_json FROM versions WHERE tenant_id = %s "
                                  "AND version_id = %s", (tenant, version_id))
        return str(rows[0][0]) if rows else None

    def withdraw(self, tenant: str, node_id: str, *, run_id: str, at: str) -> bool:
        with self.transaction(tenant) as conn:
            lock_for(conn, "corpus", tenant)
            row = conn.execute("SELECT version_id FROM head_map WHERE tenant_id = %s "
                               "AND node_id = %s", (tenant, node_id)).fetchone()
            if not row or row[0] is None:
                return False
            _move_head(conn, tenant, node_id, None, None, run_id, at)
            conn.execute("DELETE FROM head_map WHERE tenant_id = %s AND node_id = %s",
                         (tenant, node_id))
        return True

    # ------------------------------------------------------------------ retrieval
    def source_chunk_ids(self, tenant: str, source_id: str) -> list[str]:
        rows = self._rows(
            tenant,
            # Head chunks are the chunks of the head version: found through the head map.
            "SELECT c.chunk_id FROM nodes n JOIN head_map h ON h.tenant_id = n.tenant_id "
            "AND h.node_id = n.node_id JOIN chunks c ON c.tenant_id = h.tenant_id "
            "AND c.version_id = h.version_id WHERE n.tenant_id = %s AND n.source_id = %s "
            "AND c.is_head ORDER BY c.chunk_id", (tenant, source_id))
        return [str(r[0]) for r in rows]

    def document_chunk_ids(self, tenant: str, node_id: str) -> list[str]:
        rows = self._rows(
            tenant, "SELECT c.chunk_id FROM head_map h JOIN chunks c ON c.tenant_id = "
            "h.tenant_id AND c.version_id = h.version_id WHERE h.tenant_id = %s "
            "AND h.node_id = %s AND c.is_head ORDER BY c.ordinal, c.chunk_id", (tenant, node_id))
        return [str(r[0]) for r in rows]

    def paragraph_labels(self, tenant: str, version_id: str) -> list[ParagraphLabel]:
        rows = self._rows(tenant, "SELECT idx, label, reasons_json FROM paragraph_labels "
                                  "WHERE tenant_id = %s AND version_id = %s ORDER BY idx",
                          (tenant, version_id))
        return [ParagraphLabel(int(r[0]), str(r[1]), tuple(json.loads(str(r[2]))))
                for r in rows]

    def corpus_generation(self, tenant: str) -> int:
        rows = self._rows(tenant, "SELECT generation FROM lexical_stats WHERE tenant_id = %s",
                          (tenant,))
        return int(rows[0][0]) if rows else 0

    def label_stale_heads(self, tenant: str, label_epoch: str) -> list[HeadInfo]:
        rows = self._rows(
            tenant, _HEAD_SELECT + "WHERE h.tenant_id = %s AND EXISTS (SELECT 1 FROM chunks c "
            "WHERE c.tenant_id = h.tenant_id AND c.version_id = h.version_id "
            "AND c.label_epoch <> %s) ORDER BY h.node_id", (tenant, label_epoch))
        return [HeadInfo(*(str(x) for x in row)) for row in rows]

    def blob(self, tenant: str, raw_digest: str) -> RawBlob | None:
        rows = self._rows(
            tenant, "SELECT raw_digest, content, source_system, source_id, source_rev, "
            "fetched_at FROM blobs WHERE tenant_id = %s AND raw_digest = %s",
            (tenant, raw_digest))
        if not rows:
            return None
        r = rows[0]
        return RawBlob(str(r[0]), bytes(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]))

    def version_chunks(self, tenant: str, version_id: str) -> list[Chunk]:
        rows = self._rows(
            tenant, f"SELECT {_CHUNK_COLUMNS}, v.title, v.alias, c.derived_json FROM chunks c "
            "JOIN versions v ON v.tenant_id = c.tenant_id AND v.version_id = c.version_id "
            "WHERE c.tenant_id = %s AND c.version_id = %s ORDER BY c.ordinal, c.chunk_id",
            (tenant, version_id))
        return [replace(_row_chunk(r), derived=derived_from_json(r[13], title=str(r[11]),
                                                                 alias=str(r[12])))
                for r in rows]

    def restamp_version(self, tenant: str, version_id: str, *, label_epoch: str, witness: str,
                        fingerprint: str) -> None:
        with self.transaction(tenant) as conn:
            lock_for(conn, "corpus", tenant)
            conn.execute("UPDATE versions SET witness = %s, fingerprint = %s WHERE "
                         "tenant_id = %s AND version_id = %s",
                         (witness, fingerprint, tenant, version_id))
            conn.execute("UPDATE chunks SET label_epoch = %s, witness = %s WHERE "
                         "tenant_id = %s AND version_id = %s",
                         (label_epoch, witness, tenant, version_id))
            conn.execute("UPDATE lexical_stats SET generation = generation + 1 "
                         "WHERE tenant_id = %s", (tenant,))

    def lexical_stats(self, tenant: str) -> LexicalStats:
        rows = self._rows(tenant, "SELECT n_chunks, total_length FROM lexical_stats "
                                  "WHERE tenant_id = %s", (tenant,))
        return LexicalStats(int(rows[0][0]), int(rows[0][1])) if rows else LexicalStats(0, 0)

    def document_frequencies(self, tenant: str, terms: Sequence[str]) -> dict[str, int]:
        unique = sorted(set(terms))
        if not unique:
            return {}
        rows = self._rows(tenant, "SELECT term, COUNT(*) FROM postings WHERE tenant_id = %s "
                                  "AND term = ANY(%s) GROUP BY term", (tenant, unique))
        found = {str(r[0]): int(r[1]) for r in rows}
        return {term: found.get(term, 0) for term in unique}

    def lexical_search(self, authz: AuthzContext, term_idf: Mapping[str, float], *, k1: float,
                       b: float, avg_length: float, limit: int,
                       postings: int | None = None) -> list[LexicalHit]:
        with self.transaction(authz.tenant) as conn:
            plan = choose_plan(conn, authz, term_idf, k1=k1, b=b, avg_length=avg_length,
                               limit=limit, postings=postings)
            rows = [] if plan is None else conn.execute(plan.statement, plan.params).fetchall()
        return [LexicalHit(str(r[0]), float(r[1])) for r in rows]

    def explain_lexical(self, authz: AuthzContext, term_idf: Mapping[str, float], *,
                        k1: float, b: float, avg_length: float, limit: int) -> list[str]:
        """The plan :meth:`lexical_search` chooses and its ``EXPLAIN (ANALYZE, BUFFERS)``."""
        with self.transaction(authz.tenant) as conn:
            plan = choose_plan(conn, authz, term_idf, k1=k1, b=b, avg_length=avg_length,
                               limit=limit)
            if plan is None:
                return ["no statement: nothing can match"]
            rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + plan.statement,
                                plan.params).fetchall()
        return [f"plan {plan.name}: {plan.postings} postings, the caller's token rows "
                f"counted {plan.readable}"] + [str(r[0]) for r in rows]

    def get_chunks(self, authz: AuthzContext, chunk_ids: Sequence[str]) -> list[ChunkRecord]:
        ids = sorted(set(chunk_ids))
        visible, visible_params = visible_to(authz)
        if not ids or visible == "FALSE":
            return []
        rows = self._rows(
            authz.tenant,
            f"SELECT {_CHUNK_COLUMNS}, v.title, v.alias, n.source_id, n.source_system, "
            "c.is_head, c.derived_json FROM chunks c JOIN versions v "
            "ON v.tenant_id = c.tenant_id "
            "AND v.version_id = c.version_id JOIN nodes n ON n.tenant_id = c.tenant_id "
            "AND n.node_id = c.node_id WHERE c.tenant_id = %s AND c.chunk_id = ANY(%s) "
            f"AND {visible}", (authz.tenant, ids, *visible_params))
        by_id = {str(r[0]): r for r in rows}
        return [chunk_record_for(authz, _row_chunk(by_id[i]), title=str(by_id[i][11]),
                                 alias=str(by_id[i][12]), source_id=str(by_id[i][13]),
                                 source_system=str(by_id[i][14]), is_head=bool(by_id[i][15]),
                                 derived_json=by_id[i][16])
                for i in chunk_ids if i in by_id]

    def chunks_with_label(self, tenant: str, chunk_ids: Sequence[str],
                          label: str) -> list[Chunk]:
        ids = sorted(set(chunk_ids))
        if not ids:
            return []
        rows = self._rows(
            tenant,
            f"SELECT {_CHUNK_COLUMNS}, v.title, v.alias, c.derived_json FROM chunks c "
            "JOIN versions v ON v.tenant_id = c.tenant_id AND v.version_id = c.version_id "
            "WHERE c.tenant_id = %s AND c.label = %s AND c.chunk_id = ANY(%s) "
            "ORDER BY c.chunk_id, c.is_head DESC, v.created_at DESC, c.version_id DESC",
            (tenant, label, ids))
        return [replace(_row_chunk(r), derived=derived_from_json(r[13], title=str(r[11]),
                                                                 alias=str(r[12])))
                for r in first_row_per_chunk(rows)]


# ---------------------------------------------------------------------- version writes


def _write_blob_and_node(conn: Connection, b: VersionBundle) -> None:
    blob = b.blob
    conn.execute("INSERT INTO blobs VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                 "ON CONFLICT DO NOTHING",
                 (b.tenant, blob.raw_digest, blob.content, len(blob.content),
                  blob.source_system, blob.source_id, blob.source_rev, blob.fetched_at))
    conn.execute("INSERT INTO nodes VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                 (b.tenant, b.node_id, blob.source_system, blob.source_id, b.created_at))
    row = conn.execute("SELECT COUNT(*) FROM aliases WHERE tenant_id = %s AND node_id = %s",
                       (b.tenant, b.node_id)).fetchone()
    epoch = int(row[0]) if row else 0
    for alias_type, value in (("path", b.alias), ("title", b.title)):
        conn.execute("INSERT INTO aliases VALUES (%s, %s, %s, %s, %s, %s) "
                     "ON CONFLICT DO NOTHING",
                     (b.tenant, b.node_id, alias_type, value, epoch, b.created_at))


def _write_version_rows(conn: Connection, b: VersionBundle) -> None:
    t = b.tenant
    conn.execute(
        "INSERT INTO versions VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (t, b.version_id, b.node_id, b.blob.raw_digest, b.fingerprint, b.title, b.alias,
         b.metadata_json, b.declared_label, b.normalized_text, b.witness, b.run_id,
         b.created_at))
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO paragraph_labels VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [(t, b.version_id, pl.index, start, end, pl.label, json.dumps(list(pl.reasons)))
             for pl, start, end in b.paragraph_labels])
        cur.executemany(
            f"INSERT INTO chunks ({CHUNK_INSERT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, "
            "%s, %s, %s, %s, %s, %s, TRUE, %s)",
            [(t, c.chunk_id, c.version_id, c.node_id, c.ordinal, c.start, c.end, c.text,
              c.label, json.dumps(list(c.heading_path), ensure_ascii=False), c.locator,
              c.witness, b.chunk_lengths[c.chunk_id], b.label_epoch) for c in b.chunks])
        write_derived_labels(cur, t, b.chunks)
        # Postings are keyed by chunk id: an unchanged chunk, still in the previous head
        # until it retires, gets this version's postings, which are the same.
        cur.execute("DELETE FROM postings WHERE tenant_id = %s AND chunk_id = ANY(%s)",
                    (t, sorted(b.postings)))
        cur.executemany(
            "INSERT INTO postings (tenant_id, term, chunk_id, tf, version_id) "
            "VALUES (%s, %s, %s, %s, %s)",
            [(t, term, chunk_id, tf, b.version_id)
             for chunk_id, pairs in sorted(b.postings.items())
             for term, tf in pairs])
        cur.executemany("INSERT INTO acl_tokens VALUES (%s, %s, %s)",
                        [(t, b.version_id, token) for token in sorted(set(b.acl_tokens))])
    conn.execute(
        "INSERT INTO sire VALUES (%s, %s, %s, %s, %s, 'PROPOSED', %s, NULL, NULL)",
        (t, "sire-" + b.version_id[:16], b.version_id, b.node_id,
         json.dumps(b.sire.to_dict(), ensure_ascii=False, sort_keys=True), b.created_at))
    total = sum(b.chunk_lengths[c.chunk_id] for c in b.chunks)
    conn.execute("UPDATE lexical_stats SET n_chunks = n_chunks + %s, "
                 "total_length = total_length + %s, generation = generation + 1 "
                 "WHERE tenant_id = %s", (len(b.chunks), total, t))


def write_derived_labels(cur: psycopg.Cursor[Any], tenant: str,
                         chunks: Sequence[Chunk]) -> None:
    """The labels of each chunk's title, path and headings (migration 10), in one statement
    by chunk id and version, so that the chunk insert and the bulk copy keep their column
    lists."""
    cur.execute(
        "UPDATE chunks c SET derived_json = d.derived_json "
        "FROM unnest(%s::text[], %s::text[], %s::text[]) AS d(chunk_id, version_id, "
        "derived_json) WHERE c.tenant_id = %s AND c.chunk_id = d.chunk_id "
        "AND c.version_id = d.version_id",
        ([c.chunk_id for c in chunks], [c.version_id for c in chunks],
         [derived_to_json(c.derived) for c in chunks], tenant))


def _move_head(conn: Connection, tenant: str, node_id: str, version_id: str | None,
               raw_digest: str | None, run_id: str, at: str) -> str | None:
    row = conn.execute("SELECT version_id FROM head_map WHERE tenant_id = %s AND node_id = %s",
                       (tenant, node_id)).fetchone()
    previous = str(row[0]) if row and row[0] is not None else None
    if previous:
        if version_id is not None:
            # An unchanged chunk (same text, same label) keeps its vector: the backend
            # embeds only what changed.
            conn.execute(
                "INSERT INTO vectors (tenant_id, model_id, chunk_id, dim, embedding, version_id) "
                "SELECT v.tenant_id, v.model_id, n.chunk_id, v.dim, v.embedding, n.version_id "
                "FROM chunks o "
                "JOIN vectors v ON v.tenant_id = o.tenant_id AND v.chunk_id = o.chunk_id "
                "JOIN chunks n ON n.tenant_id = o.tenant_id AND n.version_id = %s "
                "AND n.text = o.text AND n.label = o.label "
                "WHERE o.tenant_id = %s AND o.version_id = %s ON CONFLICT DO NOTHING",
                (version_id, tenant, previous))
        _retire_version(conn, tenant, previous)
    if version_id is not None:
        # Every vector of the new head's chunks names it (migration 18): the exact vector
        # scan finds vectors by their version, so one left naming the retired version
        # would be missed (never admitted: the scan checks that (chunk, version) row).
        conn.execute(
            "UPDATE vectors SET version_id = %s WHERE tenant_id = %s AND chunk_id IN "
            "(SELECT chunk_id FROM chunks WHERE tenant_id = %s AND version_id = %s) "
            "AND version_id IS DISTINCT FROM %s",
            (version_id, tenant, tenant, version_id, version_id))
    conn.execute(
        "INSERT INTO head_map VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant_id, node_id) "
        "DO UPDATE SET version_id = EXCLUDED.version_id, raw_digest = EXCLUDED.raw_digest, "
        "updated_at = EXCLUDED.updated_at", (tenant, node_id, version_id, raw_digest, at))
    seq_row = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM head_history "
                           "WHERE tenant_id = %s", (tenant,)).fetchone()
    seq = int(seq_row[0]) if seq_row else 1
    event = "withdraw" if version_id is None else ("supersede" if previous else "ingest")
    conn.execute("INSERT INTO head_history VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                 (tenant, seq, node_id, version_id, previous, event, run_id, at))
    return previous


def _retire_version(conn: Connection, tenant: str, version_id: str) -> None:
    """Take a version out of the served set: its derived lexical and vector rows go."""
    stats = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(n_tokens), 0) FROM chunks WHERE tenant_id = %s "
        "AND version_id = %s AND is_head", (tenant, version_id)).fetchone()
    # A chunk id the new head holds too (an unchanged chunk) keeps its postings and vector.
    retired = [str(r[0]) for r in conn.execute(
        "SELECT chunk_id FROM chunks WHERE tenant_id = %s AND version_id = %s "
        "EXCEPT SELECT chunk_id FROM chunks WHERE tenant_id = %s AND is_head "
        "AND version_id <> %s", (tenant, version_id, tenant, version_id)).fetchall()]
    conn.execute("DELETE FROM postings WHERE tenant_id = %s AND chunk_id = ANY(%s)",
                 (tenant, retired))
    conn.execute("DELETE FROM vectors WHERE tenant_id = %s AND chunk_id = ANY(%s)",
                 (tenant, retired))
    conn.execute("UPDATE chunks SET is_head = FALSE WHERE tenant_id = %s AND version_id = %s",
                 (tenant, version_id))
    n_chunks, n_tokens = (int(stats[0]), int(stats[1])) if stats else (0, 0)
    conn.execute("UPDATE lexical_stats SET n_chunks = n_chunks - %s, "
                 "total_length = total_length - %s, generation = generation + 1 "
                 "WHERE tenant_id = %s", (n_chunks, n_tokens, tenant))
