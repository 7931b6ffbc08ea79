"""SQLite vector plane: float32 vectors per (chunk, model), exact cosine search.

Search is prefiltered: only rows the caller may read are loaded and scored, so there is no
top-k taken first and filtered after. A mixin of :class:`~affidavit.store.sqlite.store.SQLiteStore`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from affidavit.errors import StoreError
from affidavit.records import AuthzContext
from affidavit.store.protocol import VectorHit

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the functions that handle vectors: opening the store for a lexical
# search (every CLI command) does not load it.


def visibility_sql(authz: AuthzContext, *, per_row: bool = False) -> tuple[str, list[object]]:
    """SQL admitting a chunk row ``c`` only for this context (shared with lexical search).

    ``per_row`` probes each row's own version instead: right when a handful of known chunk
    ids is checked (reading back hits), wrong when a search visits many rows.
    """
    labels = sorted(authz.granted_labels)
    tokens = sorted(authz.tokens)
    if not labels or not tokens:
        return "0", []
    marks_l = ",".join("?" * len(labels))
    marks_t = ",".join("?" * len(tokens))
    # A chunk labelled under another sensitivity policy than the reader's may carry a stale
    # label: it is not admitted until it is re-labelled from its blob.
    epoch, epoch_params = (("c.label_epoch = ? AND ", [authz.label_epoch])
                           if authz.label_epoch is not None else ("", []))
    if per_row:
        clause = epoch + (
            f"c.is_head = 1 AND c.label IN ({marks_l}) AND EXISTS ("
            "SELECT 1 FROM acl_tokens a WHERE a.tenant_id = c.tenant_id "
            f"AND a.version_id = c.version_id AND a.token IN ({marks_t}))"
        )
        return clause, [*epoch_params, *labels, *tokens]
    # Driven by the caller's tokens (index acl_by_token): the set of readable versions is
    # computed once, not probed per chunk, which matters for principals with many tokens.
    clause = epoch + (
        f"c.is_head = 1 AND c.label IN ({marks_l}) AND c.version_id IN ("
        "SELECT a.version_id FROM acl_tokens a WHERE a.tenant_id = ? "
        f"AND a.token IN ({marks_t}))"
    )
    return clause, [*epoch_params, *labels, authz.tenant, *tokens]


def egress_sql(labels: Sequence[str] | None,
               label_epoch: str | None) -> tuple[str, list[object]]:
    """SQL (``AND ...`` terms) admitting only chunks whose text may be sent to the
    embedding backend: a declared label, labelled under the current policy."""
    clause, params = "", list[object]()
    if labels is not None:
        wanted = sorted(set(labels))
        clause += f"AND c.label IN ({','.join('?' * len(wanted)) or 'NULL'}) "
        params.extend(wanted)
    if label_epoch is not None:
        clause += "AND c.label_epoch = ? "
        params.append(label_epoch)
    return clause, params


def to_blob(vector: Sequence[float]) -> bytes:
    import numpy as np

    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise StoreError("a vector must be one-dimensional and finite")
    return array.tobytes()


def top_k(ids: Sequence[str], matrix: np.ndarray, query: Sequence[float],
          limit: int) -> list[VectorHit]:
    """Exact cosine similarity; ties broken by chunk id."""
    if not ids or limit <= 0:
        return []
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    if q.shape[0] != matrix.shape[1]:
        raise StoreError(f"query has {q.shape[0]} dimensions, vectors have {matrix.shape[1]}")
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
    norms[norms == 0] = 1.0
    # einsum, not BLAS: a row's score must not depend on which other rows are readable.
    scores = np.einsum("ij,j->i", matrix, q, optimize=False) / norms
    order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))[:limit]
    return [VectorHit(ids[i], float(scores[i])) for i in order]


class VectorTables:
    """Vectors by (tenant, model, chunk)."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def _chunk_texts(self, tenant: str, rows: Sequence[tuple[object, ...]]
                     ) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def chunks_missing_vectors(self, tenant: str, model_id: str, limit: int, *,
                               labels: Sequence[str] | None = None,
                               label_epoch: str | None = None) -> list[tuple[str, str]]:
        egress, egress_params = egress_sql(labels, label_epoch)
        rows = self._read(
            "SELECT c.chunk_id, c.text, c.version_id, c.start_offset, c.end_offset FROM chunks c "
            "WHERE c.tenant_id = ? AND c.is_head = 1 "
            f"{egress}AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.tenant_id = c.tenant_id "
            "AND v.model_id = ? AND v.chunk_id = c.chunk_id) ORDER BY c.chunk_id LIMIT ?",
            (tenant, *egress_params, model_id, limit))
        return [(str(r[0]), str(r[1])) for r in self._chunk_texts(tenant, rows)]

    def put_vectors(self, tenant: str, model_id: str,
                    vectors: Mapping[str, Sequence[float]]) -> int:
        rows = [(tenant, model_id, cid, len(vec), to_blob(vec))
                for cid, vec in sorted(vectors.items())]
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
        return len(rows)

    def vector_search(self, authz: AuthzContext, model_id: str, query: Sequence[float], *,
                      limit: int) -> list[VectorHit]:
        visible, params = visibility_sql(authz)
        rows = self._read(
            "SELECT v.chunk_id, v.vector FROM vectors v JOIN chunks c "
            "ON c.tenant_id = v.tenant_id AND c.chunk_id = v.chunk_id "
            f"WHERE v.tenant_id = ? AND v.model_id = ? AND {visible} ORDER BY v.chunk_id",
            (authz.tenant, model_id, *params))
        if not rows:
            return []
        import numpy as np

        ids = [str(r[0]) for r in rows]
        matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32)  # type: ignore[call-overload]
                            for r in rows])
        return top_k(ids, matrix, query, limit)

    def head_vectors(self, tenant: str, model_id: str) -> tuple[list[str], list[bytes]]:
        rows = self._read(
            "SELECT v.chunk_id, v.vector FROM vectors v JOIN chunks c ON c.tenant_id = "
            "v.tenant_id AND c.chunk_id = v.chunk_id WHERE v.tenant_id = ? AND v.model_id = ? "
            "AND c.is_head = 1 ORDER BY v.chunk_id", (tenant, model_id))
        return [str(r[0]) for r in rows], [bytes(r[1]) for r in rows]  # type: ignore[call-overload]
