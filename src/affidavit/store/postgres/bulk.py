"""A COPY fast path for loading many new document versions into PostgreSQL at once.

:func:`bulk_commit` writes a batch of :class:`~affidavit.store.protocol.VersionBundle` values in
one transaction with ``COPY``, for initial loads and migrations of large corpora; the
result is what the same bundles committed one by one through ``commit_version`` produce
(head map, head history, postings of head chunks, statistics and generation). It only
takes versions of nodes that have no head yet: superseding stays with ``commit_version``,
which retires the old version's derived rows. :func:`bulk_put_vectors` does the same for
vectors, and builds the model's HNSW index afterwards (cheaper than maintaining it row by
row).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np

from affidavit.errors import StoreError
from affidavit.store.postgres.base import Connection, ensure_tenant_rows, lock_for
from affidavit.store.postgres.store import PostgresStore, write_derived_labels
from affidavit.store.protocol import VersionBundle

_COPIES = {
    "blobs": "tenant_id, raw_digest, content, size, source_system, source_id, source_rev, "
             "fetched_at",
    "nodes": "tenant_id, node_id, source_system, source_id, created_at",
    "identity_claims": "tenant_id, node_id, alias, claimed_at",
    "aliases": "tenant_id, node_id, alias_type, alias_value, epoch, created_at",
    "versions": "tenant_id, version_id, node_id, raw_digest, fingerprint, title, alias, "
                "metadata_json, declared_label, normalized_text, witness, run_id, created_at",
    "paragraph_labels": "tenant_id, version_id, idx, start_offset, end_offset, label, "
                        "reasons_json",
    "chunks": "tenant_id, chunk_id, version_id, node_id, ordinal, start_offset, end_offset, "
              "text, label, heading_path_json, locator, witness, n_tokens, is_head, label_epoch",
    "postings": "tenant_id, term, chunk_id, tf, version_id",
    "acl_tokens": "tenant_id, version_id, token",
    "sire": "tenant_id, sire_id, version_id, node_id, tuple_json, state, proposed_at",
    "head_map": "tenant_id, node_id, version_id, raw_digest, updated_at",
    "head_history": "tenant_id, seq, node_id, version_id, event, run_id, at",
}


def bulk_commit(store: PostgresStore, bundles: Sequence[VersionBundle]) -> int:
    """Commit new versions of new nodes of one tenant in one transaction; returns chunks."""
    if not bundles:
        return 0
    tenant = bundles[0].tenant
    if any(b.tenant != tenant for b in bundles):
        raise StoreError("a bulk commit holds the versions of one tenant")
    with store.transaction(tenant) as conn:
        ensure_tenant_rows(conn, tenant)
        lock_for(conn, "corpus", tenant)
        _refuse_existing_nodes(conn, tenant, bundles)
        row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM head_history WHERE tenant_id = %s",
                           (tenant,)).fetchone()
        first_seq = (int(row[0]) if row else 0) + 1
        digests = sorted({b.blob.raw_digest for b in bundles})
        stored = {str(r[0]) for r in conn.execute(
            "SELECT raw_digest FROM blobs WHERE tenant_id = %s AND raw_digest = ANY(%s)",
            (tenant, digests)).fetchall()}
        for table, rows in _rows_by_table(bundles, first_seq, stored).items():
            _copy(conn, table, rows)
        with conn.cursor() as cur:
            write_derived_labels(cur, tenant, [c for b in bundles for c in b.chunks])
        n_chunks = sum(len(b.chunks) for b in bundles)
        total = sum(sum(b.chunk_lengths[c.chunk_id] for c in b.chunks) for b in bundles)
        conn.execute("UPDATE lexical_stats SET n_chunks = n_chunks + %s, "
                     "total_length = total_length + %s, generation = generation + 1 "
                     "WHERE tenant_id = %s", (n_chunks, total, tenant))
    return n_chunks


def bulk_put_vectors(store: PostgresStore, tenant: str, model_id: str,
                     chunk_ids: Sequence[str], matrix: np.ndarray) -> int:
    """COPY one model's vectors (rows of ``matrix``) for new chunks; returns how many."""
    vectors = np.asarray(matrix, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(chunk_ids):
        raise StoreError("one vector row per chunk id is needed")
    if not np.all(np.isfinite(vectors)):
        raise StoreError("vectors must be finite")
    dim = int(vectors.shape[1])
    with store.transaction(tenant) as conn:
        lock_for(conn, "corpus", tenant)  # after any head move (see put_vectors)
        conn.execute("INSERT INTO vector_models VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                     (tenant, model_id, dim))
        pinned = conn.execute("SELECT dim FROM vector_models WHERE tenant_id = %s "
                              "AND model_id = %s", (tenant, model_id)).fetchone()
        if pinned is None or int(pinned[0]) != dim:
            raise StoreError(f"model {model_id!r} does not have {dim}-dimensional vectors")
        rows = ((tenant, model_id, cid, dim, "[" + ",".join(map(repr, row.tolist())) + "]")
                for cid, row in zip(chunk_ids, vectors, strict=True))
        _copy(conn, "vectors", rows, columns="tenant_id, model_id, chunk_id, dim, embedding",
              insert=("INSERT INTO vectors (tenant_id, model_id, chunk_id, dim, embedding, "
                      "version_id) SELECT s.tenant_id, s.model_id, s.chunk_id, s.dim, "
                      "s.embedding, h.version_id FROM bulk_vectors s LEFT JOIN chunks h "
                      "ON h.tenant_id = s.tenant_id AND h.chunk_id = s.chunk_id "
                      "AND h.is_head"))
    return len(chunk_ids)


def _refuse_existing_nodes(conn: Connection, tenant: str,
                           bundles: Sequence[VersionBundle]) -> None:
    nodes = [b.node_id for b in bundles]
    if len(set(nodes)) != len(nodes):
        raise StoreError("a bulk commit holds at most one version per node")
    row = conn.execute("SELECT node_id FROM head_map WHERE tenant_id = %s "
                       "AND node_id = ANY(%s) LIMIT 1", (tenant, nodes)).fetchone()
    if row is not None:
        raise StoreError(f"node {row[0]} already has a head version: use commit_version")


def _rows_by_table(bundles: Sequence[VersionBundle], first_seq: int,
                   stored_blobs: set[str]) -> dict[str, list[tuple[object, ...]]]:
    rows: dict[str, list[tuple[object, ...]]] = {table: [] for table in _COPIES}
    blobs = set(stored_blobs)
    for seq, b in enumerate(bundles, start=first_seq):
        t, blob = b.tenant, b.blob
        if blob.raw_digest not in blobs:  # identical bytes, one blob (content-addressed)
            blobs.add(blob.raw_digest)
            rows["blobs"].append((t, blob.raw_digest, blob.content, len(blob.content),
                                  blob.source_system, blob.source_id, blob.source_rev,
                                  blob.fetched_at))
        rows["nodes"].append((t, b.node_id, blob.source_system, blob.source_id, b.created_at))
        rows["identity_claims"].append((t, b.node_id, b.alias, b.created_at))
        rows["aliases"] += [(t, b.node_id, "path", b.alias, 0, b.created_at),
                            (t, b.node_id, "title", b.title, 0, b.created_at)]
        rows["versions"].append((t, b.version_id, b.node_id, blob.raw_digest, b.fingerprint,
                                 b.title, b.alias, b.metadata_json, b.declared_label,
                                 b.normalized_text, b.witness, b.run_id, b.created_at))
        rows["paragraph_labels"] += [(t, b.version_id, pl.index, start, end, pl.label,
                                      json.dumps(list(pl.reasons)))
                                     for pl, start, end in b.paragraph_labels]
        rows["chunks"] += [(t, c.chunk_id, c.version_id, c.node_id, c.ordinal, c.start, c.end,
                            c.text, c.label,
                            json.dumps(list(c.heading_path), ensure_ascii=False), c.locator,
                            c.witness, b.chunk_lengths[c.chunk_id], True, b.label_epoch)
                           for c in b.chunks]
        rows["postings"] += [(t, term, chunk_id, tf, b.version_id)
                             for chunk_id, pairs in sorted(b.postings.items())
                             for term, tf in pairs]
        rows["acl_tokens"] += [(t, b.version_id, token) for token in sorted(set(b.acl_tokens))]
        rows["sire"].append((t, "sire-" + b.version_id[:16], b.version_id, b.node_id,
                             json.dumps(b.sire.to_dict(), ensure_ascii=False, sort_keys=True),
                             "PROPOSED", b.created_at))
        rows["head_map"].append((t, b.node_id, b.version_id, blob.raw_digest, b.created_at))
        rows["head_history"].append((t, seq, b.node_id, b.version_id, "ingest", b.run_id,
                                     b.created_at))
    return rows


def _copy(conn: Connection, table: str, rows: Iterable[tuple[object, ...]], *,
          columns: str | None = None, insert: str | None = None) -> None:
    """COPY into a temporary table, then INSERT ... SELECT into the real one.

    PostgreSQL refuses COPY FROM into a table under row-level security; going through a
    temporary table keeps the policy's WITH CHECK on every row that lands. ``insert``
    replaces the plain INSERT ... SELECT from the temporary table ``bulk_<table>``.
    """
    names = columns or _COPIES[table]
    staging = f"bulk_{table}"
    conn.execute(f"CREATE TEMPORARY TABLE {staging} (LIKE {table}) ON COMMIT DROP")
    with conn.cursor() as cur, cur.copy(f"COPY {staging} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    conn.execute(insert or f"INSERT INTO {table} ({names}) SELECT {names} FROM {staging}")
    conn.execute(f"DROP TABLE {staging}")
