"""An ingestion run: source → fetch → extract → classify → identify → chunk → index → commit.

Each document version is derived completely in memory and then written in one store
transaction, so a failure at any point leaves it either fully committed or absent. A
document that cannot be processed is quarantined with a reason code and the run continues.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from affidavit.classify.model import ModelParagraphClassifier
from affidavit.classify.overrides import (
    LabelOverride,
)
from affidavit.config.settings import Settings
from affidavit.errors import AffidavitError
from affidavit.identity.moves import Moves
from affidavit.identity.take_over import TakeOvers
from affidavit.index.backends import make_backend
from affidavit.index.boundary import (
    BOUNDARY_EMBEDDER_FAILED,
    BOUNDARY_TOO_FEW_VECTORS,
    Boundary,
    BoundaryFailure,
    boundary_record,
    locked_corpus_boundary,
)
from affidavit.index.embed import embed_missing
from affidavit.index.epochs import policy_epoch, serving_epoch
from affidavit.index.links import resolve_links
from affidavit.ingest.boundary_gate import PromotionGuard
from affidavit.ingest.document import DocumentDerivation
from affidavit.ingest.document import locator_for as locator_for
from affidavit.ingest.lock import holding_ingest_lock
from affidavit.ingest.outcomes import INGESTED as INGESTED
from affidavit.ingest.outcomes import QUARANTINED as QUARANTINED
from affidavit.ingest.outcomes import UNCHANGED as UNCHANGED
from affidavit.ingest.outcomes import DocumentOutcome as DocumentOutcome
from affidavit.ingest.outcomes import RunInterrupted as RunInterrupted
from affidavit.ingest.outcomes import RunSummary as RunSummary
from affidavit.ingest.supersession import Submitter, SupersessionGate
from affidavit.observability.metrics import record_document
from affidavit.observability.traces import configure as configure_telemetry
from affidavit.observability.traces import fetched, traced
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import (
    canonical_json,
    node_id_for,
)
from affidavit.sources import Transport
from affidavit.store.protocol import (
    Store,
)
from affidavit.text.tokenize import Tokenizer

NO_MODEL = "none"

ProgressCallback = Callable[[int, DocumentOutcome], None]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Ingestor(DocumentDerivation):
    """Runs ingestion for one tenant against one store."""

    def __init__(self, store: Store, settings: Settings, *, tenant: str | None = None):
        from affidavit.identity.exclusion_check import check_ingest_excludes

        # Every ingestion path (CLI, service, queue worker, requalify) builds an Ingestor:
        # under [sire] require_excludes none proposes SIRE that would exclude nothing.
        check_ingest_excludes(settings)
        self.store = store
        self.settings = settings
        self.tenant = tenant or settings.tenant
        self.policy = SensitivityPolicy.from_settings(settings.sensitivity)
        lex = settings.lexical
        self.tokenizer = Tokenizer(lex.language, lex.stem, lex.stop_words)
        self.epoch = policy_epoch(settings, self.tokenizer, self.tenant)
        # The key every chunk is stamped with and read under (index.epochs.serving_epoch):
        # the witness family without the digest, of which the label epoch is one part.
        self.label_epoch = serving_epoch(settings, self.tenant)
        self.classifier = ModelParagraphClassifier.from_settings(settings.sensitivity.model,
                                                                 self.policy)
        self._overrides: dict[str, tuple[LabelOverride, ...]] | None = None
        self._take_overs = TakeOvers(self.store, self.tenant)
        self._moves: Moves | None = None
        # The links each version committed by this run was parsed with, by version id:
        # link resolution at the end of the run reads them here instead of parsing again.
        self._links: dict[str, tuple[str, ...]] = {}
        # node id → the version a failed run's boundary puts back (index.boundary_gate)
        self.restoring: dict[str, str] = {}
        configure_telemetry(settings.telemetry)

    def over(self, store: Store) -> Ingestor:
        """This ingestor's settings, policy, classifier and epochs over another ``store`` (a
        requalifier's in-memory derivation): only what is bound to a store starts afresh,
        so deriving one document does not compute the epochs again."""
        other = copy.copy(self)
        other.store = store
        other._overrides = None
        other._take_overs = TakeOvers(store, self.tenant)
        other._moves = None
        other._links = {}
        other.restoring = {}
        return other

    @traced("ingest.run", lambda s: {"affidavit.run_status": s.status,
                                     "affidavit.documents": len(s.outcomes)})
    def run(self, sources: Iterable[Transport], *, progress: ProgressCallback | None = None,
            listing: str | None = None, wait_seconds: float = 0.0,
            on_wait: Callable[[str], None] | None = None,
            run_id: str | None = None, submitter: Submitter | None = None) -> RunSummary:
        """Ingest every document the sources list (as run ``run_id`` when given: the
        service names a run before it starts).

        ``listing`` names a full listing of one source location (a folder, a manifest, an
        SFTP root): nodes that its previous listing contained and this one does not are
        withdrawn, so deletions at the source reach the index.

        One run per tenant at a time (:mod:`affidavit.ingest.lock`): while another run holds
        the tenant, this one waits up to ``wait_seconds``, telling ``on_wait`` once, then
        raises :class:`~affidavit.errors.RunInProgress` without having started.

        ``submitter`` is the verified principal a service submission acts for: each of its
        documents supersedes a head only as :mod:`affidavit.ingest.supersession` admits.
        """
        with holding_ingest_lock(self.store, self.tenant, wait_seconds=wait_seconds,
                                 on_wait=on_wait):
            return self._run_holding_lock(sources, progress, listing, run_id, submitter)

    def _run_holding_lock(self, sources: Iterable[Transport],
                          progress: ProgressCallback | None, listing: str | None,
                          run_id: str | None = None,
                          submitter: Submitter | None = None) -> RunSummary:
        summary = RunSummary(run_id=run_id or "run-" + uuid.uuid4().hex[:16])
        gate = None if submitter is None else SupersessionGate(self.store, self.settings,
                                                               self.tenant, submitter)
        self._overrides = None  # overrides recorded since the last run are in force now
        self._take_overs = TakeOvers(self.store, self.tenant)  # and take-overs
        self._close_interrupted_runs()
        self.store.start_run(self.tenant, summary.run_id, at=_now(), params_json=canonical_json(
            {"epoch": self.epoch, "pid": os.getpid(), "host": socket.gethostname(),
             "listing": listing, **(submitter.to_params() if submitter else {})}))
        seen: list[str] = []
        self._moves = Moves(self.store, self.tenant, listing)
        guard = PromotionGuard.start(self) if self._locks_boundary() else None
        try:
            self._relabel_stale(summary)
            for source in sources:
                # Versions share store transactions, each still all or nothing on its own.
                with self.store.batched():
                    for document in fetched(source.list_documents()):
                        if self._moves.defer(document):
                            continue  # a move, if its old path disappeared (identity.moves)
                        outcome = self.ingest_one(document, summary.run_id, gate)
                        record_document(outcome.status)
                        summary.outcomes.append(outcome)
                        seen.append(outcome.node_id or node_id_for(document.source_system,
                                                                   document.source_id))
                        if progress is not None:
                            progress(len(summary.outcomes), outcome)
            with self.store.batched():
                for document in self._moves.settle(seen):
                    outcome = self.ingest_one(document, summary.run_id, gate)
                    record_document(outcome.status)
                    summary.outcomes.append(outcome)
                    seen.append(outcome.node_id or node_id_for(document.source_system,
                                                               document.source_id))
            summary.moved = [f"{old} -> {new}" for old, new in self._moves.moved]
            if listing is not None:
                summary.withdrawn = self._withdraw_missing(listing, seen, summary.run_id)
            summary.links = resolve_links(
                self.store, self.settings, self.tenant,
                [o.node_id for o in summary.outcomes if o.status == INGESTED and o.node_id],
                self._moves.redirects, parsed=self._links).to_dict()
            self._vectors_and_boundary(summary, guard)
        except BoundaryFailure as failure:
            # No boundary, no promotion (spec 003 §10.1): the previous heads serve again.
            summary.status = "FAILED"
            try:
                if guard is not None:
                    summary.boundary = guard.take_back(summary.run_id, failure)
            finally:  # a take-back that fails too still leaves the run FAILED, not RUNNING
                self._finish(summary)
            raise
        except KeyboardInterrupt:
            summary.status = "FAILED"
            self._finish(summary)
            raise RunInterrupted(summary) from None
        except BaseException:
            summary.status = "FAILED"
            self._finish(summary)
            raise
        summary.status = "DEGRADED" if summary.count(QUARANTINED) else "COMPLETED"
        self._finish(summary)
        return summary

    def _relabel_stale(self, summary: RunSummary) -> None:
        """Derive again, from their stored bytes, documents labelled under another policy
        (until then readers do not see them; see :mod:`affidavit.ingest.relabel`)."""
        from affidavit.ingest.relabel import relabel_stale

        for outcome in relabel_stale(self, summary.run_id, _now()):
            if outcome.status == QUARANTINED:
                summary.outcomes.append(outcome)
            else:
                summary.relabelled.append(outcome.alias)

    @traced("index.vectors")
    def _vectors_and_boundary(self, summary: RunSummary,
                              guard: PromotionGuard | None = None) -> None:
        """Embed new chunks and lock the run's geometric boundary (spec 003 §6.2).

        A failure here fails the run: embedding is systemic, not one document's fault.
        """
        backend = make_backend(self.settings.vectors)
        if backend is None or not self._locks_boundary():
            return
        # Only the declared embedding egress is sent; the rest stays lexical-only.
        try:
            report = embed_missing(self.store, self.tenant, backend,
                                   batch_size=self.settings.vectors.batch_size,
                                   labels=self.settings.egress.embedding_labels,
                                   label_epoch=self.label_epoch)
        except AffidavitError as exc:
            raise BoundaryFailure(BOUNDARY_EMBEDDER_FAILED, str(exc)) from exc
        summary.vectors = report.to_dict()
        try:
            boundary: Boundary | None = locked_corpus_boundary(self.store, self.tenant,
                                                               backend.model_id)
        except BoundaryFailure as failure:
            if (failure.reason_code != BOUNDARY_TOO_FEW_VECTORS or guard is None
                    or guard.promoted()):
                raise
            boundary = None  # nothing promoted, nothing to take back (index.boundary_gate)
        record = boundary_record(boundary, backend.model_id,
                                 [o.alias for o in summary.outcomes if o.status == QUARANTINED],
                                 confidence=self.settings.vectors.boundary_confidence)
        # The matrix itself is recomputed from the served vectors when needed; the run
        # keeps its digest and the DEGRADED_BOUNDARY annotation naming what was left out.
        record.pop("boundary", None)
        summary.boundary = record

    def _locks_boundary(self) -> bool:
        """Whether runs embed their chunks and lock a boundary (vectors computed at ingest)."""
        return (self.settings.vectors.backend.strip().lower() != "none"
                and self.settings.vectors.compute == "ingest")

    def _withdraw_missing(self, listing: str, seen: list[str], run_id: str) -> list[str]:
        gone = sorted(self.store.listed_nodes(self.tenant, listing) - set(seen))
        withdrawn = []
        for node_id in gone:
            head = self.store.head(self.tenant, node_id)
            if self.store.withdraw(self.tenant, node_id, run_id=run_id, at=_now()):
                withdrawn.append(head.alias if head else node_id)
        self.store.replace_listing(self.tenant, listing, seen)
        return withdrawn

    def _close_interrupted_runs(self) -> None:
        """Mark FAILED every other run still marked RUNNING: it was killed.

        Called holding the tenant's ingestion lock, which a live run would be holding, so
        this needs no process id (which another process may have reused) and works for runs
        of any host. A queue's runs are drained by workers, not one process: left alone.
        """
        for run in self.store.list_runs(self.tenant, limit=20):
            if run.status != "RUNNING":
                continue
            if not json.loads(run.params_json or "{}").get("queued"):
                self.store.finish_run(self.tenant, run.run_id, status="FAILED", at=_now(),
                                      summary_json=canonical_json({"interrupted": True}))

    def _finish(self, summary: RunSummary) -> None:
        self.store.finish_run(self.tenant, summary.run_id, status=summary.status, at=_now(),
                              summary_json=canonical_json(summary.to_dict()))
