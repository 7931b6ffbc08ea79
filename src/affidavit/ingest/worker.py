"""``affidavit worker``: ingestion workers that drain the PostgreSQL ingestion queue.

Enqueue a folder with :func:`enqueue_local_folder` (the documents' bytes go into the
queue), then start any number of workers, on any number of machines, against the same
database. Each worker claims a small batch of documents with ``FOR UPDATE SKIP LOCKED``,
runs each through :meth:`affidavit.ingest.run.Ingestor.ingest_one` and commits the document's
version together with its "done" mark (see :mod:`affidavit.store.postgres.queue`). A worker
killed mid-document leaves nothing of that document visible; its claims go stale after
``stale_after`` seconds without a heartbeat and another worker takes them. Workers must
share the deployment's settings file: the policy epoch is part of every version's identity.

A worker serves one tenant (``--tenant`` / settings), because row-level security shows it
that tenant's queue only.

A queued folder is a full listing, as for ``affidavit ingest``: a file that left one path
and appeared at another with the same bytes is recorded as a move when the folder is
queued (:mod:`affidavit.identity.moves`), so the worker that takes it derives a new version
of the same document. The queue withdraws nothing, so the listing it remembers keeps what
it held. When a run is drained, the worker that closes it resolves the links of the
documents it ingested (:mod:`affidavit.index.links`) and adds them, with the moves, to the
run's summary.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from affidavit.config import loader as config_module
from affidavit.config.settings import Settings
from affidavit.errors import AffidavitError, ConfigurationError
from affidavit.identity.moves import Moves
from affidavit.index.links import resolve_links
from affidavit.ingest.catch_up import catch_up
from affidavit.ingest.relabel import stale_documents
from affidavit.ingest.run import QUARANTINED, UNCHANGED, Ingestor
from affidavit.ingest.supersession import Submitter, SupersessionGate
from affidavit.ingest.worker_options import WorkerOptions as WorkerOptions
from affidavit.ingest.worker_options import add_worker_arguments as add_worker_arguments
from affidavit.records import SourceDocument, canonical_json, node_id_for
from affidavit.sources import LocalFolderSource, listing_key
from affidavit.store import open_store
from affidavit.store.postgres.base import now_text
from affidavit.store.postgres.queue import (
    ClaimLost,
    QueueClaim,
    QueueCompletion,
    claim_documents,
    complete_unchanged,
    content_lock,
    enqueue_documents,
    finish_drained_runs,
    heartbeat,
    ingested_aliases,
    pending_documents,
    record_warnings,
    release_claims,
)
from affidavit.store.postgres.store import PostgresStore
from affidavit.store.protocol import QuarantineRecord

ATTEMPTS_EXHAUSTED = "INGEST_ATTEMPTS_EXHAUSTED"
WORKER_ERROR = "WORKER_ERROR"
CATCH_UP_BATCH = 200
"""Stale documents one idle pass of the worker checks (see affidavit.ingest.catch_up)."""


@dataclass
class WorkerReport:
    """What one worker did, for its exit line and for tests."""

    worker_id: str
    processed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    lost_claims: int = 0
    runs_finished: list[str] = field(default_factory=list)
    restamped: int = 0  # documents a policy change left stale but did not affect


def new_worker_id() -> str:
    """host:pid:random, unique per worker process."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def enqueue_local_folder(store: PostgresStore, settings: Settings, path: str | Path,
                         source_system: str, *, tenant: str | None = None) -> str:
    """Queue every document under ``path`` as one ingestion run; returns its run id."""
    source = LocalFolderSource(path, source_system=source_system,
                               max_document_bytes=settings.ingest.max_document_bytes,
                               follow_symlinks=settings.ingest.follow_symlinks)
    ingestor = Ingestor(store, settings, tenant=tenant)
    run_id = "run-" + uuid.uuid4().hex[:16]
    # Documents labelled under another sensitivity policy are derived again from their
    # stored bytes in the same run (until then no reader sees them).
    stale = [document for _, document in stale_documents(ingestor) if document is not None]
    listing = listing_key(str(path))
    documents, moved, seen = _settle_moves(store, ingestor.tenant, listing,
                                           source.list_documents())
    enqueue_documents(store, ingestor.tenant, run_id, [*stale, *documents],
                      params_json=canonical_json({"epoch": ingestor.epoch, "queued": True,
                                                  "listing": listing, "moved": moved}))
    if listing is not None:
        store.replace_listing(ingestor.tenant, listing,
                              sorted(store.listed_nodes(ingestor.tenant, listing) | seen))
    return run_id


