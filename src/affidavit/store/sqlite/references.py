"""SQLite table of references (:mod:`affidavit.references`).

Every read takes the reader's granted labels and filters on the reference's
classification inside the query, and on the reader's principal for citations (a citation
of someone else's answer never leaves the query, so it neither takes a place under the
limit nor costs a look at a record the reader may not view); a search matches only text
whose own label is granted. Whether the reader may read both ends (and view a citation's
record) is decided by :mod:`affidavit.references.access` before a reference leaves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager

from affidavit.errors import StoreError
from affidavit.records import REFERENCE_COLUMNS, Reference, reference_from_row
from affidavit.store.rows import VIEWABLE_SOURCE, like_pattern

_INSERT = (f"INSERT INTO refs (tenant_id, {REFERENCE_COLUMNS}) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")



def insert_references(conn: sqlite3.Connection, tenant: str,
                      references: Sequence[Reference]) -> None:
    """Write ``references`` in the caller's transaction (the ledger append's, for citations)."""
    conn.executemany(_INSERT, [(tenant, *r.row()) for r in references])


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class ReferenceTables:
    """Add and read one tenant's references."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def _ensure_tenant(self, conn: sqlite3.Connection, tenant: str) -> None:
        raise NotImplementedError

    def add_reference(self, tenant: str, reference: Reference) -> None:
        try:
            with self._write() as conn:
                self._ensure_tenant(conn, tenant)
                insert_references(conn, tenant, [reference])
        except sqlite3.Error as exc:
            raise StoreError(f"reference insert failed: {exc}") from exc

    def references_touching(self, tenant: str, node_ids: Sequence[str], *, direction: str,
                            labels: Collection[str], limit: int,
                            viewer: str = "") -> list[Reference]:
        ids, granted = sorted(set(node_ids)), sorted(labels)
        if not ids or not granted or limit <= 0:
            return []
        ends: list[str] = []
        params: list[object] = [tenant, *granted, viewer]
        if direction in ("out", "both"):
            ends.append(f"(source_type = 'document' AND source_id IN ({_marks(len(ids))}))")
            params.extend(ids)
        if direction in ("in", "both"):
            ends.append(f"target_id IN ({_marks(len(ids))})")
            params.extend(ids)
        rows = self._read(
            f"SELECT {REFERENCE_COLUMNS} FROM refs WHERE tenant_id = ? AND classification IN "
            f"({_marks(len(granted))}) AND {VIEWABLE_SOURCE.format('?')} "
            f"AND ({' OR '.join(ends)}) ORDER BY created_at, ref_id LIMIT ?", (*params, limit))
        return [reference_from_row(r) for r in rows]

    def search_references(self, tenant: str, text: str, *, labels: Collection[str],
                          limit: int, viewer: str = "") -> list[Reference]:
        granted = sorted(labels)
        if not text.strip() or not granted or limit <= 0:
            return []
        pattern = like_pattern(text.strip())
        marks = _marks(len(granted))
        rows = self._read(
            f"SELECT {REFERENCE_COLUMNS} FROM refs WHERE tenant_id = ? AND classification IN "
            f"({marks}) AND {VIEWABLE_SOURCE.format('?')} AND text_label IN ({marks}) "
            "AND (lower(label) LIKE ? ESCAPE '\\' OR lower(reason) LIKE ? ESCAPE '\\') "
            "ORDER BY created_at, ref_id LIMIT ?",
            (tenant, *granted, viewer, *granted, pattern, pattern, limit))
        return [reference_from_row(r) for r in rows]
