"""PostgreSQL lexical search: BM25 in the query, the authz filter inside it, two plans.

Both statements score the same postings of the same readable chunks with the same BM25
expression (the order of operations of SQLite's, in double precision), so they return the
same hits; they differ in which side drives:

* **by posting** (:func:`bm25_query`): the query terms' postings by index, then for each
  posting its chunk by primary key, admitted only if the caller may read it. Its cost is
  the number of postings of the query terms, whatever the caller may read;
* **by readable chunk** (:func:`readable_bm25_query`): the chunks the caller may read, from
  its ACL tokens' versions in the ``chunks_readable`` index alone (PostgreSQL migration 15),
  hashed, and the postings joined to them. Its cost is the postings plus the readable
  chunks, each far cheaper than a probe; a caller who reads 1% of a large corpus reads
  fewer chunks than a common term has postings.

:func:`choose_plan` counts the postings, then the readable chunks up to
:data:`READABLE_PER_POSTING` times that count (in the indexes alone), and takes the readable
side when they are no more. The choice is made by counts, never by the planner's
estimates: the same data and caller give the same plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from affidavit.records import AuthzContext
from affidavit.store.postgres_base import Connection, readable_chunks, visible_to

SMALL_POSTINGS = 500
"""Below this many postings the per-posting plan is taken without counting readers."""
READABLE_PER_POSTING = 1
"""The readable side is taken up to this many readable chunks per posting. A readable
chunk costs it an index tuple and a hash entry, a posting the other plan two index probes;
but counting the readable chunks costs a share of that too, whichever plan runs after it,
and a larger cap made the common case (few postings, a wide caller) slower at 100,000
chunks: p50 6.2 ms always by posting, 11.1 ms with a cap of 4 per posting."""

# The sum runs in the order of the (sorted) query terms, as SQLite's does: a sum of the
# same terms in another order may differ in its last bit, and a score tie broken by the
# chunk id would then depend on the plan.
_BM25 = ("SUM(q.idf * p.tf::float8 / (p.tf::float8 + %s::float8 "
         "* (1 - %s::float8 + %s::float8 * c.n_tokens::float8 / %s::float8)) "
         "ORDER BY q.i) AS s ")
_TERMS = ("WITH q(term, idf, i) AS MATERIALIZED (SELECT * FROM unnest(%s::text[], "
          "%s::float8[]) WITH ORDINALITY) ")
_RANK = "GROUP BY p.chunk_id ORDER BY s DESC, p.chunk_id ASC LIMIT %s"


def bm25_query(visible: str) -> str:
    """The per-posting statement, with ``visible`` (from ``visible_to``) inside it.

    ``LIMIT 1`` on the per-posting lookup (one head row per chunk id) keeps it a per-row
    probe whatever the planner's statistics say; a plan driven by the readable chunks
    through this statement would cost readable x terms probes.
    """
    return (
        _TERMS + "SELECT p.chunk_id, " + _BM25
        + "FROM postings p JOIN q ON q.term = p.term "
        "CROSS JOIN LATERAL (SELECT c.n_tokens FROM chunks c WHERE c.tenant_id = p.tenant_id "
        f"  AND c.chunk_id = p.chunk_id AND {visible} LIMIT 1) c "
        "WHERE p.tenant_id = %s AND p.term = ANY(%s::text[]) " + _RANK
    )


def readable_bm25_query(readable: str) -> str:
    """The statement driven by the readable chunks (``readable_chunks`` with ``n_tokens``).

    The readable set is materialized once and hashed; a chunk id has one head row, so the
    join gives one row per posting, as the per-posting statement does.
    """
    return (
        _TERMS + f", c AS MATERIALIZED ({readable}) "
        "SELECT p.chunk_id, " + _BM25
        + "FROM postings p JOIN q ON q.term = p.term JOIN c ON c.chunk_id = p.chunk_id "
        "WHERE p.tenant_id = %s AND p.term = ANY(%s::text[]) " + _RANK
    )


@dataclass(frozen=True)
class LexicalPlan:
    """The statement one lexical search runs, with its parameters and why it was chosen."""

    name: str  # "by posting" or "by readable chunk"
    postings: int
    readable: int | None  # counted up to a cap; None when not counted
    statement: str
    params: tuple[object, ...]


def choose_plan(conn: Connection, authz: AuthzContext, term_idf: Mapping[str, float], *,
                k1: float, b: float, avg_length: float, limit: int) -> LexicalPlan | None:
    """The cheaper statement for this caller and these terms; None when nothing can match."""
    terms = sorted(term_idf)
    visible, visible_params = visible_to(authz)
    if not terms or avg_length <= 0 or limit <= 0 or visible == "FALSE":
        return None
    head = (terms, [float(term_idf[t]) for t in terms])
    scoring = (k1, b, b, avg_length)
    tail = (authz.tenant, terms, limit)
    # One statement counts both: the postings, then (from SMALL_POSTINGS on) the readable
    # chunks up to the cap those postings set.
    ids, ids_params = readable_chunks(authz)
    row = conn.execute(
        "WITH n AS (SELECT count(*) AS postings FROM postings WHERE tenant_id = %s "
        "AND term = ANY(%s::text[])) SELECT n.postings, CASE WHEN n.postings >= %s THEN "
        f"(SELECT count(*) FROM ({ids} LIMIT (SELECT %s * postings + 1 FROM n)) r) END "
        "FROM n",
        (authz.tenant, terms, SMALL_POSTINGS, *ids_params, READABLE_PER_POSTING)).fetchone()
    postings = int(row[0]) if row else 0
    readable = None if row is None or row[1] is None else int(row[1])
    if postings == 0:
        return None
    if readable is not None and readable <= READABLE_PER_POSTING * postings:
        chunks, _ = readable_chunks(authz, with_length=True)
        return LexicalPlan("by readable chunk", postings, readable,
                           readable_bm25_query(chunks), (*head, *ids_params, *scoring, *tail))
    return LexicalPlan("by posting", postings, readable, bm25_query(visible),
                       (*head, *scoring, *visible_params, *tail))
