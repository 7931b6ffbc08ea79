"""A consistent copy of one tenant's served lexical plane, for the in-memory index.

An :class:`IndexSnapshot` holds, for every head chunk, what the authz filter and BM25 need:
its version, label and length, the postings, and the ACL tokens of every head version.
It is plain data; :mod:`affidavit.index.memory` builds the accelerated index from it.

:class:`SQLiteSnapshotSource` reads one from a :class:`~affidavit.store.SQLiteStore`. The
generation is read before and after, and the read is retried when they differ, so that a
snapshot never mixes two corpus states.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from affidavit.errors import StoreError

if TYPE_CHECKING:  # the store package imports (through identity) this one
    from affidavit.store import SQLiteStore

SNAPSHOT_ATTEMPTS = 5


@dataclass(frozen=True)
class IndexSnapshot:
    """Row ``i`` is the head chunk ``chunk_ids[i]``; chunk ids ascend, so row order is the
    tie-break order. Postings are grouped by term: term ``terms[t]`` occurs in rows
    ``posting_rows[term_starts[t]:term_starts[t + 1]]`` with those term frequencies."""

    tenant: str
    generation: int
    chunk_ids: tuple[str, ...]
    version_ids: tuple[str, ...]
    labels: tuple[str, ...]
    lengths: npt.NDArray[np.int64]
    terms: tuple[str, ...]
    term_starts: npt.NDArray[np.int64]
    posting_rows: npt.NDArray[np.int64]
    posting_tfs: npt.NDArray[np.float64]
    acl_tokens: Mapping[str, tuple[str, ...]]
    # per row: the sensitivity policy its label was computed under (classify.epoch)
    label_epochs: tuple[str, ...] = ()


class SnapshotSource(Protocol):
    """Where snapshots come from (a store backend, or an adapter around one)."""

    def corpus_generation(self, tenant: str) -> int:
        """The tenant's corpus generation (changes whenever the served corpus does)."""
        ...

    def index_snapshot(self, tenant: str) -> IndexSnapshot:
        """A snapshot of the tenant's head chunks, consistent with one generation."""
        ...


class SQLiteSnapshotSource:
    """Reads snapshots from a SQLite store through its read seam."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def corpus_generation(self, tenant: str) -> int:
        """The store's generation counter for ``tenant``."""
        return self.store.corpus_generation(tenant)

    def index_snapshot(self, tenant: str) -> IndexSnapshot:
        """Read until the generation is the same before and after the read."""
        for _ in range(SNAPSHOT_ATTEMPTS):
            before = self.store.corpus_generation(tenant)
            snapshot = self._read(tenant, before)
            if self.store.corpus_generation(tenant) == before:
                return snapshot
        raise StoreError(f"the corpus of {tenant!r} kept changing while it was being read")

    def _read(self, tenant: str, generation: int) -> IndexSnapshot:
        read = self.store._read  # the store's one query seam (tenant-scoped SQL below)
        chunks = read("SELECT chunk_id, version_id, label, n_tokens, label_epoch, chunk_key "
                      "FROM chunks WHERE tenant_id = ? AND is_head = 1 ORDER BY chunk_id, "
                      "version_id, label, n_tokens, label_epoch", (tenant,))
        terms = read("SELECT term_key, term FROM lexical_terms WHERE tenant_id = ?", (tenant,))
        # Integer keys only, in the postings' own order: a row per posting through the
        # ``postings`` view (its term and chunk id as text, sorted) took 20 s of CPU for
        # 2.6 million postings; these take about 2 s.
        postings = read(
            "SELECT p.term_key, p.chunk_key, p.tf FROM lexical_terms t CROSS JOIN "
            "lexical_postings p ON p.term_key = t.term_key WHERE t.tenant_id = ?", (tenant,))
        acl = read(
            "SELECT a.version_id, a.token FROM acl_tokens a WHERE a.tenant_id = ? AND "
            "a.version_id IN (SELECT version_id FROM chunks WHERE tenant_id = ? AND is_head = 1)"
            " ORDER BY a.version_id, a.token", (tenant, tenant))
        return keyed_snapshot(
            tenant, generation,
            [(str(r[0]), str(r[1]), str(r[2]), int(str(r[3])), str(r[4])) for r in chunks],
            [int(str(r[5])) for r in chunks],
            {int(str(k)): str(term) for k, term in terms},
            np.array(postings, dtype=np.int64).reshape(-1, 3),
            [(str(r[0]), str(r[1])) for r in acl])