def _settle_moves(store: PostgresStore, tenant: str, listing: str | None,
                  listed: Iterable[SourceDocument]
                  ) -> tuple[list[SourceDocument], list[str], set[str]]:
    """The listed documents, each move among them recorded (a new path with the bytes of
    a path the listing lost); the moves as ``old -> new``; the nodes the listing holds."""
    moves = Moves(store, tenant, listing)
    kept = [document for document in listed if not moves.defer(document)]
    seen = [node_id_for(d.source_system, d.source_id) for d in kept]
    deferred = moves.settle(seen)
    seen += [moves.node_for(d.source_id, d.alias) or node_id_for(d.source_system, d.source_id)
             for d in deferred]
    return [*kept, *deferred], [f"{old} -> {new}" for old, new in moves.moved], set(seen)


class Worker:
    """Drains one tenant's ingestion queue."""

    def __init__(self, store: PostgresStore, settings: Settings, *, tenant: str | None = None,
                 worker_id: str | None = None, options: WorkerOptions | None = None):
        if store.pool.max_size < 2:
            # One connection holds the document's content lock while the writes use another.
            raise ConfigurationError("an ingestion worker needs a pool of two connections or "
                                     "more", key="store.db")
        self.store = store
        self.settings = settings
        self.tenant = tenant or settings.tenant
        self.options = options or WorkerOptions()
        self.report = WorkerReport(worker_id or new_worker_id())
        # run id -> whom the run's documents were submitted by (None: an operator's run)
        self._submitters: dict[str, Submitter | None] = {}
        # version ids a policy change affects: withheld until requalified, checked once
        self._affected: set[str] = set()

    def run(self, stop: threading.Event | None = None) -> WorkerReport:
        """Claim and process until stopped (or, with ``once``, until the queue is empty)."""
        stop = stop or threading.Event()
        opts = self.options
        while not stop.is_set():
            claims = claim_documents(self.store, self.tenant, self.report.worker_id,
                                     batch=opts.batch_size, stale_after=opts.stale_after)
            for done, claim in enumerate(claims):
                if stop.is_set():
                    release_claims(self.store, claims[done:])
                    break
                heartbeat(self.store, self.tenant, self.report.worker_id)
                self.process(claim)
            finished = finish_drained_runs(self.store, self.tenant)
            for run_id in finished:
                self._resolve_links(run_id)
            self.report.runs_finished += finished
            if claims:
                continue
            self._catch_up()
            if opts.once and pending_documents(self.store, self.tenant) == 0:
                break
            stop.wait(opts.poll_interval)
        return self.report

    def _catch_up(self) -> None:
        """With the queue idle: a batch of the documents a policy change left stale that it
        does not affect are marked current and serve again (affidavit.ingest.catch_up)."""
        report = catch_up(self.store, self.settings, tenant=self.tenant, limit=CATCH_UP_BATCH,
                          skip=self._affected)
        self._affected.update(report.affected)
        self.report.restamped += len(report.restamped)

    def process(self, claim: QueueClaim) -> None:
        """Ingest (or quarantine) one claimed document and mark it done with its write."""
        view = self.store.completing(QueueCompletion(claim))
        try:
            if claim.attempts > self.options.max_attempts:
                status = self._quarantine(view, claim, ATTEMPTS_EXHAUSTED,
                                          f"gave up after {claim.attempts - 1} attempts")
            else:
                with content_lock(self.store, claim.tenant, claim.document.content):
                    status = self._ingest(view, claim)
        except ClaimLost:
            self.report.lost_claims += 1
            return
        self.report.processed += 1
        self.report.outcomes[status] = self.report.outcomes.get(status, 0) + 1

    def _ingest(self, view: PostgresStore, claim: QueueClaim) -> str:
        ingestor = Ingestor(view, self.settings, tenant=self.tenant)
        submitter = self._submitter(claim.run_id)
        gate = None if submitter is None else SupersessionGate(view, self.settings,
                                                               self.tenant, submitter)
        try:
            outcome = ingestor.ingest_one(claim.document, claim.run_id, gate)
        except AffidavitError:
            raise  # the store is unreachable or the claim is gone: leave it to its owner
        except Exception as exc:  # a defect in a parser must not stop the whole queue
            return self._quarantine(view, claim, WORKER_ERROR, f"{type(exc).__name__}: {exc}")
        if outcome.status == UNCHANGED:
            complete_unchanged(self.store, claim, outcome.warnings)
        elif outcome.warnings:
            record_warnings(self.store, claim, outcome.warnings)
        return outcome.status

    def _submitter(self, run_id: str) -> Submitter | None:
        """The principal a queued run was submitted by over the service, from the run's
        parameters: its documents supersede only what that principal may."""
        if run_id not in self._submitters:
            run = self.store.get_run(self.tenant, run_id)
            params = json.loads(run.params_json or "{}") if run is not None else {}
            self._submitters[run_id] = Submitter.from_params(params)
        return self._submitters[run_id]

    def _resolve_links(self, run_id: str) -> None:
        """Stage D for a drained run: the links of the documents it ingested become edges
        (or unresolved links with their reason); the summary gains them and the moves."""
        run = self.store.get_run(self.tenant, run_id)
        if run is None:
            return
        aliases = set(ingested_aliases(self.store, self.tenant, run_id))
        nodes = [h.node_id for h in self.store.heads(self.tenant) if h.alias in aliases]
        redirects = Moves(self.store, self.tenant, None).redirects
        links = resolve_links(self.store, self.settings, self.tenant, nodes, redirects)
        params = json.loads(run.params_json or "{}")
        summary = {**json.loads(run.summary_json or "{}"), "links": links.to_dict(),
                   "moved": params.get("moved", [])}
        self.store.finish_run(self.tenant, run_id, status=run.status,
                              at=run.finished_at or now_text(),
                              summary_json=canonical_json(summary))

    @staticmethod
    def _quarantine(view: PostgresStore, claim: QueueClaim, reason_code: str,
                    message: str) -> str:
        view.record_quarantine(claim.tenant, QuarantineRecord(
            claim.run_id, claim.document.alias, claim.document.source_id, reason_code, message,
            now_text()))
        return QUARANTINED


