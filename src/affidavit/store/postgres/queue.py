"""The ingestion queue of the PostgreSQL backend: queued runs, claimed documents.

A queued run is a ``runs`` row (``QUEUED`` → ``RUNNING`` → ``COMPLETED`` | ``DEGRADED``)
and one ``ingest_queue`` row per source document, bytes included. Workers claim documents,
not runs, so several workers share one run:

* :func:`claim_documents` takes a batch with ``FOR UPDATE SKIP LOCKED`` (two workers never
  take the same row) and stamps it with the worker, a fresh claim token and a heartbeat;
  rows whose heartbeat is older than ``stale_after`` seconds are claimable again, which is
  how a killed worker's documents are picked up;
* :class:`QueueCompletion` marks a document done *inside* the transaction that commits its
  version or its quarantine record, and only while the claim token still matches: a
  document is never half-visible, and a worker whose claim was taken over cannot commit
  (:class:`ClaimLost`) — so each document is ingested exactly once;
* :func:`finish_drained_runs` closes runs whose documents are all done, with the same
  summary an in-process :class:`~affidavit.ingest.run.Ingestor` run writes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from affidavit.errors import StoreError
from affidavit.records import DocumentMetadata, SourceDocument, canonical_json, sha256_hex
from affidavit.store.postgres.base import (
    Connection,
    PostgresBase,
    Row,
    ensure_tenant_rows,
    lock_for,
    now_text,
)
from affidavit.store.protocol import QuarantineRecord, VersionBundle

INGESTED, UNCHANGED, QUARANTINED = "ingested", "unchanged", "quarantined"

_CLAIM = """
WITH picked AS (
    SELECT run_id, seq FROM ingest_queue
    WHERE tenant_id = %(tenant)s AND status <> 'done' AND (status = 'queued'
          OR (status = 'claimed' AND heartbeat < now() - make_interval(secs => %(stale)s)))
    ORDER BY enqueued_at, run_id, seq
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
)
UPDATE ingest_queue q SET status = 'claimed', claimed_by = %(worker)s, claim_token = %(token)s,
       claimed_at = now(), heartbeat = now(), attempts = q.attempts + 1
FROM picked WHERE q.tenant_id = %(tenant)s AND q.run_id = picked.run_id AND q.seq = picked.seq
RETURNING q.run_id, q.seq, q.attempts, q.source_system, q.source_id, q.source_rev, q.alias,
          q.content, q.metadata_json, q.rejection_json
"""


class ClaimLost(StoreError):
    """The document's claim went stale and another worker took it over."""


@dataclass(frozen=True)
class QueueClaim:
    """One claimed document: where it sits in the queue, and the document itself."""

    tenant: str
    run_id: str
    seq: int
    token: str
    attempts: int
    document: SourceDocument


def enqueue_documents(store: PostgresBase, tenant: str, run_id: str,
                      documents: Iterable[SourceDocument], *, params_json: str) -> int:
    """Create a ``QUEUED`` run holding ``documents``, atomically; returns how many."""
    rows = [(tenant, run_id, seq, d.source_system, d.source_id, d.source_rev, d.alias, d.content,
             canonical_json(d.metadata.to_dict()),
             None if d.rejection is None else json.dumps(list(d.rejection)))
            for seq, d in enumerate(documents, start=1)]
    with store.transaction(tenant) as conn:
        ensure_tenant_rows(conn, tenant)
        conn.execute("INSERT INTO runs VALUES (%s, %s, 'QUEUED', %s, NULL, %s, '{}')",
                     (tenant, run_id, now_text(), params_json))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO ingest_queue (tenant_id, run_id, seq, source_system, source_id, "
                "source_rev, alias, content, metadata_json, rejection_json) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
    return len(rows)


def claim_documents(store: PostgresBase, tenant: str, worker_id: str, *, batch: int,
                    stale_after: float) -> list[QueueClaim]:
    """Claim up to ``batch`` queued (or stale) documents for ``worker_id``."""
    token = uuid.uuid4().hex
    params = {"tenant": tenant, "stale": stale_after, "batch": batch, "worker": worker_id,
              "token": token}
    with store.transaction(tenant) as conn:
        rows = conn.execute(_CLAIM, params).fetchall()
        runs = sorted({str(r[0]) for r in rows})
        if runs:
            conn.execute("UPDATE runs SET status = 'RUNNING' WHERE tenant_id = %s "
                         "AND run_id = ANY(%s) AND status = 'QUEUED'", (tenant, runs))
    claims = [_claim(tenant, token, r) for r in rows]
    return sorted(claims, key=lambda c: (c.run_id, c.seq))


def heartbeat(store: PostgresBase, tenant: str, worker_id: str) -> int:
    """Refresh the heartbeat of every document ``worker_id`` holds; returns how many."""
    with store.transaction(tenant) as conn:
        return conn.execute("UPDATE ingest_queue SET heartbeat = now() WHERE tenant_id = %s "
                            "AND claimed_by = %s AND status = 'claimed'",
                            (tenant, worker_id)).rowcount


@contextmanager
def content_lock(store: PostgresBase, tenant: str, content: bytes) -> Iterator[None]:
    """Hold the tenant-wide lock of these exact bytes while a document is derived and written.

    Two queued copies of one document (the same folder queued twice) would otherwise be
    derived side by side and race to commit the same version; under the lock the second
    finds the first's head and is ``unchanged``. A session lock, released here or, if the
    worker dies, by the server when its connection drops.
    """
    key = f"affidavit:content:{tenant}:{sha256_hex(content)}"
    with store.pool_connection() as conn:
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))


