"""The SQLite lexical plane: compact postings (migration 10).

A posting used to repeat the tenant id, the term and a 32-hex chunk id: about 55 bytes for
one term frequency, half the database. Now a term has a per-tenant integer key
(``lexical_terms``), a chunk an integer key (``chunks.chunk_key``), and a posting is three
integers in a ``WITHOUT ROWID`` table ordered by term, so that the postings of a query
term are one contiguous range. The view ``postings`` keeps the old shape for readers.

Tenant isolation: a term key belongs to one tenant, every query starts from the tenant's
terms, and a chunk reached through a posting is checked for the tenant again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain

# Host parameters per statement, under SQLite's limit on every version we support.
_PARAMS = 500
# Term keys a connection remembers (term_keys' ``known``) before it starts again.
TERM_KEYS_KEPT = 1_000_000


def _slices(items: Sequence[str], size: int = _PARAMS) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def term_keys(conn: sqlite3.Connection, tenant: str, terms: Iterable[str], *,
              create: bool, known: dict[str, dict[str, int]] | None = None) -> dict[str, int]:
    """Keys of ``terms`` in ``tenant``; with ``create``, new terms get one, in term order.

    ``known`` holds keys already read on this connection, by tenant then term (an ingest
    batch's memory): only the other terms go to SQLite, and their keys are added to it. A
    term missing from it is inserted if new and looked up either way, so the keys given are
    the same with or without it.

    The terms go to SQLite as one JSON array: it inserts and looks them up in C, where a
    row per term through Python cost several times as much."""
    unique = set(terms)
    keys = _key_map(conn, tenant, unique, create=create, known=known)
    return {term: keys[term] for term in sorted(unique) if term in keys}


def _key_map(conn: sqlite3.Connection, tenant: str, unique: set[str], *, create: bool,
             known: dict[str, dict[str, int]] | None) -> Mapping[str, int]:
    """:func:`term_keys`, as a mapping that may hold other terms too (the batch's memory
    itself: copying a document's thousands of keys out of it cost more than reading them)."""
    if known is None:
        return _term_keys_in_sql(conn, tenant, sorted(unique), create=create)
    kept = known.setdefault(tenant, {})
    missing = unique.difference(kept)
    if missing:
        if len(kept) > TERM_KEYS_KEPT:
            # Start again: every term of this call is read afresh, the known ones too.
            kept.clear()
            missing = unique
        kept.update(_term_keys_in_sql(conn, tenant, sorted(missing), create=create))
    return kept


def _term_keys_in_sql(conn: sqlite3.Connection, tenant: str, unique: Sequence[str], *,
                      create: bool) -> dict[str, int]:
    """:func:`term_keys` for sorted distinct terms, all read from SQLite."""
    if not unique:
        return {}
    if "\x00" in "".join(unique):
        # SQLite's JSON reader ends a string at an escaped NUL, so such a term would be read
        # as another, shorter one. The tokenizer never emits one; a row per term keeps it.
        return _term_keys_by_rows(conn, tenant, unique, create=create)
    array = json.dumps(unique, ensure_ascii=False)
    if create:
        # ORDER BY: new terms get their keys in term order, as the row path gives them.
        conn.execute("INSERT OR IGNORE INTO lexical_terms (tenant_id, term) "
                     "SELECT ?, value FROM json_each(?) ORDER BY value", (tenant, array))
    # CROSS JOIN fixes the order: each term is looked up by the unique index; SQLite's planner
    # would otherwise walk all the tenant's terms for each one.
    # A JSON string element is read back as TEXT and a key is an INTEGER: str and int.
    keys: dict[str, int] = dict(conn.execute(
        "SELECT j.value, t.term_key FROM json_each(?) j CROSS JOIN lexical_terms t "
        "ON t.tenant_id = ? AND t.term = j.value", (array, tenant)))
    return keys


def _term_keys_by_rows(conn: sqlite3.Connection, tenant: str, unique: Sequence[str], *,
                       create: bool) -> dict[str, int]:
    """:func:`term_keys` with one parameter per term, for terms JSON cannot carry."""
    if create:
        conn.executemany("INSERT OR IGNORE INTO lexical_terms (tenant_id, term) VALUES (?, ?)",
                         [(tenant, term) for term in unique])
    keys: dict[str, int] = {}
    for part in _slices(unique):
        for term, key in conn.execute(
                f"SELECT term, term_key FROM lexical_terms WHERE tenant_id = ? "
                f"AND term IN ({_marks(len(part))})", (tenant, *part)):
            keys[str(term)] = int(key)
    return keys


def write_postings(conn: sqlite3.Connection, tenant: str, chunk_keys: Mapping[str, int],
                   postings: Mapping[str, tuple[tuple[str, int], ...]], *,
                   known: dict[str, dict[str, int]] | None = None) -> None:
    """Write the postings of a version's new chunk rows, named by their keys (the rows'
    rowids, given as they were inserted: :mod:`affidavit.store.sqlite.chunks`); ``known``
    as :func:`term_keys` takes it."""
    keys = _key_map(conn, tenant, {term for pairs in postings.values() for term, _ in pairs},
                    create=True, known=known)
    insert_rows(conn, "INSERT INTO lexical_postings (term_key, chunk_key, tf) VALUES ",
                sorted((keys[term], chunk_keys[chunk_id], tf)
                       for chunk_id, pairs in postings.items() for term, tf in pairs))


def insert_rows(conn: sqlite3.Connection, head: str, rows: Sequence[tuple[int, ...]]) -> None:
    """``head`` (``INSERT ... VALUES ``) for every row, in order, many rows a statement.

    One statement per row cost SQLite a step and a reset each: a statement of a few hundred
    rows wrote a version's postings about a third faster. A statement holds at most 999
    parameters (SQLite's limit before 3.32, and never more than this connection's)."""
    if not rows:
        return
    width = len(rows[0])
    limit = min(conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER), 999)
    per = max(1, limit // width)
    one = "(" + ",".join("?" * width) + ")"
    full = len(rows) - len(rows) % per
    if full:
        flat = list(chain.from_iterable(rows[:full]))
        size = per * width
        conn.executemany(head + ",".join([one] * per),
                         [flat[start:start + size] for start in range(0, len(flat), size)])
    rest = rows[full:]
    if rest:
        conn.execute(head + ",".join([one] * len(rest)), list(chain.from_iterable(rest)))


def delete_postings(conn: sqlite3.Connection, tenant: str, version_id: str) -> None:
    """Drop the postings of a version's chunks (a retired version is not searched)."""
    conn.execute(
        "DELETE FROM lexical_postings WHERE chunk_key IN (SELECT chunk_key FROM chunks "
        "WHERE tenant_id = ? AND version_id = ? AND chunk_key IS NOT NULL)",
        (tenant, version_id))


def document_frequencies_sql(n_terms: int) -> str:
    """(term, df) for the tenant's head chunks; parameters: tenant, then the terms."""
    return (
        "SELECT t.term, COUNT(*) FROM lexical_terms t CROSS JOIN lexical_postings p "
        f"ON p.term_key = t.term_key WHERE t.tenant_id = ? AND t.term IN ({_marks(n_terms)}) "
        "GROUP BY t.term"
    )


def lexical_search_sql(n_terms: int, visible: str) -> str:
    """BM25 over the query terms' postings, the authz filter ``visible`` inside.

    Parameters: (term, idf) per term, k1, b, b, avg_length, tenant, tenant, the visibility
    parameters, limit.
    """
    values = ",".join("(?, ?)" for _ in range(n_terms))
    return (
        f"WITH q(term, idf) AS (VALUES {values}) "
        "SELECT c.chunk_id, SUM(q.idf * p.tf / (p.tf + ? * (1 - ? + ? * c.n_tokens / ?))) AS s "
        # CROSS JOIN fixes the join order: the query terms' keys, their postings, then their
        # chunks; SQLite's planner would otherwise scan every chunk of the tenant.
        "FROM q CROSS JOIN lexical_terms t ON t.tenant_id = ? AND t.term = q.term "
        "CROSS JOIN lexical_postings p ON p.term_key = t.term_key "
        "CROSS JOIN chunks c ON c.chunk_key = p.chunk_key "
        f"WHERE c.tenant_id = ? AND {visible} "
        "GROUP BY c.chunk_id ORDER BY s DESC, c.chunk_id ASC LIMIT ?"
    )
