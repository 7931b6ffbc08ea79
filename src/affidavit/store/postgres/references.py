"""PostgreSQL table of references (:mod:`affidavit.references`), under the tenant's
row-level security; the same reads and filters as :mod:`affidavit.store.sqlite.references`."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import Any

from affidavit.records import REFERENCE_COLUMNS, Reference, reference_from_row
from affidavit.store.postgres.base import Connection, ensure_tenant_rows
from affidavit.store.rows import VIEWABLE_SOURCE, like_pattern

_INSERT = (f"INSERT INTO refs (tenant_id, {REFERENCE_COLUMNS}) "
           "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")


def insert_references(conn: Connection, tenant: str, references: Sequence[Reference]) -> None:
    """Write ``references`` in the caller's transaction (the ledger append's, for citations)."""
    if references:
        with conn.cursor() as cursor:
            cursor.executemany(_INSERT, [(tenant, *r.row()) for r in references])


class ReferenceTables:
    """Add and read one tenant's references."""

    def transaction(self, tenant: str) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def _rows(self, tenant: str, query: Any, params: Sequence[object] = ()) -> list[Any]:
        raise NotImplementedError

    def add_reference(self, tenant: str, reference: Reference) -> None:
        with self.transaction(tenant) as conn:
            ensure_tenant_rows(conn, tenant)
            insert_references(conn, tenant, [reference])

    def references_touching(self, tenant: str, node_ids: Sequence[str], *, direction: str,
                            labels: Collection[str], limit: int,
                            viewer: str = "") -> list[Reference]:
        ids, granted = sorted(set(node_ids)), sorted(labels)
        if not ids or not granted or limit <= 0:
            return []
        ends: list[str] = []
        params: list[object] = [tenant, granted, viewer]
        if direction in ("out", "both"):
            ends.append("(source_type = 'document' AND source_id = ANY(%s))")
            params.append(ids)
        if direction in ("in", "both"):
            ends.append("target_id = ANY(%s)")
            params.append(ids)
        rows = self._rows(
            tenant,
            f"SELECT {REFERENCE_COLUMNS} FROM refs WHERE tenant_id = %s AND classification = "
            f"ANY(%s) AND {VIEWABLE_SOURCE.format('%s')} AND ({' OR '.join(ends)}) "
            "ORDER BY created_at, ref_id LIMIT %s",
            (*params, limit))
        return [reference_from_row(r) for r in rows]

    def search_references(self, tenant: str, text: str, *, labels: Collection[str],
                          limit: int, viewer: str = "") -> list[Reference]:
        granted = sorted(labels)
        if not text.strip() or not granted or limit <= 0:
            return []
        pattern = like_pattern(text.strip())
        rows = self._rows(
            tenant,
            f"SELECT {REFERENCE_COLUMNS} FROM refs WHERE tenant_id = %s AND classification = "
            f"ANY(%s) AND {VIEWABLE_SOURCE.format('%s')} AND text_label = ANY(%s) "
            "AND (lower(label) LIKE %s ESCAPE '\\' OR lower(reason) LIKE %s ESCAPE '\\') "
            "ORDER BY created_at, ref_id LIMIT %s",
            (tenant, granted, viewer, granted, pattern, pattern, limit))
        return [reference_from_row(r) for r in rows]