def release_claims(store: PostgresBase, claims: Iterable[QueueClaim]) -> int:
    """Give claimed, unprocessed documents back to the queue (a worker shutting down)."""
    held = list(claims)
    if not held:
        return 0
    with store.transaction(held[0].tenant) as conn:
        return sum(conn.execute(
            "UPDATE ingest_queue SET status = 'queued', claimed_by = NULL, claim_token = NULL, "
            "heartbeat = NULL, attempts = attempts - 1 WHERE tenant_id = %s AND run_id = %s "
            "AND seq = %s AND status = 'claimed' AND claim_token = %s",
            (c.tenant, c.run_id, c.seq, c.token)).rowcount for c in held)


class QueueCompletion:
    """Marks one claimed document done in the transaction of its final write."""

    def __init__(self, claim: QueueClaim):
        self.claim = claim

    def on_commit(self, conn: Connection, bundle: VersionBundle) -> None:
        complete(conn, self.claim, INGESTED, chunks=len(bundle.chunks))

    def on_quarantine(self, conn: Connection, tenant: str, record: QuarantineRecord) -> None:
        complete(conn, self.claim, QUARANTINED, reason_code=record.reason_code,
                 message=record.message)


def complete(conn: Connection, claim: QueueClaim, outcome: str, *, chunks: int = 0,
             reason_code: str | None = None, message: str | None = None,
             warnings: Iterable[str] = ()) -> None:
    """Mark the claimed document done; raise :class:`ClaimLost` if the claim is not ours."""
    done = conn.execute(
        "UPDATE ingest_queue SET status = 'done', outcome = %s, chunks = %s, reason_code = %s, "
        "message = %s, warnings_json = %s, finished_at = now() WHERE tenant_id = %s "
        "AND run_id = %s AND seq = %s AND status = 'claimed' AND claim_token = %s",
        (outcome, chunks, reason_code, message, json.dumps(list(warnings)), claim.tenant,
         claim.run_id, claim.seq, claim.token)).rowcount
    if done != 1:
        raise ClaimLost(f"document {claim.document.alias} of {claim.run_id} was claimed "
                        "by another worker")


def complete_unchanged(store: PostgresBase, claim: QueueClaim,
                       warnings: Iterable[str] = ()) -> None:
    """Mark a document done that needed no write (its head already had this fingerprint)."""
    with store.transaction(claim.tenant) as conn:
        complete(conn, claim, UNCHANGED, warnings=warnings)


def record_warnings(store: PostgresBase, claim: QueueClaim, warnings: Iterable[str]) -> None:
    """Attach warnings to a completed document of this claim (for the run summary)."""
    with store.transaction(claim.tenant) as conn:
        conn.execute("UPDATE ingest_queue SET warnings_json = %s WHERE tenant_id = %s "
                     "AND run_id = %s AND seq = %s AND claim_token = %s",
                     (json.dumps(list(warnings)), claim.tenant, claim.run_id, claim.seq,
                      claim.token))