# ---------------------------------------------------------------------- command line


def run_worker_command(store: object, settings: Settings, tenant: str,
                       args: argparse.Namespace) -> int:
    """Run a worker as the command line asked; returns the exit status."""
    if not isinstance(store, PostgresStore):
        raise ConfigurationError("the ingestion worker needs a PostgreSQL store "
                                 "(--db postgresql://...)", key="store.db")
    options = WorkerOptions(batch_size=args.batch, stale_after=args.stale_after,
                            poll_interval=args.poll, once=args.once)
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (a deployment stopping the worker): finish the document in hand, then exit.
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    report = Worker(store, settings, tenant=tenant, options=options).run(stop)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())) or "nothing"
    print(f"worker {report.worker_id}: processed {report.processed} ({counts}); "
          f"lost claims {report.lost_claims}; runs finished {len(report.runs_finished)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m affidavit.ingest.worker --db postgresql://... [--once]``."""
    parser = argparse.ArgumentParser(prog="affidavit worker",
                                     description="Drain the PostgreSQL ingestion queue.")
    parser.add_argument("--config", help="settings file (default: ./affidavit.toml)")
    parser.add_argument("--db", help="postgresql:// DSN (env AFFIDAVIT_DB)")
    parser.add_argument("--tenant", help="tenant (env AFFIDAVIT_TENANT)")
    add_worker_arguments(parser)
    args = parser.parse_args(argv)
    try:
        settings = config_module.load(args.config,
                                      overrides={"store.db": args.db, "tenant": args.tenant})
        store = open_store(settings.store.db, settings=settings.store)
    except AffidavitError as exc:
        print(f"affidavit: {exc}", file=sys.stderr)
        return 2
    try:
        return run_worker_command(store, settings, settings.tenant, args)
    except AffidavitError as exc:
        print(f"affidavit: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
