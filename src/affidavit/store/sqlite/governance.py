"""SQLite tables of governance data: runs, quarantine, tuples, grants, SIRE and the ledger.

A mixin of :class:`~affidavit.store.sqlite.store.SQLiteStore`; it uses the store's transaction
helpers and touches only its own tables.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager

from affidavit.audit.events import (
    GRANT_ADD,
    GRANT_REVOKE,
    LIBRARY_ACTOR,
    TUPLE_ADD,
    TUPLE_REMOVE,
    event_json,
    event_time,
    grant_change,
    tuple_change,
)
from affidavit.errors import LedgerWriteError, NotFound, StoreError
from affidavit.ledger.chain import GENESIS_HASH, LINK_FORMAT, link_hash
from affidavit.records import Reference, SireTuple
from affidavit.store.protocol import (
    LedgerEntry,
    QuarantineRecord,
    RelationTuple,
    RunRecord,
    SireRecord,
)
from affidavit.store.sqlite.policy import append_event
from affidavit.store.sqlite.references import insert_references
from affidavit.store.sqlite.texts import sire_json

_LEDGER_COLUMNS = ("seq, record_id, request_id, created_at, payload, prev_hash, record_hash, "
                   "link_format")


def _placeholders(n: int) -> str:
    return ",".join("?" * n)


class GovernanceTables:
    """Runs, quarantine, relationship tuples, label grants, SIRE records and the ledger."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def _ensure_tenant(self, conn: sqlite3.Connection, tenant: str) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ runs & quarantine
    def start_run(self, tenant: str, run_id: str, *, at: str, params_json: str) -> None:
        with self._write() as conn:
            self._ensure_tenant(conn, tenant)
            conn.execute("INSERT INTO runs VALUES (?, ?, 'RUNNING', ?, NULL, ?, '{}')",
                         (tenant, run_id, at, params_json))

    def finish_run(self, tenant: str, run_id: str, *, status: str, at: str,
                   summary_json: str) -> None:
        with self._write() as conn:
            conn.execute("UPDATE runs SET status = ?, finished_at = ?, summary_json = ? "
                         "WHERE tenant_id = ? AND run_id = ?",
                         (status, at, summary_json, tenant, run_id))

    def get_run(self, tenant: str, run_id: str) -> RunRecord | None:
        rows = self._read("SELECT run_id, status, started_at, finished_at, summary_json, "
                          "params_json FROM runs WHERE tenant_id = ? AND run_id = ?",
                          (tenant, run_id))
        return _run(rows[0]) if rows else None

    def list_runs(self, tenant: str, limit: int = 50) -> list[RunRecord]:
        rows = self._read("SELECT run_id, status, started_at, finished_at, summary_json, "
                          "params_json FROM runs WHERE tenant_id = ? "
                          "ORDER BY started_at DESC, run_id LIMIT ?",
                          (tenant, limit))
        return [_run(r) for r in rows]

    def record_quarantine(self, tenant: str, record: QuarantineRecord) -> None:
        with self._write() as conn:
            self._ensure_tenant(conn, tenant)
            conn.execute("INSERT OR REPLACE INTO quarantine VALUES (?, ?, ?, ?, ?, ?, ?, NULL, "
                         "NULL)", (tenant, record.run_id, record.alias, record.source_id,
                                   record.reason_code, record.message, record.at))

    def list_quarantine(self, tenant: str, run_id: str | None = None) -> list[QuarantineRecord]:
        sql = ("SELECT run_id, alias, source_id, reason_code, message, at, released_by, "
               "released_at FROM quarantine WHERE tenant_id = ?")
        params: list[object] = [tenant]
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        rows = self._read(sql + " ORDER BY at, alias", params)
        return [QuarantineRecord(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]),
                                 str(r[5]), None if r[6] is None else str(r[6]),
                                 None if r[7] is None else str(r[7])) for r in rows]

    def release_quarantine(self, tenant: str, run_id: str, alias: str, *, by: str,
                           at: str) -> bool:
        with self._write() as conn:
            cur = conn.execute("UPDATE quarantine SET released_by = ?, released_at = ? "
                               "WHERE tenant_id = ? AND run_id = ? AND alias = ? "
                               "AND released_by IS NULL", (by, at, tenant, run_id, alias))
            return cur.rowcount > 0

    def listed_nodes(self, tenant: str, listing: str) -> set[str]:
        rows = self._read("SELECT node_id FROM source_listings WHERE tenant_id = ? "
                          "AND listing = ?", (tenant, listing))
        return {str(r[0]) for r in rows}

    def replace_listing(self, tenant: str, listing: str, node_ids: Sequence[str]) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM source_listings WHERE tenant_id = ? AND listing = ?",
                         (tenant, listing))
            conn.executemany("INSERT INTO source_listings VALUES (?, ?, ?)",
                             [(tenant, listing, n) for n in sorted(set(node_ids))])

    # ------------------------------------------------------------------ authorization data
    # Each change is recorded as a policy event in its own transaction: a row and the event
    # behind it commit together, and the authorizer counts only rows the trail put there.
    def add_tuple(self, tenant: str, rel: RelationTuple, *, at: str,
                  actor: str = LIBRARY_ACTOR) -> bool:
        with self._write() as conn:
            self._ensure_tenant(conn, tenant)
            cur = conn.execute("INSERT OR IGNORE INTO relation_tuples VALUES (?, ?, ?, ?, ?, ?)",
                               (tenant, rel.object, rel.relation, rel.subject, rel.source, at))
            if cur.rowcount > 0:
                _record(conn, tenant, TUPLE_ADD, actor, None, tuple_change(rel))
            return cur.rowcount > 0

    def remove_tuple(self, tenant: str, rel: RelationTuple, *,
                     actor: str = LIBRARY_ACTOR) -> bool:
        with self._write() as conn:
            cur = conn.execute("DELETE FROM relation_tuples WHERE tenant_id = ? AND object = ? "
                               "AND relation = ? AND subject = ?",
                               (tenant, rel.object, rel.relation, rel.subject))
            if cur.rowcount > 0:
                _record(conn, tenant, TUPLE_REMOVE, actor, tuple_change(rel), None)
            return cur.rowcount > 0

    def list_tuples(self, tenant: str) -> list[RelationTuple]:
        rows = self._read("SELECT object, relation, subject, source FROM relation_tuples "
                          "WHERE tenant_id = ? ORDER BY object, relation, subject", (tenant,))
        return [RelationTuple(*(str(x) for x in r)) for r in rows]

    def grant(self, tenant: str, subject: str, labels: Sequence[str], *, at: str,
              actor: str = LIBRARY_ACTOR) -> int:
        with self._write() as conn:
            self._ensure_tenant(conn, tenant)
            before = _labels_of(conn, tenant, subject)
            added = 0
            for label in sorted(set(labels)):
                cur = conn.execute("INSERT OR IGNORE INTO label_grants VALUES (?, ?, ?, ?)",
                                   (tenant, subject, label, at))
                added += cur.rowcount
            if added:
                _record(conn, tenant, GRANT_ADD, actor, grant_change(subject, before),
                        grant_change(subject, _labels_of(conn, tenant, subject)))
            return added

    def revoke(self, tenant: str, subject: str, labels: Sequence[str], *,
               actor: str = LIBRARY_ACTOR) -> int:
        with self._write() as conn:
            before = _labels_of(conn, tenant, subject)
            removed = 0
            for label in sorted(set(labels)):
                cur = conn.execute("DELETE FROM label_grants WHERE tenant_id = ? AND subject = ? "
                                   "AND label = ?", (tenant, subject, label))
                removed += cur.rowcount
            if removed:
                _record(conn, tenant, GRANT_REVOKE, actor, grant_change(subject, before),
                        grant_change(subject, _labels_of(conn, tenant, subject)))
            return removed

    def policy_generation(self, tenant: str) -> int | None:
        rows = self._read("SELECT COALESCE(g.generation, 0) FROM tenants t LEFT JOIN "
                          "policy_generations g ON g.tenant_id = t.tenant_id "
                          "WHERE t.tenant_id = ?", (tenant,))
        return int(str(rows[0][0])) if rows else None

    def list_grants(self, tenant: str) -> dict[str, tuple[str, ...]]:
        rows = self._read("SELECT subject, label FROM label_grants WHERE tenant_id = ? "
                          "ORDER BY subject, label", (tenant,))
        out: dict[str, list[str]] = {}
        for subject, label in rows:
            out.setdefault(str(subject), []).append(str(label))
        return {k: tuple(v) for k, v in out.items()}

    # ------------------------------------------------------------------ SIRE
    def _sire_rows(self, where: str, params: Sequence[object]) -> list[SireRecord]:
        rows = self._read(
            "SELECT s.sire_id, s.node_id, s.version_id, v.title, v.alias, s.tuple_json, s.state, "
            "s.proposed_at, s.approved_by, s.approved_at, "
            "(SELECT COUNT(*) FROM head_map h WHERE h.tenant_id = s.tenant_id "
            " AND h.version_id = s.version_id) "
            "FROM sire s JOIN versions v ON v.tenant_id = s.tenant_id "
            f"AND v.version_id = s.version_id WHERE {where} ORDER BY v.alias, s.sire_id", params)
        return [SireRecord(
            sire_id=str(r[0]), node_id=str(r[1]), version_id=str(r[2]), title=str(r[3]),
            alias=str(r[4]), sire=SireTuple.from_dict(json.loads(sire_json(r[5]))), state=str(r[6]),
            proposed_at=str(r[7]), approved_by=None if r[8] is None else str(r[8]),
            approved_at=None if r[9] is None else str(r[9]), is_head=bool(r[10]))
            for r in rows]

    def list_sire(self, tenant: str, *, state: str | None = None,
                  head_only: bool = True) -> list[SireRecord]:
        where, params = "s.tenant_id = ?", [tenant]
        if state is not None:
            where += " AND s.state = ?"
            params.append(state)
        records = self._sire_rows(where, params)
        return [r for r in records if r.is_head] if head_only else records

    def set_sire_state(self, tenant: str, sire_id: str, *, state: str, by: str,
                       at: str) -> SireRecord:
        with self._write() as conn:
            cur = conn.execute("UPDATE sire SET state = ?, approved_by = ?, approved_at = ? "
                               "WHERE tenant_id = ? AND sire_id = ?",
                               (state, by, at, tenant, sire_id))
            if cur.rowcount == 0:
                raise NotFound(f"no SIRE record {sire_id}")
        return self._sire_rows("s.tenant_id = ? AND s.sire_id = ?", (tenant, sire_id))[0]

    def activate_sire(self, tenant: str, sire_ids: Sequence[str], *, by: str,
                      at: str) -> list[SireRecord]:
        ids = list(dict.fromkeys(sire_ids))
        if not ids:
            return []
        where = f"s.tenant_id = ? AND s.sire_id IN ({_placeholders(len(ids))})"
        with self._write() as conn:
            known = {str(r[0]) for r in conn.execute(
                f"SELECT sire_id FROM sire s WHERE {where}", (tenant, *ids))}
            missing = [i for i in ids if i not in known]
            if missing:
                raise NotFound(f"no SIRE record {missing[0]}")
            conn.executemany("UPDATE sire SET state = 'ACTIVE', approved_by = ?, "
                             "approved_at = ? WHERE tenant_id = ? AND sire_id = ? "
                             "AND state <> 'ACTIVE'", [(by, at, tenant, i) for i in ids])
        by_id = {r.sire_id: r for r in self._sire_rows(where, (tenant, *ids))}
        return [by_id[i] for i in ids]

    def active_sire(self, tenant: str, version_ids: Sequence[str]) -> dict[str, SireRecord]:
        ids = sorted(set(version_ids))
        if not ids:
            return {}
        records = self._sire_rows(
            "s.tenant_id = ? AND s.state = 'ACTIVE' "
            f"AND s.version_id IN ({_placeholders(len(ids))})",
            (tenant, *ids))
        return {r.version_id: r for r in records}

    def active_sire_versions(self, tenant: str, version_ids: Sequence[str]) -> set[str]:
        ids = sorted(set(version_ids))
        if not ids:
            return set()
        rows = self._read("SELECT version_id FROM sire WHERE tenant_id = ? AND state = 'ACTIVE' "
                          f"AND version_id IN ({_placeholders(len(ids))})", (tenant, *ids))
        return {str(r[0]) for r in rows}

    # ------------------------------------------------------------------ ledger
    def append_ledger(self, tenant: str, *, record_id: str, request_id: str, created_at: str,
                      payload: str, references: Sequence[Reference] = ()) -> LedgerEntry:
        try:
            with self._write() as conn:
                self._ensure_tenant(conn, tenant)
                row = conn.execute("SELECT seq, record_hash FROM ledger WHERE tenant_id = ? "
                                   "ORDER BY seq DESC LIMIT 1", (tenant,)).fetchone()
                seq, prev = (int(row[0]) + 1, str(row[1])) if row else (1, GENESIS_HASH)
                digest = link_hash(tenant=tenant, seq=seq, record_id=record_id,
                                   request_id=request_id, created_at=created_at,
                                   prev_hash=prev, payload=payload)
                conn.execute(
                    f"INSERT INTO ledger (tenant_id, {_LEDGER_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (tenant, seq, record_id, request_id, created_at, payload, prev, digest,
                     LINK_FORMAT))
                insert_references(conn, tenant, references)
        except (sqlite3.Error, StoreError) as exc:
            raise LedgerWriteError(f"ledger append failed: {exc}") from exc
        return LedgerEntry(seq, record_id, request_id, created_at, payload, prev, digest,
                           LINK_FORMAT)

    def get_ledger(self, tenant: str, record_id: str) -> LedgerEntry | None:
        rows = self._read(f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE tenant_id = ? "
                          "AND (record_id = ? OR request_id = ?) ORDER BY seq LIMIT 1",
                          (tenant, record_id, record_id))
        return _ledger(rows[0]) if rows else None

    def iter_ledger(self, tenant: str) -> Iterator[LedgerEntry]:
        rows = self._read(f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE tenant_id = ? "
                          "ORDER BY seq", (tenant,))
        for row in rows:
            yield _ledger(row)


def _labels_of(conn: sqlite3.Connection, tenant: str, subject: str) -> list[str]:
    rows = conn.execute("SELECT label FROM label_grants WHERE tenant_id = ? AND subject = ? "
                        "ORDER BY label", (tenant, subject)).fetchall()
    return [str(r[0]) for r in rows]


def _record(conn: sqlite3.Connection, tenant: str, kind: str, actor: str, before: object,
            after: object) -> None:
    append_event(conn, tenant, kind=kind, actor=actor, at=event_time(),
                 before_json=event_json(before), after_json=event_json(after))


def _run(row: Sequence[object]) -> RunRecord:
    return RunRecord(str(row[0]), str(row[1]), str(row[2]),
                     None if row[3] is None else str(row[3]), str(row[4]), str(row[5]))


def _ledger(row: Sequence[object]) -> LedgerEntry:
    return LedgerEntry(int(str(row[0])), str(row[1]), str(row[2]), str(row[3]), str(row[4]),
                       str(row[5]), str(row[6]), int(str(row[7])))


