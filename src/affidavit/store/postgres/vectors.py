"""PostgreSQL vector plane on pgvector, searched with the authz filter inside the query.

One ``vectors`` table for every model: the ``embedding`` column has no fixed dimension,
``vector_models`` pins one dimension per (tenant, model), and each (model, dimension) gets
a partial HNSW index on the cast expression ``embedding::vector(<dim>)``
(:meth:`VectorTables.ensure_vector_index`, built with the owner connection).

Search never takes a top-k and filters it afterwards. It first estimates the vectors of the
versions the caller may read (the ``acl_tokens`` index, see :meth:`VectorTables._plan`),
and :func:`plan_vector_search` decides:

* at or below ``exact_vector_threshold`` (or with no index) it scans exactly the vectors
  of those versions and orders them by cosine distance: the exact top-k, ties broken by
  chunk id, each admitted by its own chunk row (:func:`_exact_scan`). Its cost grows with
  the readable rows, not the corpus: at 1,000,000 chunks a caller reading 10% is
  answered exactly;
* above it, the HNSW index is walked with ``hnsw.iterative_scan = strict_order`` and the
  same filter in the WHERE clause, so the scan continues until enough readable rows are
  found. The candidate list (``hnsw.ef_search``) and the scan's stop (``max_scan_tuples``)
  grow as the readable fraction falls, set with ``SET LOCAL`` for this query alone: a walk
  sized for the whole corpus holds a tenth as many readable candidates when a tenth is
  readable, and its recall falls with them. The result says it is approximate
  (``VectorHit.exact`` is False). If the walk stopped before finding ``limit`` readable
  rows, the exact scan answers instead: never fewer hits than the caller may read.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from psycopg import sql

from affidavit.config.settings import HNSW_EF_SEARCH_MAX, StoreSettings
from affidavit.errors import StoreError
from affidavit.records import AuthzContext
from affidavit.store.postgres.base import (
    Connection,
    PostgresBase,
    Row,
    label_epoch_sql,
    lock_for,
    visible_to,
)
from affidavit.store.postgres.setup import connect
from affidavit.store.protocol import VectorHit

HNSW_MAX_DIM = 2000
"""pgvector indexes ``vector`` columns of at most 2,000 dimensions."""
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128
"""The graph's links per node and build candidate list. pgvector's defaults (16, 64) gave
recall@10 0.926 at the largest walk (``ef_search`` 1,000) for a caller reading 10% of
100,000 chunks (``benchmarks/postgres_scale.py``); these give 0.966, and the walk is no
slower. The build costs about five times as long: at 1,000,000 chunks on two shared cores
the (16, 64) graph took 17 minutes, this one had reached a fifth of its rows after 18. An
index built before keeps its own graph."""

DEFAULT_EXACT_THRESHOLD = StoreSettings.exact_vector_threshold
"""Readable chunks up to which vector search scans exactly (``[store]
exact_vector_threshold``). The exact scan's cost grows with the vectors of the caller's
readable versions, not with the corpus: at 1,000,000 chunks (``benchmarks/postgres_scale.py
--shares 100,50,20,10,1``, p50 on two shared cores) it took 14-20 ms for a caller reading
1%, 72-120 ms for 10%, 132-139 ms for 20%, 295-299 ms for half and 498-530 ms for all.
Above the threshold the HNSW walk (this module's default graph, 32 links and a build list
of 128) took 87-104 ms for recall@10 0.90-0.93 on that corpus's random-projection vectors
(a (16, 64) graph: 51-67 ms, 0.70-0.77). A deployment that wants exact answers for wider
readers raises the threshold and pays the scan."""
EXACT_ROUNDS = 2
"""Batches of nearest candidates checked in turn before the exact scan checks every row."""
DEFAULT_EF_SEARCH = StoreSettings.hnsw_ef_search
"""``[store] hnsw_ef_search``: the candidate list of a walk over a corpus the caller may
read whole; it is divided by the readable fraction, up to :data:`EF_SEARCH_MAX`."""
EF_SEARCH_MAX = HNSW_EF_SEARCH_MAX
MIN_SCAN_TUPLES = 20_000
MAX_SCAN_TUPLES = 2_000_000
SCAN_MARGIN = 4
"""The walk may visit this many times the tuples its candidate list needs at the readable
fraction before it stops (pgvector's ``hnsw.max_scan_tuples``)."""


HEAD_VERSION = ("SELECT h.version_id FROM chunks h WHERE h.tenant_id = %s AND h.chunk_id = %s "
                "AND h.is_head LIMIT 1")
"""The head version of a chunk (a chunk id names one node, which has one head version)."""


@dataclass(frozen=True)
class VectorPlan:
    """How one filtered vector search runs: exactly, or by an HNSW walk of a given size."""

    exact: bool
    readable_fraction: float  # from the estimate; a lower bound when counting stopped
    ef_search: int = 0
    max_scan_tuples: int = 0
    readable: int = 0  # the estimate the plan was made from


def plan_vector_search(readable: int, total: int, limit: int, *, exact_threshold: int,
                       ef_search: int, max_scan_tuples: int = MAX_SCAN_TUPLES) -> VectorPlan:
    """The plan for a caller who may read ``readable`` of ``total`` head chunks.

    ``readable`` may be a count stopped at ``exact_threshold + 1``: the fraction is then a
    lower bound, so the walk is sized for fewer readable rows than there are (a larger
    candidate list: more recall, never less).
    """
    fraction = 1.0 if total <= 0 else min(1.0, max(readable, 1) / total)
    if readable <= exact_threshold:
        return VectorPlan(True, fraction, readable=readable)
    ef = min(EF_SEARCH_MAX, max(limit, ef_search, math.ceil(ef_search / fraction)))
    scan = math.ceil(SCAN_MARGIN * max(ef, limit) / fraction)
    return VectorPlan(False, fraction, ef, max(1, min(max_scan_tuples,
                                                      max(MIN_SCAN_TUPLES, scan))), readable)


def vector_text(vector: Sequence[float]) -> tuple[int, str]:
    """(dimension, pgvector literal) of a finite one-dimensional float32 vector."""
    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or array.shape[0] == 0 or not np.all(np.isfinite(array)):
        raise StoreError("a vector must be one-dimensional, non-empty and finite")
    return int(array.shape[0]), "[" + ",".join(repr(float(x)) for x in array) + "]"


def hnsw_index_name(model_id: str, dim: int) -> str:
    """The name of the partial HNSW index of one (model, dimension)."""
    return "vectors_hnsw_" + hashlib.sha256(f"{model_id}\n{dim}".encode()).hexdigest()[:16]


class VectorTables(PostgresBase):
    """Vectors by (tenant, model, chunk), with exact and HNSW prefiltered search."""

    _owner_dsn: str | None = None
    _indexed: set[str]
    _head_counts: dict[str, tuple[int, int]]
    exact_vector_threshold: int = DEFAULT_EXACT_THRESHOLD
    ef_search: int = DEFAULT_EF_SEARCH
    max_scan_tuples: int = MAX_SCAN_TUPLES

    def chunks_missing_vectors(self, tenant: str, model_id: str, limit: int, *,
                               labels: Sequence[str] | None = None,
                               label_epoch: str | None = None) -> list[tuple[str, str]]:
        # Only what the declared embedding egress admits is ever read for the backend.
        egress, egress_params = "", list[object]()
        if labels is not None:
            egress += "AND c.label = ANY(%s) "
            egress_params.append(sorted(set(labels)))
        if label_epoch is not None:
            egress += "AND c.label_epoch = %s "
            egress_params.append(label_epoch)
        rows = self._rows(
            tenant,
            "SELECT c.chunk_id, c.text FROM chunks c WHERE c.tenant_id = %s AND c.is_head "
            f"{egress}AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.tenant_id = c.tenant_id "
            "AND v.model_id = %s AND v.chunk_id = c.chunk_id) ORDER BY c.chunk_id LIMIT %s",
            (tenant, *egress_params, model_id, limit))
        return [(str(r[0]), str(r[1])) for r in rows]

    def put_vectors(self, tenant: str, model_id: str,
                    vectors: Mapping[str, Sequence[float]]) -> int:
        encoded = [(cid, *vector_text(vec)) for cid, vec in sorted(vectors.items())]
        dims = {dim for _, dim, _ in encoded}
        if len(dims) > 1:
            raise StoreError(f"vectors of one model must share a dimension, got {sorted(dims)}")
        if not encoded:
            return 0
        dim = dims.pop()
        with self.transaction(tenant) as conn:
            # After any head move in progress (they hold the same lock): the head version
            # read below is then the one that move left, and a later move renames the
            # vector (_move_head), so a vector never keeps naming a retired version.
            lock_for(conn, "corpus", tenant)
            _pin_dimension(conn, tenant, model_id, dim)
            with conn.cursor() as cur:
                # The vector names its chunk's head version (see _exact_scan).
                cur.executemany(
                    "INSERT INTO vectors (tenant_id, model_id, chunk_id, dim, embedding, "
                    "version_id) VALUES (%s, %s, %s, %s, %s::vector, "
                    f"({HEAD_VERSION})) ON CONFLICT (tenant_id, model_id, chunk_id) DO UPDATE "
                    "SET dim = EXCLUDED.dim, embedding = EXCLUDED.embedding, "
                    "version_id = EXCLUDED.version_id",
                    [(tenant, model_id, cid, d, text, tenant, cid) for cid, d, text in encoded])
        self.ensure_vector_index(model_id, dim)
        return len(encoded)

    def ensure_vector_index(self, model_id: str, dim: int, *,
                            build_memory: str | None = None, m: int = HNSW_M,
                            ef_construction: int = HNSW_EF_CONSTRUCTION) -> bool:
        """Build the HNSW index of (model, dim) if missing and possible; True if it exists.

        ``build_memory`` (e.g. ``"2GB"``) raises ``maintenance_work_mem`` for the build:
        a graph that does not fit in it is built far more slowly. ``m`` and
        ``ef_construction`` trade build time for recall (see :data:`HNSW_EF_CONSTRUCTION`).
        """
        name = hnsw_index_name(model_id, dim)
        with self._pool.connection() as conn:
            if self._index_exists(conn, name):
                return True
        if self._owner_dsn is None or dim > HNSW_MAX_DIM:
            return False
        with connect(self._owner_dsn, autocommit=True) as conn:
            if build_memory is not None:
                conn.execute("SELECT set_config('maintenance_work_mem', %s, false)",
                             (build_memory,))
            conn.execute(sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON vectors USING hnsw "
                "((embedding::vector({})) vector_cosine_ops) WITH (m = {}, ef_construction = {}) "
                "WHERE model_id = {} AND dim = {}"
            ).format(sql.Identifier(name), sql.SQL(str(int(dim))), sql.SQL(str(int(m))),
                     sql.SQL(str(int(ef_construction))), sql.Literal(model_id),
                     sql.Literal(int(dim))))
        return True

    def _index_exists(self, conn: Connection, name: str) -> bool:
        """Whether the index exists; a positive answer is remembered (indexes stay)."""
        if name in self._indexed:
            return True
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
        if row and row[0]:
            self._indexed.add(name)
        return name in self._indexed

    def vector_search(self, authz: AuthzContext, model_id: str, query: Sequence[float], *,
                      limit: int) -> list[VectorHit]:
        dim, q = vector_text(query)
        visible, params = visible_to(authz)
        if limit <= 0 or visible == "FALSE":
            return []
        with self.transaction(authz.tenant) as conn:
            pinned = conn.execute("SELECT dim FROM vector_models WHERE tenant_id = %s "
                                  "AND model_id = %s", (authz.tenant, model_id)).fetchone()
            if pinned is None:
                return []
            if int(pinned[0]) != dim:
                raise StoreError(f"query has {dim} dimensions, vectors have {pinned[0]}")
            plan = self._plan(conn, authz, limit)
            use_index = (not plan.exact and bool(np.any(np.asarray(query, dtype=np.float32)))
                         and self._index_exists(conn, hnsw_index_name(model_id, dim)))
            rows: list[Row] = []
            if use_index:
                rows = _hnsw_scan(conn, authz, model_id, dim, q, visible, params, limit, plan)
            # A walk that stopped short of ``limit`` readable rows is not the top-k of what
            # the caller may read: the exact scan answers instead.
            exact = not use_index or len(rows) < limit
            if exact:
                rows = _exact_scan(conn, authz, model_id, q, limit)
        return [VectorHit(str(r[0]), 1.0 - float(r[1]), exact) for r in rows]

    def vector_plan(self, authz: AuthzContext, *, limit: int) -> VectorPlan:
        """The plan :meth:`vector_search` takes for this caller (for operators and tests)."""
        with self.transaction(authz.tenant) as conn:
            return self._plan(conn, authz, limit)

    def _plan(self, conn: Connection, authz: AuthzContext, limit: int) -> VectorPlan:
        """Estimate the vectors of the caller's readable versions, and plan.

        The estimate is what the exact scan would read: the caller's readable versions (the
        ``acl_tokens`` index alone, counted up to the threshold's worth of versions) times
        the head chunks per head version. Counting the readable chunks themselves cost as
        much as scanning them (about 160 ms for a tenth of 1,000,000). The head version
        count is read again only when the corpus changed (its lexical generation).
        """
        stats = conn.execute("SELECT n_chunks, generation FROM lexical_stats "
                             "WHERE tenant_id = %s", (authz.tenant,)).fetchone()
        total, generation = (int(stats[0]), int(stats[1])) if stats else (0, -1)
        per_version = total / max(1, self._head_versions(conn, authz.tenant, generation))
        cap = math.ceil((self.exact_vector_threshold + 1) / max(per_version, 1.0)) + 1
        row = conn.execute(
            "SELECT count(*), count(DISTINCT version_id) FROM (SELECT a.version_id "
            "FROM acl_tokens a WHERE a.tenant_id = %s AND a.token = ANY(%s) LIMIT %s) r",
            (authz.tenant, sorted(authz.tokens), cap)).fetchone()
        rows, versions = (int(row[0]), int(row[1])) if row else (0, 0)
        readable = math.ceil(versions * per_version)
        if rows >= cap:  # counting stopped: more than the threshold, a lower bound
            readable = max(readable, self.exact_vector_threshold + 1)
        if not authz.tokens or not authz.granted_labels:
            readable = 0
        return plan_vector_search(min(readable, total) if total else readable, total, limit,
                                  exact_threshold=self.exact_vector_threshold,
                                  ef_search=self.ef_search,
                                  max_scan_tuples=self.max_scan_tuples)

    def _head_versions(self, conn: Connection, tenant: str, generation: int) -> int:
        """Head versions of the tenant, remembered for one lexical generation."""
        known = self._head_counts.get(tenant)
        if known is not None and known[0] == generation:
            return known[1]
        row = conn.execute("SELECT count(*) FROM head_map WHERE tenant_id = %s "
                           "AND version_id IS NOT NULL", (tenant,)).fetchone()
        count = int(row[0]) if row else 0
        self._head_counts[tenant] = (generation, count)
        return count

    def head_vectors(self, tenant: str, model_id: str) -> tuple[list[str], list[bytes]]:
        rows = self._rows(
            tenant,
            "SELECT v.chunk_id, v.embedding::real[] FROM vectors v JOIN chunks c "
            "ON c.tenant_id = v.tenant_id AND c.chunk_id = v.chunk_id WHERE v.tenant_id = %s "
            "AND v.model_id = %s AND c.is_head ORDER BY v.chunk_id", (tenant, model_id))
        return ([str(r[0]) for r in rows],
                [np.asarray(r[1], dtype=np.float32).tobytes() for r in rows])