def keyed_snapshot(tenant: str, generation: int,
                   chunks: list[tuple[str, str, str, int, str]], chunk_keys: list[int],
                   terms: Mapping[int, str], postings: npt.NDArray[np.int64],
                   acl: list[tuple[str, str]]) -> IndexSnapshot:
    """:func:`build_snapshot` from integer keys: ``chunks`` in chunk id order with their
    keys, the tenant's terms by key, and postings as rows ``(term key, chunk key, tf)``.
    Postings of chunks that are not among ``chunks`` (not head) are left out."""
    keys = np.array(chunk_keys, dtype=np.int64)
    by_key = np.argsort(keys, kind="stable")
    sorted_keys = keys[by_key]
    at = np.searchsorted(sorted_keys, postings[:, 1])
    found = at < sorted_keys.size
    found[found] = sorted_keys[at[found]] == postings[found, 1]
    postings, rows = postings[found], by_key[at[found]]
    present = np.unique(postings[:, 0])
    names = [terms[k] for k in present.tolist()]
    by_name = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.array(by_name, dtype=np.int64)] = np.arange(len(names), dtype=np.int64)
    term_of = rank[np.searchsorted(present, postings[:, 0])]
    # Grouped by term in term order, rows ascending within a term (build_snapshot's order).
    order = np.lexsort((rows, term_of))
    counts = np.bincount(term_of, minlength=len(names))
    tokens: dict[str, list[str]] = {}
    for version_id, token in sorted(acl):
        tokens.setdefault(version_id, []).append(token)
    return IndexSnapshot(
        tenant=tenant, generation=generation,
        chunk_ids=tuple(c[0] for c in chunks), version_ids=tuple(c[1] for c in chunks),
        labels=tuple(c[2] for c in chunks), label_epochs=tuple(c[4] for c in chunks),
        lengths=np.array([c[3] for c in chunks], dtype=np.int64),
        terms=tuple(names[i] for i in by_name),
        term_starts=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        posting_rows=rows[order].astype(np.int64),
        posting_tfs=postings[order, 2].astype(np.float64),
        acl_tokens={v: tuple(t) for v, t in tokens.items()},
    )


def build_snapshot(tenant: str, generation: int,
                   chunks: list[tuple[str, str, str, int, str]],
                   postings: list[tuple[str, str, int]],
                   acl: list[tuple[str, str]]) -> IndexSnapshot:
    """A snapshot from rows: chunks ``(chunk_id, version_id, label, n_tokens, label_epoch)``,
    postings
    ``(term, chunk_id, tf)`` and ACL ``(version_id, token)``, in any order."""
    chunks = sorted(chunks)
    row_of = {chunk[0]: i for i, chunk in enumerate(chunks)}
    ordered = sorted((term, row_of[cid], tf) for term, cid, tf in postings if cid in row_of)
    terms: list[str] = []
    starts: list[int] = []
    for position, (term, _, _) in enumerate(ordered):
        if not terms or terms[-1] != term:
            terms.append(term)
            starts.append(position)
    starts.append(len(ordered))
    tokens: dict[str, list[str]] = {}
    for version_id, token in sorted(acl):
        tokens.setdefault(version_id, []).append(token)
    return IndexSnapshot(
        tenant=tenant, generation=generation,
        chunk_ids=tuple(c[0] for c in chunks), version_ids=tuple(c[1] for c in chunks),
        labels=tuple(c[2] for c in chunks), label_epochs=tuple(c[4] for c in chunks),
        lengths=np.array([c[3] for c in chunks], dtype=np.int64),
        terms=tuple(terms), term_starts=np.array(starts, dtype=np.int64),
        posting_rows=np.array([p[1] for p in ordered], dtype=np.int64),
        posting_tfs=np.array([p[2] for p in ordered], dtype=np.float64),
        acl_tokens={v: tuple(t) for v, t in tokens.items()},
    )
