"""One document through the pipeline: extract, classify, identify, chunk and bundle, then commit
in one store transaction (or quarantine with a reason code). A mixin of
:class:`~affidavit.ingest.run.Ingestor`, which supplies the settings, store, policy and epochs
and runs it over every document of a run."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from affidavit.authz.tuples import document_object_tokens, parse_subject
from affidavit.chunking import chunk_document
from affidavit.chunking.ids import chunk_ids
from affidavit.classify.document import effective_declared, label_bound
from affidavit.classify.model import ModelParagraphClassifier, classifier_identity
from affidavit.classify.overrides import (
    LabelOverride,
    LapsedOverride,
    overrides_digest,
    overrides_in_force,
    present_in,
    record_lapses,
)
from affidavit.config.settings import Settings
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
from affidavit.index import term_frequencies
from affidavit.index.drift import check_drift
from affidavit.index.epochs import RESOLVER_VERSION
from affidavit.ingest.outcomes import INGESTED as INGESTED
from affidavit.ingest.outcomes import QUARANTINED as QUARANTINED
from affidavit.ingest.outcomes import UNCHANGED as UNCHANGED
from affidavit.ingest.outcomes import DocumentOutcome as DocumentOutcome
from affidavit.ingest.outcomes import RunInterrupted as RunInterrupted
from affidavit.ingest.outcomes import RunSummary as RunSummary
from affidavit.ingest.supersession import SupersessionGate
from affidavit.observability.metrics import record_derived
from affidavit.observability.traces import extract_format, id_hash, stage, traced
from affidavit.policy.derived import DocumentDerivedLabels, format_locator, label_derived
from affidavit.policy.dropped import DROPPED_KEY, label_dropped
from affidavit.policy.labels import label_text
from affidavit.policy.policy import SensitivityPolicy
from affidavit.policy.segments import build_segments
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
from affidavit.store.protocol import (
    IDENTITY_COLLISION,
    HeadInfo,
    QuarantineRecord,
    Store,
    VersionBundle,
    identity_collision,
)
from affidavit.text.tokenize import Tokenizer

if TYPE_CHECKING:
    from affidavit.classify.model import ModelParagraphClassifier
    from affidavit.identity.moves import Moves
    from affidavit.identity.take_over import TakeOvers


@dataclass(frozen=True)
class _Identity:
    """An extracted document and the node it claims."""

    extracted: ExtractedDocument
    metadata: DocumentMetadata
    source_id: str
    node_id: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class DocumentDerivation:
    """Derives and commits one document version for the ingestor it is mixed into."""

    store: Store
    settings: Settings
    tenant: str
    policy: SensitivityPolicy
    tokenizer: Tokenizer
    epoch: str
    label_epoch: str
    classifier: ModelParagraphClassifier | None
    restoring: dict[str, str]
    _overrides: dict[str, tuple[LabelOverride, ...]] | None
    _take_overs: TakeOvers
    _moves: Moves | None
    _links: dict[str, tuple[str, ...]]

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
        # dropped them is in (affidavit.text.bindings).
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

    Shown to a reader only through :func:`affidavit.policy.derived.shown_to`, which
    rebuilds it without the parts that reader may not see."""
    return format_locator(alias, draft.page, draft.heading_path, draft.start, draft.end)
