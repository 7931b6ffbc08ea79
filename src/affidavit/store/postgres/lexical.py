"""PostgreSQL lexical search: BM25 in the query, the authz filter inside it, two plans.

Both statements score the same postings of the same readable chunks with the same BM25
expression (the order of operations of SQLite's, in double precision), so they return the
same hits; they differ in what is done to a posting before its chunk row is probed:

* **by posting** (:func:`bm25_query`): the query terms' postings by index, then for each
  posting its chunk by primary key, admitted only if the caller may read it. Its cost is
  two index probes per posting of the query terms, whatever the caller may read;
* **by readable version** (:func:`readable_bm25_query`): the versions the caller's ACL
  tokens name, hashed once (the ``acl_tokens`` index alone), and every posting whose
  version (PostgreSQL migration 17) is not among them dropped in the hash before any probe;
  only the postings left are probed. A caller who reads a tenth of the corpus probes a
  tenth of the postings.

The version hash is the ACL check of the readable side, and the probe requires the
posting's own (chunk, version) row to be head and of a granted label (and label epoch), so
a posting naming another version admits nothing: that version's row is not the chunk.

:func:`choose_plan` counts the postings, then the caller's token rows up to
:data:`VERSIONS_PER_POSTING` times that count (in the indexes alone), and takes the readable
side when they are no more. The choice is made by counts, never by the planner's
estimates: the same data and caller give the same plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from affidavit.records import AuthzContext
from affidavit.store.postgres.base import Connection, label_epoch_sql, visible_to

SMALL_POSTINGS = 500
"""Below this many postings the per-posting plan is taken without counting readers."""
VERSIONS_PER_POSTING = 14
"""The readable side is taken up to this many readable versions (token rows) per posting.
A version costs it an index tuple and a hash entry, a posting the other plan two index
probes (about 10 µs at 1,000,000 chunks, where the chunk key no longer stays in cache);
the postings the hash drops are not probed at all. Measured at 1,000,000 chunks
(``benchmarks/postgres_scale.py``'s corpus, each statement timed on the same queries, the
best of three): for a reader of a tenth of the corpus (10,000 versions) the readable side
was faster at every query, down to 16 versions a posting (4.8 against 6.4 ms); for a
reader of half (50,000 versions) the two were level at 13 versions a posting (68 against
70 ms), the readable side 19% slower at 15 and faster below 13. The first choice of 8,
made before postings named their versions, sent about a third of the 10% reader's
queries to the slower side."""

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


def readable_bm25_query(epoch: str) -> str:
    """The statement driven by the caller's readable versions. Parameters: the terms and
    their idfs, the tenant and the tokens, the scoring, ``epoch``'s then the labels, the
    tenant, the terms and the limit.

    The versions are materialized once (a version the caller reaches by two tokens twice:
    ``IN`` is a semi-join, and sorting them out cost more than it saved) and hashed; a
    posting of any other version never reaches the probe. The probe reads the posting's
    own (chunk, version) row and admits it only if it is head and of a granted label (and
    of the pinned label epoch, ``epoch`` from ``label_epoch_sql``); its version's ACL is
    the hash's, so the per-posting statement's token subquery would only repeat it.
    """
    return (
        _TERMS + ", r AS MATERIALIZED (SELECT a.version_id FROM acl_tokens a "
        "WHERE a.tenant_id = %s AND a.token = ANY(%s::text[])) "
        "SELECT p.chunk_id, " + _BM25
        + "FROM postings p JOIN q ON q.term = p.term "
        "CROSS JOIN LATERAL (SELECT c.n_tokens FROM chunks c WHERE c.tenant_id = p.tenant_id "
        f"  AND c.chunk_id = p.chunk_id AND c.version_id = p.version_id AND {epoch}c.is_head "
        "AND c.label = ANY(%s) LIMIT 1) c "
        "WHERE p.tenant_id = %s AND p.term = ANY(%s::text[]) "
        "AND p.version_id IN (SELECT r.version_id FROM r) " + _RANK
    )


@dataclass(frozen=True)
class LexicalPlan:
    """The statement one lexical search runs, with its parameters and why it was chosen."""

    name: str  # "by posting" or "by readable version"
    postings: int
    readable: int | None  # the caller's token rows, counted up to a cap; None when not counted
    statement: str
    params: tuple[object, ...]


def choose_plan(conn: Connection, authz: AuthzContext, term_idf: Mapping[str, float], *,
                k1: float, b: float, avg_length: float, limit: int,
                postings: int | None = None) -> LexicalPlan | None:
    """The cheaper statement for this caller and these terms; None when nothing can match.

    ``postings``, the terms' postings as the caller counted them (the retriever has just
    read their document frequencies), spares counting them again. A wrong count can only
    choose the slower plan: both return the same hits."""
    terms = sorted(term_idf)
    visible, visible_params = visible_to(authz)
    if not terms or avg_length <= 0 or limit <= 0 or visible == "FALSE":
        return None
    head = (terms, [float(term_idf[t]) for t in terms])
    scoring = (k1, b, b, avg_length)
    tail = (authz.tenant, terms, limit)
    tokens = sorted(authz.tokens)
    if postings is None:
        counted = conn.execute("SELECT count(*) FROM postings WHERE tenant_id = %s "
                               "AND term = ANY(%s::text[])", (authz.tenant, terms)).fetchone()
        postings = int(counted[0]) if counted else 0
        if postings == 0:
            return None
    readable: int | None = None
    if postings >= SMALL_POSTINGS:
        # The caller's token rows (each names a readable version), counted in the index
        # up to the cap the postings set.
        counted = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM acl_tokens a WHERE a.tenant_id = %s "
            "AND a.token = ANY(%s::text[]) LIMIT %s) r",
            (authz.tenant, tokens, int(VERSIONS_PER_POSTING * postings) + 1)).fetchone()
        readable = int(counted[0]) if counted else 0
    if readable is not None and readable <= VERSIONS_PER_POSTING * postings:
        epoch, epoch_params = label_epoch_sql(authz)
        return LexicalPlan("by readable version", postings, readable,
                           readable_bm25_query(epoch),
                           (*head, authz.tenant, tokens, *scoring, *epoch_params,
                            sorted(authz.granted_labels), *tail))
    return LexicalPlan("by posting", postings, readable, bm25_query(visible),
                       (*head, *scoring, *visible_params, *tail))