def _pin_dimension(conn: Connection, tenant: str, model_id: str, dim: int) -> None:
    conn.execute("INSERT INTO vector_models VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                 (tenant, model_id, dim))
    row = conn.execute("SELECT dim FROM vector_models WHERE tenant_id = %s AND model_id = %s",
                       (tenant, model_id)).fetchone()
    if row is None or int(row[0]) != dim:
        pinned = None if row is None else int(row[0])
        raise StoreError(f"model {model_id!r} has {pinned}-dimensional vectors, not {dim}")


def _exact_scan(conn: Connection, authz: AuthzContext, model_id: str, q: str,
                limit: int) -> list[Row]:
    """Every readable vector scored: the exact top-``limit``, ties broken by chunk id.

    The vectors are found by the versions the caller's ACL tokens name (migration 18): one
    sorted array of version ids walks the ``vectors_version`` index, and the table is kept
    in version order, so a tenth of a million chunks is read in about a tenth of the time
    the same rows took by chunk id. The version is only the way in. Each candidate is then
    admitted by its own (chunk, version) row: head, of a granted label, of the pinned label
    epoch; so a vector naming a version it is no longer the head of admits nothing. That
    check runs on the nearest candidates only, in distance order: the first ``limit`` that
    pass are the exact top-``limit`` of what passes, because every candidate not yet
    checked is farther. When too few pass (a readable version full of chunks of labels
    the caller lacks), a larger batch is checked, and the last round checks every row.
    A zero vector has no direction: its distance is NaN, read as "unrelated" (score 0).
    The ordering expression deliberately differs from the indexed one, so this path can
    never be served by the approximate index.
    """
    epoch, epoch_params = label_epoch_sql(authz)
    admit = ("EXISTS (SELECT 1 FROM chunks c WHERE c.tenant_id = %s AND c.chunk_id = x.chunk_id "
             f"AND c.version_id = x.version_id AND {epoch}c.is_head AND c.label = ANY(%s))")
    admit_params = [authz.tenant, *epoch_params, sorted(authz.granted_labels)]
    nearest = ("SELECT v.chunk_id, v.version_id, COALESCE(NULLIF(v.embedding <=> %s::vector, "
               "'NaN'::float8), 1.0) AS d FROM vectors v WHERE v.tenant_id = %s "
               "AND v.model_id = %s AND v.version_id = ANY(ARRAY(SELECT a.version_id "
               "FROM acl_tokens a WHERE a.tenant_id = %s AND a.token = ANY(%s)))")
    params = (q, authz.tenant, model_id, authz.tenant, sorted(authz.tokens))
    fetch = 2 * limit + 16
    for _ in range(EXACT_ROUNDS):
        # The check sits outside the LIMIT: it runs on the batch, not on every row.
        rows = conn.execute(
            f"SELECT x.chunk_id, x.d, {admit} FROM ({nearest} ORDER BY d, v.chunk_id "
            "LIMIT %s) x ORDER BY x.d, x.chunk_id",
            (*admit_params, *params, fetch)).fetchall()
        passed = [(r[0], r[1]) for r in rows if r[2]]
        if len(passed) >= limit or len(rows) < fetch:
            return passed[:limit]
        fetch *= 16
    return conn.execute(
        f"SELECT x.chunk_id, x.d FROM ({nearest}) x WHERE {admit} ORDER BY x.d, x.chunk_id "
        "LIMIT %s", (*params, *admit_params, limit)).fetchall()


def _hnsw_scan(conn: Connection, authz: AuthzContext, model_id: str, dim: int, q: str,
               visible: str, params: list[object], limit: int,
               plan: VectorPlan) -> list[Row]:
    # Transaction-local (SET LOCAL): the next query on this connection plans afresh.
    conn.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', true), "
                 "set_config('hnsw.ef_search', %s, true), "
                 "set_config('hnsw.max_scan_tuples', %s, true)",
                 (str(plan.ef_search), str(plan.max_scan_tuples)))
    # Literals, not parameters: the planner must see the partial index's predicate and
    # the cast's dimension to choose the index.
    query = sql.SQL(
        "SELECT v.chunk_id, (v.embedding::vector({dim}) <=> %s::vector({dim})) AS d "
        "FROM vectors v JOIN chunks c ON c.tenant_id = v.tenant_id "
        "AND c.chunk_id = v.chunk_id WHERE v.tenant_id = %s AND v.model_id = {model} "
        "AND v.dim = {dim_value} AND {visible} ORDER BY d LIMIT %s"
    ).format(dim=sql.SQL(str(int(dim))), model=sql.Literal(model_id),
             dim_value=sql.Literal(int(dim)), visible=sql.SQL(visible))
    rows = conn.execute(query, (q, authz.tenant, *params, limit)).fetchall()
    return sorted(rows, key=lambda r: (float(r[1]), str(r[0])))
