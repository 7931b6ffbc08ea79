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
        chunks = read("SELECT chunk_id, version_id, label, n_tokens, label_epoch FROM chunks "
                      "WHERE tenant_id = ? AND is_head = 1 ORDER BY chunk_id", (tenant,))
        postings = read(
            "SELECT p.term, p.chunk_id, p.tf FROM postings p JOIN chunks c ON c.tenant_id = "
            "p.tenant_id AND c.chunk_id = p.chunk_id WHERE p.tenant_id = ? AND c.is_head = 1 "
            "ORDER BY p.term, p.chunk_id", (tenant,))
        acl = read(
            "SELECT a.version_id, a.token FROM acl_tokens a WHERE a.tenant_id = ? AND "
            "a.version_id IN (SELECT version_id FROM chunks WHERE tenant_id = ? AND is_head = 1)"
            " ORDER BY a.version_id, a.token", (tenant, tenant))
        return build_snapshot(
            tenant, generation,
            [(str(r[0]), str(r[1]), str(r[2]), int(str(r[3])), str(r[4])) for r in chunks],
            [(str(r[0]), str(r[1]), int(str(r[2]))) for r in postings],
            [(str(r[0]), str(r[1])) for r in acl])


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