def pending_documents(store: PostgresBase, tenant: str) -> int:
    """Documents of the tenant not done yet (queued or claimed)."""
    with store.transaction(tenant) as conn:
        row = conn.execute("SELECT count(*) FROM ingest_queue WHERE tenant_id = %s "
                           "AND status <> 'done'", (tenant,)).fetchone()
    return int(row[0]) if row else 0


def ingested_aliases(store: PostgresBase, tenant: str, run_id: str) -> list[str]:
    """The paths of the documents a queued run derived a new version of, in queue order."""
    with store.transaction(tenant) as conn:
        rows = conn.execute("SELECT alias FROM ingest_queue WHERE tenant_id = %s AND run_id = %s "
                            "AND outcome = %s ORDER BY seq", (tenant, run_id, INGESTED)
                            ).fetchall()
    return [str(r[0]) for r in rows]


def finish_drained_runs(store: PostgresBase, tenant: str) -> list[str]:
    """Close every open run whose documents are all done; returns their ids."""
    finished: list[str] = []
    with store.transaction(tenant) as conn:
        lock_for(conn, "runs", tenant)
        drained = conn.execute(
            "SELECT r.run_id FROM runs r WHERE r.tenant_id = %s "
            "AND r.status IN ('QUEUED', 'RUNNING') "
            "AND EXISTS (SELECT 1 FROM ingest_queue q WHERE q.tenant_id = r.tenant_id "
            "AND q.run_id = r.run_id) AND NOT EXISTS (SELECT 1 FROM ingest_queue q "
            "WHERE q.tenant_id = r.tenant_id AND q.run_id = r.run_id AND q.status <> 'done') "
            "ORDER BY r.run_id", (tenant,)).fetchall()
        for (run_id,) in drained:
            summary = run_summary(conn, tenant, str(run_id))
            conn.execute("UPDATE runs SET status = %s, finished_at = %s, summary_json = %s "
                         "WHERE tenant_id = %s AND run_id = %s",
                         (summary["status"], now_text(), canonical_json(summary), tenant,
                          run_id))
            finished.append(str(run_id))
    return finished


def run_summary(conn: Connection, tenant: str, run_id: str) -> dict[str, Any]:
    """The summary of a drained run, shaped like ``RunSummary.to_dict()``."""
    rows = conn.execute(
        "SELECT alias, source_id, outcome, reason_code, message, chunks, warnings_json "
        "FROM ingest_queue WHERE tenant_id = %s AND run_id = %s ORDER BY seq",
        (tenant, run_id)).fetchall()
    quarantined = [{"alias": str(r[0]), "source_id": str(r[1]), "reason_code": r[3],
                    "message": r[4]} for r in rows if r[2] == QUARANTINED]
    return {
        "run_id": run_id,
        "status": "DEGRADED" if quarantined else "COMPLETED",
        "ingested": sum(1 for r in rows if r[2] == INGESTED),
        "unchanged": sum(1 for r in rows if r[2] == UNCHANGED),
        "quarantined": quarantined,
        "chunks_written": sum(int(r[5]) for r in rows if r[2] == INGESTED),
        "withdrawn": [],
        "warnings": [f"{r[0]}: {w}" for r in rows for w in json.loads(str(r[6]))],
    }


def _claim(tenant: str, token: str, row: Row) -> QueueClaim:
    metadata = json.loads(str(row[8]))
    rejection = json.loads(str(row[9])) if row[9] is not None else None
    document = SourceDocument(
        source_system=str(row[3]), source_id=str(row[4]), source_rev=str(row[5]),
        content=bytes(row[7]), alias=str(row[6]), metadata=_metadata(metadata),
        rejection=None if rejection is None else (str(rejection[0]), str(rejection[1])))
    return QueueClaim(tenant, str(row[0]), int(row[1]), token, int(row[2]), document)


def _metadata(data: dict[str, Any]) -> DocumentMetadata:
    acl = data.get("acl")
    return DocumentMetadata(
        source_id=data.get("source_id"), title=data.get("title"),
        acl=None if acl is None else tuple(acl), classification=data.get("classification"),
        oracle_id=data.get("oracle_id"), frameworks=tuple(data.get("frameworks") or ()))
