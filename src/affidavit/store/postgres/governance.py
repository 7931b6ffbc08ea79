"""PostgreSQL tables of governance data: runs, quarantine, tuples, grants, SIRE, the ledger.

A mixin of :class:`~affidavit.store.postgres.store.PostgresStore`, method for method the
semantics of :mod:`affidavit.store.sqlite.governance`. The ledger chain is extended under a
per-tenant advisory lock so that concurrent appends from several processes cannot fork it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

import psycopg

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
from affidavit.store.postgres.base import (
    Connection,
    PostgresBase,
    Row,
    ensure_tenant_rows,
    lock_for,
)
from affidavit.store.postgres.policy import append_event
from affidavit.store.postgres.references import insert_references
from affidavit.store.protocol import (
    LedgerEntry,
    QuarantineRecord,
    RelationTuple,
    RunRecord,
    SireRecord,
)

_SIRE_SELECT = (
    "SELECT s.sire_id, s.node_id, s.version_id, v.title, v.alias, s.tuple_json, s.state, "
    "s.proposed_at, s.approved_by, s.approved_at, EXISTS (SELECT 1 FROM head_map h "
    "WHERE h.tenant_id = s.tenant_id AND h.version_id = s.version_id) "
    "FROM sire s JOIN versions v ON v.tenant_id = s.tenant_id AND v.version_id = s.version_id "
)
_RUN_COLUMNS = "run_id, status, started_at, finished_at, summary_json, params_json"
_LEDGER_COLUMNS = ("seq, record_id, request_id, created_at, payload, prev_hash, record_hash, "
                   "link_format")


class GovernanceTables(PostgresBase):
    """Runs, quarantine, relationship tuples, label grants, SIRE records and the ledger."""

    # ------------------------------------------------------------------ runs & quarantine
    def start_run(self, tenant: str, run_id: str, *, at: str, params_json: str) -> None:
        with self.transaction(tenant) as conn:
            ensure_tenant_rows(conn, tenant)
            conn.execute("INSERT INTO runs VALUES (%s, %s, 'RUNNING', %s, NULL, %s, '{}')",
                         (tenant, run_id, at, params_json))

    def finish_run(self, tenant: str, run_id: str, *, status: str, at: str,
                   summary_json: str) -> None:
        with self.transaction(tenant) as conn:
            conn.execute("UPDATE runs SET status = %s, finished_at = %s, summary_json = %s "
                         "WHERE tenant_id = %s AND run_id = %s",
                         (status, at, summary_json, tenant, run_id))

    def get_run(self, tenant: str, run_id: str) -> RunRecord | None:
        rows = self._rows(tenant, f"SELECT {_RUN_COLUMNS} FROM runs WHERE tenant_id = %s "
                                  "AND run_id = %s", (tenant, run_id))
        return _run(rows[0]) if rows else None

    def list_runs(self, tenant: str, limit: int = 50) -> list[RunRecord]:
        rows = self._rows(tenant, f"SELECT {_RUN_COLUMNS} FROM runs WHERE tenant_id = %s "
                                  "ORDER BY started_at DESC, run_id LIMIT %s", (tenant, limit))
        return [_run(r) for r in rows]

    def record_quarantine(self, tenant: str, record: QuarantineRecord) -> None:
        with self.transaction(tenant) as conn:
            ensure_tenant_rows(conn, tenant)
            write_quarantine(conn, tenant, record)
            if self._completion is not None:
                self._completion.on_quarantine(conn, tenant, record)

    def list_quarantine(self, tenant: str, run_id: str | None = None) -> list[QuarantineRecord]:
        query = ("SELECT run_id, alias, source_id, reason_code, message, at, released_by, "
                 "released_at FROM quarantine WHERE tenant_id = %s")
        params: list[object] = [tenant]
        if run_id is not None:
            query += " AND run_id = %s"
            params.append(run_id)
        rows = self._rows(tenant, query + " ORDER BY at, alias", params)
        return [QuarantineRecord(*(str(x) for x in r[:6]), *(_opt(x) for x in r[6:8]))
                for r in rows]

    def release_quarantine(self, tenant: str, run_id: str, alias: str, *, by: str,
                           at: str) -> bool:
        with self.transaction(tenant) as conn:
            cur = conn.execute("UPDATE quarantine SET released_by = %s, released_at = %s "
                               "WHERE tenant_id = %s AND run_id = %s AND alias = %s "
                               "AND released_by IS NULL", (by, at, tenant, run_id, alias))
            return cur.rowcount > 0

    def listed_nodes(self, tenant: str, listing: str) -> set[str]:
        rows = self._rows(tenant, "SELECT node_id FROM source_listings WHERE tenant_id = %s "
                                  "AND listing = %s", (tenant, listing))
        return {str(r[0]) for r in rows}

    def replace_listing(self, tenant: str, listing: str, node_ids: Sequence[str]) -> None:
        with self.transaction(tenant) as conn:
            conn.execute("DELETE FROM source_listings WHERE tenant_id = %s AND listing = %s",
                         (tenant, listing))
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO source_listings VALUES (%s, %s, %s)",
                                [(tenant, listing, n) for n in sorted(set(node_ids))])

    # ------------------------------------------------------------------ authorization data
    # As in SQLite: a row and the policy event behind it commit together.
    def add_tuple(self, tenant: str, rel: RelationTuple, *, at: str,
                  actor: str = LIBRARY_ACTOR) -> bool:
        with self.transaction(tenant) as conn:
            ensure_tenant_rows(conn, tenant)
            lock_for(conn, "policy", tenant)
            cur = conn.execute("INSERT INTO relation_tuples VALUES (%s, %s, %s, %s, %s, %s) "
                               "ON CONFLICT DO NOTHING",
                               (tenant, rel.object, rel.relation, rel.subject, rel.source, at))
            if cur.rowcount > 0:
                _record(conn, tenant, TUPLE_ADD, actor, None, tuple_change(rel))
            return cur.rowcount > 0

    def remove_tuple(self, tenant: str, rel: RelationTuple, *,
                     actor: str = LIBRARY_ACTOR) -> bool:
        with self.transaction(tenant) as conn:
            lock_for(conn, "policy", tenant)
            cur = conn.execute("DELETE FROM relation_tuples WHERE tenant_id = %s AND object = %s "
                               "AND relation = %s AND subject = %s",
                               (tenant, rel.object, rel.relation, rel.subject))
            if cur.rowcount > 0:
                _record(conn, tenant, TUPLE_REMOVE, actor, tuple_change(rel), None)
            return cur.rowcount > 0

    def list_tuples(self, tenant: str) -> list[RelationTuple]:
        rows = self._rows(tenant, "SELECT object, relation, subject, source FROM relation_tuples "
                                  "WHERE tenant_id = %s ORDER BY object, relation, subject",
                          (tenant,))
        return [RelationTuple(*(str(x) for x in r)) for r in rows]

    def grant(self, tenant: str, subject: str, labels: Sequence[str], *, at: str,
              actor: str = LIBRARY_ACTOR) -> int:
        with self.transaction(tenant) as conn:
            ensure_tenant_rows(conn, tenant)
            lock_for(conn, "policy", tenant)  # before and after are read under it
            before = _labels_of(conn, tenant, subject)
            added = 0
            for label in sorted(set(labels)):
                cur = conn.execute("INSERT INTO label_grants VALUES (%s, %s, %s, %s) "
                                   "ON CONFLICT DO NOTHING", (tenant, subject, label, at))
                added += cur.rowcount
            if added:
                _record(conn, tenant, GRANT_ADD, actor, grant_change(subject, before),
                        grant_change(subject, _labels_of(conn, tenant, subject)))
            return added

    def revoke(self, tenant: str, subject: str, labels: Sequence[str], *,
               actor: str = LIBRARY_ACTOR) -> int:
        with self.transaction(tenant) as conn:
            lock_for(conn, "policy", tenant)
            before = _labels_of(conn, tenant, subject)
            cur = conn.execute("DELETE FROM label_grants WHERE tenant_id = %s AND subject = %s "
                               "AND label = ANY(%s)", (tenant, subject, sorted(set(labels))))
            if cur.rowcount:
                _record(conn, tenant, GRANT_REVOKE, actor, grant_change(subject, before),
                        grant_change(subject, _labels_of(conn, tenant, subject)))
            return cur.rowcount

    def policy_generation(self, tenant: str) -> int | None:
        rows = self._rows(tenant, "SELECT COALESCE(g.generation, 0) FROM tenants t LEFT JOIN "
                          "policy_generations g ON g.tenant_id = t.tenant_id "
                          "WHERE t.tenant_id = %s", (tenant,))
        return int(str(rows[0][0])) if rows else None

    def list_grants(self, tenant: str) -> dict[str, tuple[str, ...]]:
        rows = self._rows(tenant, "SELECT subject, label FROM label_grants WHERE tenant_id = %s "
                                  "ORDER BY subject, label", (tenant,))
        out: dict[str, list[str]] = {}
        for subject, label in rows:
            out.setdefault(str(subject), []).append(str(label))
        return {k: tuple(v) for k, v in out.items()}

    # ------------------------------------------------------------------ SIRE
    def list_sire(self, tenant: str, *, state: str | None = None,
                  head_only: bool = True) -> list[SireRecord]:
        where, params = "s.tenant_id = %s", [tenant]
        if state is not None:
            where += " AND s.state = %s"
            params.append(state)
        with self.transaction(tenant) as conn:
            records = _sire_rows(conn, where, params)
        return [r for r in records if r.is_head] if head_only else records

    def set_sire_state(self, tenant: str, sire_id: str, *, state: str, by: str,
                       at: str) -> SireRecord:
        with self.transaction(tenant) as conn:
            cur = conn.execute("UPDATE sire SET state = %s, approved_by = %s, approved_at = %s "
                               "WHERE tenant_id = %s AND sire_id = %s",
                               (state, by, at, tenant, sire_id))
            if cur.rowcount == 0:
                raise NotFound(f"no SIRE record {sire_id}")
            return _sire_rows(conn, "s.tenant_id = %s AND s.sire_id = %s", (tenant, sire_id))[0]

    def activate_sire(self, tenant: str, sire_ids: Sequence[str], *, by: str,
                      at: str) -> list[SireRecord]:
        ids = list(dict.fromkeys(sire_ids))
        if not ids:
            return []
        where = "s.tenant_id = %s AND s.sire_id = ANY(%s)"
        with self.transaction(tenant) as conn:
            known = {str(r[0]) for r in conn.execute(
                "SELECT sire_id FROM sire WHERE tenant_id = %s AND sire_id = ANY(%s) "
                "FOR UPDATE", (tenant, ids)).fetchall()}
            missing = [i for i in ids if i not in known]
            if missing:
                raise NotFound(f"no SIRE record {missing[0]}")
            conn.execute("UPDATE sire SET state = 'ACTIVE', approved_by = %s, approved_at = %s "
                         "WHERE tenant_id = %s AND sire_id = ANY(%s) AND state <> 'ACTIVE'",
                         (by, at, tenant, ids))
            by_id = {r.sire_id: r for r in _sire_rows(conn, where, (tenant, ids))}
        return [by_id[i] for i in ids]

    def active_sire(self, tenant: str, version_ids: Sequence[str]) -> dict[str, SireRecord]:
        ids = sorted(set(version_ids))
        if not ids:
            return {}
        with self.transaction(tenant) as conn:
            records = _sire_rows(conn, "s.tenant_id = %s AND s.state = 'ACTIVE' "
                                       "AND s.version_id = ANY(%s)", (tenant, ids))
        return {r.version_id: r for r in records}

    def active_sire_versions(self, tenant: str, version_ids: Sequence[str]) -> set[str]:
        ids = sorted(set(version_ids))
        if not ids:
            return set()
        rows = self._rows(tenant, "SELECT version_id FROM sire WHERE tenant_id = %s "
                                  "AND state = 'ACTIVE' AND version_id = ANY(%s)", (tenant, ids))
        return {str(r[0]) for r in rows}

    # ------------------------------------------------------------------ ledger
    def append_ledger(self, tenant: str, *, record_id: str, request_id: str, created_at: str,
                      payload: str, references: Sequence[Reference] = ()) -> LedgerEntry:
        try:
            with self.transaction(tenant) as conn:
                ensure_tenant_rows(conn, tenant)
                lock_for(conn, "ledger", tenant)
                row = conn.execute("SELECT seq, record_hash FROM ledger WHERE tenant_id = %s "
                                   "ORDER BY seq DESC LIMIT 1", (tenant,)).fetchone()
                seq, prev = (int(row[0]) + 1, str(row[1])) if row else (1, GENESIS_HASH)
                digest = link_hash(tenant=tenant, seq=seq, record_id=record_id,
                                   request_id=request_id, created_at=created_at,
                                   prev_hash=prev, payload=payload)
                conn.execute(f"INSERT INTO ledger (tenant_id, {_LEDGER_COLUMNS}) "
                             "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                             (tenant, seq, record_id, request_id, created_at, payload, prev,
                              digest, LINK_FORMAT))
                insert_references(conn, tenant, references)
        except (psycopg.Error, StoreError) as exc:
            raise LedgerWriteError(f"ledger append failed: {exc}") from exc
        return LedgerEntry(seq, record_id, request_id, created_at, payload, prev, digest,
                           LINK_FORMAT)

    def get_ledger(self, tenant: str, record_id: str) -> LedgerEntry | None:
        rows = self._rows(tenant, f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE tenant_id = %s "
                                  "AND (record_id = %s OR request_id = %s) ORDER BY seq LIMIT 1",
                          (tenant, record_id, record_id))
        return _ledger(rows[0]) if rows else None

    def iter_ledger(self, tenant: str) -> Iterator[LedgerEntry]:
        rows = self._rows(tenant, f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE tenant_id = %s "
                                  "ORDER BY seq", (tenant,))
        for row in rows:
            yield _ledger(row)


def write_quarantine(conn: Connection, tenant: str, record: QuarantineRecord) -> None:
    """Insert or replace one quarantine record (a new record is not released yet)."""
    conn.execute(
        "INSERT INTO quarantine VALUES (%s, %s, %s, %s, %s, %s, %s, NULL, NULL) "
        "ON CONFLICT (tenant_id, run_id, alias) DO UPDATE SET source_id = EXCLUDED.source_id, "
        "reason_code = EXCLUDED.reason_code, message = EXCLUDED.message, at = EXCLUDED.at, "
        "released_by = NULL, released_at = NULL",
        (tenant, record.run_id, record.alias, record.source_id, record.reason_code,
         record.message, record.at))


def _sire_rows(conn: Connection, where: str, params: Sequence[object]) -> list[SireRecord]:
    rows = conn.execute(_SIRE_SELECT + f"WHERE {where} ORDER BY v.alias, s.sire_id",
                        params).fetchall()
    return [SireRecord(
        sire_id=str(r[0]), node_id=str(r[1]), version_id=str(r[2]), title=str(r[3]),
        alias=str(r[4]), sire=SireTuple.from_dict(json.loads(str(r[5]))), state=str(r[6]),
        proposed_at=str(r[7]), approved_by=None if r[8] is None else str(r[8]),
        approved_at=None if r[9] is None else str(r[9]), is_head=bool(r[10]))
        for r in rows]


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


def _run(row: Row) -> RunRecord:
    return RunRecord(str(row[0]), str(row[1]), str(row[2]), _opt(row[3]), str(row[4]),
                     str(row[5]))


def _ledger(row: Row) -> LedgerEntry:
    return LedgerEntry(int(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4]),
                       str(row[5]), str(row[6]), int(row[7]))


def _labels_of(conn: Connection, tenant: str, subject: str) -> list[str]:
    rows = conn.execute("SELECT label FROM label_grants WHERE tenant_id = %s AND subject = %s "
                        "ORDER BY label", (tenant, subject)).fetchall()
    return [str(r[0]) for r in rows]


def _record(conn: Connection, tenant: str, kind: str, actor: str, before: object,
            after: object) -> None:
    append_event(conn, tenant, kind=kind, actor=actor, at=event_time(),
                 before_json=event_json(before), after_json=event_json(after))
