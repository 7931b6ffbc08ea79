"""An ingestion run: source → fetch → extract → classify → identify → chunk → index → commit.

Each document version is derived completely in memory and then written in one store
transaction, so a failure at any point leaves it either fully committed or absent. A
document that cannot be processed is quarantined with a reason code and the run continues.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import PurePosixPath

from affidavit.authz.tuples import document_object_tokens, parse_subject
from affidavit.chunking import chunk_document
from affidavit.chunking.ids import chunk_ids
from affidavit.classify import SensitivityPolicy, build_segments
from affidavit.classify.derived import DocumentDerivedLabels, format_locator, label_derived
from affidavit.classify.document import effective_declared, label_bound
from affidavit.classify.dropped import DROPPED_KEY, label_dropped
from affidavit.classify.labels import label_text
from affidavit.classify.model import ModelParagraphClassifier, classifier_identity
from affidavit.classify.overrides import (
    LabelOverride,
    LapsedOverride,
    overrides_digest,
    overrides_in_force,
    present_in,
    record_lapses,
)
from affidavit.config import Settings
from affidavit.errors import AffidavitError, InputRejected
from affidavit.extract import extract
from affidavit.identity import (
    SireInputs,
    propose_labelled_sire,
    version_id_for,
    witness_for,
)
from affidavit.identity.carry_over import approved_before, carry_over_commit
from affidavit.identity.moves import Moves
from affidavit.identity.take_over import TakeOvers
from affidavit.index import Tokenizer, term_frequencies
from affidavit.index.boundary import (
    BOUNDARY_EMBEDDER_FAILED,
    BOUNDARY_TOO_FEW_VECTORS,
    Boundary,
    BoundaryFailure,
    boundary_record,
    locked_corpus_boundary,
)
from affidavit.index.boundary_gate import PromotionGuard
from affidavit.index.drift import check_drift
from affidavit.index.embed import embed_missing
from affidavit.index.epochs import RESOLVER_VERSION, policy_epoch, serving_epoch
from affidavit.index.links import resolve_links
from affidavit.index.vectors import make_backend
from affidavit.ingest_lock import holding_ingest_lock
from affidavit.ingest_outcomes import INGESTED as INGESTED
from affidavit.ingest_outcomes import QUARANTINED as QUARANTINED
from affidavit.ingest_outcomes import UNCHANGED as UNCHANGED
from affidavit.ingest_outcomes import DocumentOutcome as DocumentOutcome
from affidavit.ingest_outcomes import RunInterrupted as RunInterrupted
from affidavit.ingest_outcomes import RunSummary as RunSummary
from affidavit.metrics import record_derived, record_document
from affidavit.records import (
    SCHEMA_VERSION,
    Chunk,
    ChunkDraft,
    DocumentMetadata,
    ExtractedDocument,
    RawBlob,
    SourceDocument,
    canonical_json,
    node_id_for,
    sha256_hex,
    stable_hash,
)
from affidavit.sources import Transport
from affidavit.store.base import (
    IDENTITY_COLLISION,
    HeadInfo,
    QuarantineRecord,
    Store,
    VersionBundle,
    identity_collision,
)
from affidavit.supersession import Submitter, SupersessionGate
from affidavit.telemetry import configure as configure_telemetry
from affidavit.telemetry import extract_format, fetched, id_hash, stage, traced

NO_MODEL = "none"

ProgressCallback = Callable[[int, DocumentOutcome], None]


@dataclass(frozen=True)
class _Identity:
    """An extracted document and the node it claims."""

    extracted: ExtractedDocument
    metadata: DocumentMetadata
    source_id: str
    node_id: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Ingestor:
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

        One run per tenant at a time (:mod:`affidavit.ingest_lock`): while another run holds
        the tenant, this one waits up to ``wait_seconds``, telling ``on_wait`` once, then
        raises :class:`~affidavit.errors.RunInProgress` without having started.

        ``submitter`` is the verified principal a service submission acts for: each of its
        documents supersedes a head only as :mod:`affidavit.supersession` admits.
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
        (until then readers do not see them; see :mod:`affidavit.relabel`)."""
        from affidavit.relabel import relabel_stale

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

    @traced("ingest.document", lambda o: {"affidavit.status": o.status,
                                          "affidavit.reason_code": o.reason_code or "",
                                          "affidavit.chunks": o.chunks})
    def ingest_one(self, document: SourceDocument, run_id: str,
                   gate: SupersessionGate | None = None) -> DocumentOutcome:
        """Derive and commit one document (quarantined, with its reason, when it cannot
        be); a submitted one (``gate``) supersedes a head only as the gate admits."""
        identity: _Identity | None = None
        try:
            if document.rejection is not None:
                raise InputRejected(*document.rejection)
            identity = self._identify(document)
            return self._derive_and_commit(document, identity, run_id, gate)
        except InputRejected as exc:
            outcome = DocumentOutcome(document.alias, document.source_id, QUARANTINED,
                                      exc.reason_code, exc.detail)
        except AffidavitError as exc:
            outcome = DocumentOutcome(document.alias, document.source_id, QUARANTINED,
                                      "PROCESSING_FAILED", str(exc))
        if identity is not None:
            # The node the document declared stays listed (a failed edit never withdraws
            # it), except when the claim itself was refused: the node is another path's,
            # listed only if that path is, and this document counts as its path alone.
            outcome.source_id = identity.source_id
            outcome.node_id = identity.node_id
            if outcome.reason_code == IDENTITY_COLLISION:
                outcome.node_id = node_id_for(document.source_system, document.alias)
        self.store.record_quarantine(self.tenant, QuarantineRecord(
            run_id, document.alias, outcome.source_id, outcome.reason_code or "",
            outcome.message or "", _now()))
        return outcome

    def _identify(self, document: SourceDocument) -> _Identity:
        """Extract the document and settle which node it claims (front matter over sidecar)."""
        # The span names the format and hashed ids: never the path, title or text.
        with stage(f"extract.{extract_format(document.alias)}", {
                "affidavit.source_id_hash": id_hash(document.source_id),
                "affidavit.raw_digest_prefix": sha256_hex(document.content)[:12],
                "affidavit.bytes": len(document.content)}):
            extracted = extract(document.content, filename=document.alias,
                                limits=self.settings.ingest)
        metadata = _merge_metadata(extracted.metadata, document.metadata)
        source_id = metadata.source_id or document.source_id
        if self._moves is None:  # a single document (relabel, requalify): redirects only
            self._moves = Moves(self.store, self.tenant, None)
        moved_to = self._moves.node_for(source_id, document.alias)
        return _Identity(extracted, metadata, source_id,
                         moved_to or node_id_for(document.source_system, source_id))

    def _derive_and_commit(self, document: SourceDocument, identity: _Identity,
                           run_id: str, gate: SupersessionGate | None = None
                           ) -> DocumentOutcome:
        extracted, metadata = identity.extracted, identity.metadata
        source_id, node_id = identity.source_id, identity.node_id
        outcome = DocumentOutcome(document.alias, source_id, INGESTED, node_id=node_id)
        # Before anything that could tell the submitter about the head (unchanged, drift,
        # a path collision): a submission it may not make is refused the same way.
        superseding = gate.admit(node_id) if gate is not None else None
        raw_digest = sha256_hex(document.content)
        owner = self.store.identity_owner(self.tenant, node_id)
        if owner is not None and owner != document.alias:
            # Another path holds this source id: never taken over silently. The store
            # refuses it again, atomically, at commit; an operator resolves it.
            raise identity_collision(source_id, document.alias, raw_digest)
        if owner is not None:
            self._take_overs.check(node_id, document.alias, raw_digest, source_id)
        acl = self._acl_for(metadata, outcome)
        # The classifier model and prompt are part of the witness ("none" when off).
        model_id, prompt_hash = classifier_identity(self.settings.sensitivity.model,
                                                    self.policy)
        witness = witness_for(raw_digest, policy_epoch=self.epoch, schema_version=SCHEMA_VERSION,
                              resolver_version=RESOLVER_VERSION, model_id=model_id,
                              prompt_hash=prompt_hash)
        metadata_json = canonical_json({**metadata.to_dict(), "source_id": source_id,
                                        "acl": list(acl),
                                        DROPPED_KEY: self._dropped(extracted, metadata,
                                                                   document.alias)})
        if self._overrides is None:  # read once per run: the trail is replayed, not queried
            self._overrides = overrides_in_force(self.store, self.tenant)
        overrides = self._overrides.get(node_id, ())
        # A recorded label override changes the labels: the document is derived again. One
        # whose paragraph text is gone changes nothing; it lapses when the document is.
        fingerprint = stable_hash("fingerprint", raw_digest, metadata_json, witness, *filter(
            None, [overrides_digest(present_in(extracted, overrides))]))
        head = self.store.head(self.tenant, node_id)
        if head is not None and head.fingerprint == fingerprint:
            outcome.status = UNCHANGED
            return outcome
        restoring = self.restoring.get(node_id)
        # The previous version keeps serving past the drift gate; a version put back after
        # a boundary failure was served before and passes (index.boundary_gate).
        if head is not None and restoring is None:
            check_drift(self.store, self.tenant, head, extracted, len(document.content),
                        raw_digest, alias=document.alias, limits=self.settings.ingest,
                        thresholds=self.settings.drift)
        version_id = self._unused_version_id(
            version_id_for(node_id, raw_digest, stable_hash(metadata_json), witness), head)
        bundle, lapsed = self._bundle(document, extracted, metadata, source_id, node_id,
                                      version_id, acl, raw_digest, witness, metadata_json,
                                      fingerprint, run_id, overrides)
        approved = (approved_before(self.store, self.tenant, restoring or head.version_id)
                    if head else None)
        if gate is not None:
            bundle = replace(bundle, submitted_by=gate.submitter.principal)
        with stage("index.commit", {"affidavit.chunks": len(bundle.chunks)}):
            self.store.commit_version(bundle)
        if gate is not None and superseding is not None:
            gate.record(superseding, bundle)
        # Overrides that no longer match their paragraph lapse once the version that
        # dropped them is in (affidavit.bindings).
        record_lapses(self.store, self.tenant, lapsed)
        # An approval binds to the proposal: an identical one keeps it (identity.carry_over).
        carry_over_commit(self.store, self.tenant, approved, bundle, at=_now())
        outcome.chunks = len(bundle.chunks)
        self._links[version_id] = tuple(extracted.links)
        record_derived(self.store, self.tenant, self.settings, document.alias, extracted.links,
                       tokens=sum(bundle.chunk_lengths.values()))
        return outcome

    def _dropped(self, extracted: ExtractedDocument, metadata: DocumentMetadata,
                 alias: str) -> list[dict[str, str | None]]:
        """Labels of what the extractor dropped: the original file carries it too."""
        declared = metadata.classification.upper() if metadata.classification else None
        declared = effective_declared(self.policy, declared, self.settings.sensitivity.inherit,
                                      alias)
        return label_dropped(extracted.dropped, policy=self.policy, declared=declared,
                             path=alias)

    def _unused_version_id(self, version_id: str, head: HeadInfo | None) -> str:
        """A restore of bytes the node had before is a new version superseding the head,
        like any edit: the old version stays history (its chunks, its SIRE approval) and is
        never brought back. Deterministic: it depends only on what is stored."""
        while self.store.version_metadata(self.tenant, version_id) is not None:
            version_id = stable_hash("version-restored", version_id,
                                     head.version_id if head else "withdrawn")
        return version_id

    def _acl_for(self, metadata: DocumentMetadata, outcome: DocumentOutcome) -> tuple[str, ...]:
        """The version's ACL tokens: its subjects, its ``doc:`` object and the ``folder:``
        objects of its path, so that viewer and parent tuples on them (folder inheritance)
        take effect at query time with no re-index."""
        default = self.settings.policy_for(self.tenant).acl.default
        subjects = metadata.acl if metadata.acl is not None else default
        acl = {parse_subject(s) for s in subjects}
        if not acl:
            outcome.warnings.append("no acl in its metadata and no [acl] default configured: "
                                    "nobody can read it but viewers named by doc: or folder: "
                                    "tuples")
        if outcome.node_id:
            acl.update(document_object_tokens(outcome.node_id, outcome.alias))
        return tuple(sorted(acl))

    def _bundle(self, document: SourceDocument, extracted: ExtractedDocument,
                metadata: DocumentMetadata, source_id: str, node_id: str, version_id: str,
                acl: tuple[str, ...], raw_digest: str, witness: str, metadata_json: str,
                fingerprint: str, run_id: str,
                overrides: tuple[LabelOverride, ...] = ()
                ) -> tuple[VersionBundle, tuple[LapsedOverride, ...]]:
        declared = metadata.classification.upper() if metadata.classification else None
        inherit = self.settings.sensitivity.inherit
        with stage("classify", {"affidavit.paragraphs": len(extracted.paragraphs)}):
            labelled = label_bound(extracted, policy=self.policy, declared=declared,
                                   path=document.alias, inherit=inherit,
                                   classifier=self.classifier, overrides=overrides)
        labels = labelled.labels
        declared = effective_declared(self.policy, declared, inherit, document.alias)
        segments = build_segments(extracted, labels)
        drafts = chunk_document(extracted, segments, settings=self.settings.chunking,
                                max_chunks=self.settings.ingest.max_chunks_per_document)
        title = metadata.title or extracted.title or PurePosixPath(document.alias).name
        # Titles, paths and headings leave the store beside the chunks: labelled like text.
        derived = label_derived(title, document.alias, drafts, labels, policy=self.policy,
                                declared=declared)
        # Ids from what each chunk is, not from the version: unchanged chunks of an edited
        # document keep their ids and vectors (affidavit.chunking.ids).
        ids = chunk_ids(self.tenant, node_id, drafts)
        chunks = tuple(self._chunk(d, chunk_id, node_id, version_id, derived, witness)
                       for d, chunk_id in zip(drafts, ids, strict=True))
        postings: dict[str, tuple[tuple[str, int], ...]] = {}
        lengths: dict[str, int] = {}
        for chunk in chunks:
            tokens = self.tokenizer.tokenize(chunk.text)
            postings[chunk.chunk_id] = tuple(sorted(term_frequencies(tokens).items()))
            lengths[chunk.chunk_id] = len(tokens)
        # SIRE terms leave the store (sire list, ledger): drawn only from what a reader may
        # see, each labelled by the paragraphs it came from.
        sire = propose_labelled_sire(
            SireInputs(oracle_id=metadata.oracle_id, title=title, frameworks=metadata.frameworks,
                       source_id=source_id),
            [(extracted.paragraph_text(p), pl.label)
             for p, pl in zip(extracted.paragraphs, labels, strict=True)],
            self.settings.sire, most_severe=self.policy.most_severe,
            label_metadata=lambda text: label_text(
                text, policy=self.policy, declared=declared, path=document.alias,
                fallback=self.policy.default_level))
        now = _now()
        paragraphs = {p.index: p for p in extracted.paragraphs}
        return VersionBundle(  # with the overrides that lapsed
            tenant=self.tenant, node_id=node_id, version_id=version_id, fingerprint=fingerprint,
            blob=RawBlob(raw_digest, document.content, document.source_system, source_id,
                         document.source_rev, now),
            alias=document.alias, title=title, metadata_json=metadata_json,
            declared_label=declared, normalized_text=extracted.text,
            paragraph_labels=tuple((pl, paragraphs[pl.index].start, paragraphs[pl.index].end)
                                   for pl in labels),
            chunks=chunks, postings=postings, chunk_lengths=lengths, acl_tokens=acl, sire=sire,
            witness=witness, run_id=run_id, created_at=now, label_epoch=self.label_epoch,
        ), labelled.lapsed

    @staticmethod
    def _chunk(draft: ChunkDraft, chunk_id: str, node_id: str, version_id: str,
               derived: DocumentDerivedLabels, witness: str) -> Chunk:
        return Chunk(
            chunk_id=chunk_id, node_id=node_id, version_id=version_id, ordinal=draft.ordinal,
            start=draft.start, end=draft.end, text=draft.text, label=draft.label,
            heading_path=draft.heading_path, locator=locator_for(derived.alias, draft),
            witness=witness, derived=derived.for_chunk(draft),
        )


_GUARDED_FIELDS = ("source_id", "acl", "classification")


def _merge_metadata(front: DocumentMetadata, sidecar: DocumentMetadata) -> DocumentMetadata:
    """Front matter over sidecar; where both set identity or access, they must agree."""
    front_data, sidecar_data = front.to_dict(), sidecar.to_dict()
    for key in _GUARDED_FIELDS:
        a, b = front_data[key], sidecar_data[key]
        if a is not None and b is not None and a != b:
            raise InputRejected("CONFLICTING_METADATA",
                                f"front matter and sidecar disagree on {key!r}")
    return front.merged_over(sidecar)


def locator_for(alias: str, draft: ChunkDraft) -> str:
    """Where a chunk sits in its source, for people: path, page, heading trail, offsets.

    Shown to a reader only through :func:`affidavit.classify.derived.shown_to`, which
    rebuilds it without the parts that reader may not see."""
    return format_locator(alias, draft.page, draft.heading_path, draft.start, draft.end)
