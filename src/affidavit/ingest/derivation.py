"""Requalification: derived artifacts recomputed by delta when an epoch changes.

Everything ingestion writes is a projection of a stored blob under the epochs in force
(:mod:`affidavit.index.epochs`). After a settings change nothing is fetched again: each
head version is derived once more, in memory, from its stored bytes and the metadata it was
ingested with, and compared with what is stored:

- *fresh*: its fingerprint is the current one; nothing to do;
- *restamp*: stale, but the derivation gives the same paragraph labels, chunks, metadata
  and SIRE proposal; it is marked current in place (ids, vectors and approval stay);
- *affected*: something served would change; it is derived again as a new version, and an
  ACTIVE approval follows it only when its proposal is identical
  (:mod:`affidavit.identity.carry_over`).

:func:`plan` writes nothing; :func:`canary` reports the differences for a deterministic
sample of the affected documents, still writing nothing; :func:`roll` promotes them all.
Reports name documents by path and paragraphs by index, never their text or terms.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from affidavit.config.settings import Settings
from affidavit.errors import GovernanceError
from affidavit.identity.carry_over import carry_over, proposal_diff, records_by_version
from affidavit.index.epochs import Epochs, current_epochs, record_epochs, recorded_epochs
from affidavit.ingest.outcomes import QUARANTINED, DocumentOutcome
from affidavit.ingest.stored import relabel_one, stored_document
from affidavit.policy.derived import derived_to_json
from affidavit.records import Chunk, canonical_json, stable_hash
from affidavit.store.protocol import (
    CommitResult,
    HeadInfo,
    PolicyEvent,
    QuarantineRecord,
    SireRecord,
    Store,
    VersionBundle,
)

if TYPE_CHECKING:  # the run imports this module (through relabel)
    from affidavit.ingest.run import Ingestor

FRESH, RESTAMP, AFFECTED, FAILED = "fresh", "restamp", "affected", "failed"
WITNESS_EPOCHS = ("policy", "schema", "resolver", "prompt_template")
SYSTEM_ACTOR = "system:requalify"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


# What a derivation may read through the store. Anything else a dry derivation asks for
# is refused: a store method added later is a write until it is listed here (fail closed).
_READS = frozenset({
    "heads", "version_metadata", "identity_owner", "iter_policy_events",
    "list_identity_resolutions", "active_sire", "blob", "list_quarantine",
})


class _DerivingStore:
    """The store as seen by a derivation: reads pass through; the version bundle is kept
    instead of committed, and nothing is quarantined. With ``force`` the head's
    fingerprint is hidden, so a fresh document is derived too (a full rebuild).

    Unless ``write`` is set, only the reads of :data:`_READS` reach the store; the writes a
    derivation makes are kept here (the bundle, its refusal) or dropped (an approval
    carried over to a version that was never committed); any other call is refused and
    remembered in ``refused_write``, so a swallowed refusal still fails the plan."""

    def __init__(self, store: Store, *, force: bool = False, write: bool = False):
        self._store, self._force, self._write = store, force, write
        # The store this one stands in front of: a per-store cache (the metrics' known
        # paths) keys on it, not on each derivation's view.
        self.underlying = store
        self.bundle: VersionBundle | None = None
        self.refusal: QuarantineRecord | None = None
        self.refused_write: str | None = None

    def __getattr__(self, name: str) -> Any:
        if self._write or name in _READS:
            return getattr(self._store, name)
        self.refused_write = self.refused_write or name
        raise GovernanceError(f"a requalification that writes nothing called the store's "
                              f"{name!r}, which is not a read it may make")

    def head(self, tenant: str, node_id: str) -> HeadInfo | None:
        head = self._store.head(tenant, node_id)
        return replace(head, fingerprint="") if head is not None and self._force else head

    def batched(self) -> AbstractContextManager[None]:
        return self._store.batched() if self._write else nullcontext()

    def commit_version(self, bundle: VersionBundle) -> CommitResult:
        self.bundle = bundle
        if self._write:
            return self._store.commit_version(bundle)
        return CommitResult(bundle.version_id, len(bundle.chunks), None)

    def record_quarantine(self, tenant: str, record: QuarantineRecord) -> None:
        self.refusal = record
        if self._write:
            self._store.record_quarantine(tenant, record)

    def activate_sire(self, tenant: str, sire_ids: Sequence[str], *, by: str,
                      at: str) -> list[SireRecord]:
        if self._write:
            return self._store.activate_sire(tenant, sire_ids, by=by, at=at)
        return []

    def append_policy_event(self, tenant: str, **event: Any) -> PolicyEvent | None:
        if self._write:
            return self._store.append_policy_event(tenant, **event)
        return None


@dataclass
class Requalification:
    """One head version against its derivation under the current epochs."""

    head: HeadInfo
    status: str
    epochs: list[str] = field(default_factory=list)
    changes: dict[str, Any] = field(default_factory=dict)
    bundle: VersionBundle | None = None
    bytes: int = 0
    reason_code: str | None = None

    def to_dict(self, *, detail: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {"alias": self.head.alias, "node_id": self.head.node_id,
                                "status": self.status, "epochs": self.epochs}
        if self.reason_code:
            data["reason_code"] = self.reason_code
        if detail:
            data["changes"] = self.changes
        else:
            data["changed"] = sorted(k for k, v in self.changes.items() if _is_change(k, v))
        return data


def _is_change(kind: str, value: Any) -> bool:
    if kind == "sire_state":  # what the served proposal's state is, not a difference
        return False
    if kind == "chunks":
        return bool(value.get("added") or value.get("removed"))
    if kind == "vectors":
        return False
    return bool(value)


def _chunk_key(chunk: Chunk) -> str:
    return canonical_json([chunk.start, chunk.end, chunk.text, chunk.label,
                           list(chunk.heading_path), chunk.locator,
                           derived_to_json(chunk.derived)])


def compare(store: Store, tenant: str, head: HeadInfo, bundle: VersionBundle,
            embedding_labels: Sequence[str] | None, *,
            sire_records: Sequence[SireRecord] | None = None) -> dict[str, Any]:
    """What serving ``bundle`` instead of the stored head would change (no text);
    ``sire_records`` are the head's SIRE records when the caller has read them."""
    stored = {p.index: (p.label, p.reasons) for p in store.paragraph_labels(tenant,
                                                                            head.version_id)}
    derived = {pl.index: (pl.label, pl.reasons) for pl, _, _ in bundle.paragraph_labels}
    labels = [{"paragraph": i, "before": stored[i][0] if i in stored else None,
               "after": derived[i][0] if i in derived else None}
              for i in sorted(set(stored) | set(derived))
              if (stored.get(i) or (None,))[0] != (derived.get(i) or (None,))[0]]
    reasons = sum(1 for i in set(stored) & set(derived)
                  if stored[i][0] == derived[i][0] and tuple(stored[i][1]) != tuple(derived[i][1]))
    before = Counter(_chunk_key(c) for c in store.version_chunks(tenant, head.version_id))
    after = Counter(_chunk_key(c) for c in bundle.chunks)
    added, removed = sum((after - before).values()), sum((before - after).values())
    records = list(sire_records) if sire_records is not None else [
        r for r in store.list_sire(tenant, head_only=False) if r.version_id == head.version_id]
    sire = proposal_diff(records[0].sire, bundle.sire) if records else {"new": True}
    if not sire and records and records[0].sire.to_dict() != bundle.sire.to_dict():
        sire = {"changed": True}
    metadata = store.version_metadata(tenant, head.version_id) != bundle.metadata_json
    embeddable = [c for c in bundle.chunks
                  if embedding_labels is not None and c.label in embedding_labels]
    return {
        "labels": labels, "label_reasons": reasons,
        "chunks": {"kept": sum((before & after).values()), "added": added, "removed": removed},
        "sire": sire, "metadata": metadata,
        "sire_state": records[0].state if records else None,
        "vectors": {"to_embed": len(embeddable) if (labels or reasons or added or removed
                                                     or sire or metadata) else 0},
    }


class Derivation:
    """Plans, samples and rolls the requalification of one tenant's head versions, deriving
    them with ``ingestor_type`` (the ingestion run's :class:`~affidavit.ingest.run.Ingestor`;
    :class:`affidavit.ingest.requalify.Requalifier` supplies it)."""

    def __init__(self, store: Store, settings: Settings, *, ingestor_type: type[Ingestor],
                 tenant: str | None = None):
        self.store, self.settings = store, settings
        self.tenant = tenant or settings.tenant
        self.epochs: Epochs = current_epochs(settings, self.tenant)
        self._ingestor_type = ingestor_type
        self.ingestor = ingestor_type(store, settings, tenant=self.tenant)
        self._sire_by_version: dict[str, list[SireRecord]] | None = None

    def _sire_records(self, version_id: str) -> list[SireRecord]:
        """The SIRE records of ``version_id``, from one read of the tenant's records per
        derivation (reading them for every head made a pass over a corpus quadratic)."""
        if self._sire_by_version is None:
            by_version: dict[str, list[SireRecord]] = {}
            for record in self.store.list_sire(self.tenant, head_only=False):
                by_version.setdefault(record.version_id, []).append(record)
            self._sire_by_version = by_version
        return self._sire_by_version.get(version_id, [])

    @property
    def _embedding_labels(self) -> Sequence[str] | None:
        if self.epochs.embedding_model == "none":
            return None
        return tuple(self.settings.egress.embedding_labels)

    def assess(self, head: HeadInfo, *, force: bool = False,
               changed: Sequence[str] = (), label_stale: bool = False) -> Requalification:
        """Derive ``head`` again in memory and compare; nothing is written."""
        document = stored_document(self.ingestor, head)
        if document is None:
            return Requalification(head, FAILED, reason_code="RELABEL_FAILED")
        # A head stamped with another serving key is derived even when its fingerprint is
        # current (chunks stamped before the key covered the whole family): it is marked
        # current in place when nothing served changes.
        deriving = _DerivingStore(self.store, force=force or label_stale)
        dry = self.ingestor.over(cast(Store, deriving))
        dry.ingest_one(document, "requalify-plan")
        if deriving.refused_write is not None:  # raised inside, maybe caught as a quarantine
            raise GovernanceError(f"requalification refused the store's "
                                  f"{deriving.refused_write!r} while writing nothing")
        # A head derived under another serving key is stale for the kinds that changed
        # since the epochs were recorded (the policy when none is recorded as changed).
        epochs = [k for k in changed if k in WITNESS_EPOCHS] or (
            ["policy"] if label_stale else [])
        if deriving.refusal is not None:
            return Requalification(head, FAILED, epochs or ["policy"], bytes=len(
                document.content), reason_code=deriving.refusal.reason_code)
        if deriving.bundle is None:
            return Requalification(head, FRESH)
        bundle = deriving.bundle
        changes = compare(self.store, self.tenant, head, bundle, self._embedding_labels,
                          sire_records=self._sire_records(head.version_id))
        affected = force or any(_is_change(k, v) for k, v in changes.items()
                                if k not in ("sire_state",)) or changes["label_reasons"] > 0
        return Requalification(head, AFFECTED if affected else RESTAMP, epochs or ["policy"],
                               changes, bundle, len(document.content))

    def restamp_if_unaffected(self, head: HeadInfo) -> Requalification:
        """Assess a label-stale ``head`` and, when nothing served changes (RESTAMP), mark it
        current in place: its version, ids, vectors and approval stay."""
        result = self.assess(head, label_stale=True)
        if result.status == RESTAMP and result.bundle is not None:  # RESTAMP carries one
            b = result.bundle
            self.store.restamp_version(self.tenant, head.version_id, label_epoch=b.label_epoch,
                                       witness=b.witness, fingerprint=b.fingerprint)
        return result

    def assess_all(self, *, force: bool = False) -> Iterator[Requalification]:
        changed = self.epochs.changed_since(recorded_epochs(self.store, self.tenant))
        stale = {h.node_id for h in self.store.label_stale_heads(self.tenant,
                                                                  self.epochs.serving)}
        for head in self.store.heads(self.tenant):
            yield self.assess(head, force=force, changed=changed,
                              label_stale=head.node_id in stale)

    def plan(self) -> dict[str, Any]:
        """Which head versions are stale for which epoch, and the work to requalify them."""
        recorded = recorded_epochs(self.store, self.tenant)
        results = list(self.assess_all())
        return plan_report(self, recorded, results)

    def canary(self, n: int) -> dict[str, Any]:
        """The differences for a deterministic sample of ``n`` affected documents."""
        results = [r for r in self.assess_all() if r.status == AFFECTED]
        sample = sorted(results, key=lambda r: stable_hash("canary", r.head.node_id))[:n]
        return {"sample": [r.to_dict(detail=True) for r in sorted(sample,
                                                                  key=lambda r: r.head.alias)],
                "affected": len(results), "promoted": 0}

    def roll(self, *, everything: bool = False) -> dict[str, Any]:
        """Requalify every stale head (every head with ``everything``): restamp the ones
        whose derivation changes nothing served, derive the affected ones again."""
        from affidavit.ingest.lock import holding_ingest_lock

        run_id = "requalify-" + uuid.uuid4().hex[:16]
        with holding_ingest_lock(self.store, self.tenant):
            self.store.start_run(self.tenant, run_id, at=_now(), params_json=canonical_json(
                {"epoch": self.ingestor.epoch, "requalify": True, "all": everything}))
            results = list(self.assess_all(force=everything))
            report = self._promote(results, run_id)
            report["vectors"] = self._embed_missing()
            record_epochs(self.store, self.tenant, self.epochs, actor=SYSTEM_ACTOR)
            status = "FAILED" if report["failed"] else "SUCCEEDED"
            self.store.finish_run(self.tenant, run_id, status=status, at=_now(),
                                  summary_json=canonical_json(report))
        return report

    def _embed_missing(self) -> dict[str, Any] | None:
        """Vectors for the current embedding model of every served chunk that has none
        (an embedding-model change is requalified here: old vectors are never searched)."""
        from affidavit.index.backends import make_backend
        from affidavit.index.embed import embed_missing

        backend = make_backend(self.settings.vectors)
        if backend is None or self.settings.vectors.compute != "ingest":
            return None
        return embed_missing(self.store, self.tenant, backend,
                             batch_size=self.settings.vectors.batch_size,
                             labels=self.settings.egress.embedding_labels,
                             label_epoch=self.epochs.serving).to_dict()

    def _promote(self, results: Sequence[Requalification], run_id: str) -> dict[str, Any]:
        report: dict[str, Any] = {"run_id": run_id, "restamped": [], "derived": [],
                                  "carried_over": [], "proposed": [], "failed": []}
        sires = records_by_version(self.store, self.tenant)
        for result in results:
            if result.status == RESTAMP and result.bundle is not None:
                b = result.bundle
                self.store.restamp_version(self.tenant, result.head.version_id,
                                           label_epoch=b.label_epoch, witness=b.witness,
                                           fingerprint=b.fingerprint)
                report["restamped"].append(result.head.alias)
            elif result.status == AFFECTED:
                self._derive(result, run_id, sires, report)
            elif result.status == FAILED:
                report["failed"].append({"alias": result.head.alias,
                                         "reason_code": result.reason_code})
        return report

    def _derive(self, result: Requalification, run_id: str,
                sires: dict[str, Any] | Any, report: dict[str, Any]) -> None:

        document = stored_document(self.ingestor, result.head)
        writing = _DerivingStore(self.store, force=True, write=True)
        ingestor = self._ingestor_type(cast(Store, writing), self.settings, tenant=self.tenant)
        outcome = ingestor.ingest_one(document, run_id) if document is not None else None
        if outcome is None or outcome.status == QUARANTINED or writing.bundle is None:
            report["failed"].append({"alias": result.head.alias, "reason_code":
                                     outcome.reason_code if outcome else "RELABEL_FAILED"})
            return
        report["derived"].append(result.head.alias)
        new = records_by_version(self.store, self.tenant).get(writing.bundle.version_id)
        carry_over(self.store, self.tenant, sires.get(result.head.version_id), new,
                   actor=SYSTEM_ACTOR, at=_now())  # ingest carries it over already
        previous = sires.get(result.head.version_id)
        if previous is not None and previous.state == "ACTIVE":
            carried = records_by_version(self.store, self.tenant).get(
                writing.bundle.version_id)
            key = "carried_over" if carried is not None and carried.state == "ACTIVE" \
                else "proposed"
            report[key].append(result.head.alias)
        else:
            report["proposed"].append(result.head.alias)


def plan_report(requalifier: Derivation, recorded: dict[str, Any] | None,
                results: Sequence[Requalification]) -> dict[str, Any]:
    by_status = Counter(r.status for r in results)
    stale = [r for r in results if r.status != FRESH]
    per_epoch: dict[str, list[str]] = {}
    for r in stale:
        for kind in r.epochs:
            per_epoch.setdefault(kind, []).append(r.head.alias)
    vectors = _vector_backlog(requalifier)
    affected = [r for r in stale if r.status == AFFECTED]
    return {
        "epochs": {"current": requalifier.epochs.to_dict(), "recorded": recorded,
                   "changed": requalifier.epochs.changed_since(recorded) if recorded else []},
        "heads": len(results),
        "counts": {s: by_status.get(s, 0) for s in (FRESH, RESTAMP, AFFECTED, FAILED)},
        "stale_by_epoch": {k: sorted(v) for k, v in sorted(per_epoch.items())},
        "affected": sorted(r.head.alias for r in affected),
        "restamp": sorted(r.head.alias for r in stale if r.status == RESTAMP),
        "failed": sorted(r.head.alias for r in stale if r.status == FAILED),
        "documents": [r.to_dict() for r in sorted(stale, key=lambda r: r.head.alias)],
        "estimate": {
            "documents_to_derive": len(affected),
            "documents_to_restamp": by_status.get(RESTAMP, 0),
            "bytes_to_read": sum(r.bytes for r in affected),
            "chunks_to_write": sum(len(r.bundle.chunks) for r in affected if r.bundle),
            "chunks_to_embed": sum(r.changes["vectors"]["to_embed"] for r in affected),
            "approvals_to_review": sum(1 for r in affected if r.changes.get("sire")
                                       and r.changes.get("sire_state") == "ACTIVE"),
            "vectors_missing": vectors,
        },
    }


def _vector_backlog(requalifier: Derivation) -> int:
    """Served chunks with no vector for the current embedding model (0 when vectors are
    off): the embedding-model epoch's artifacts still to compute."""
    labels = requalifier._embedding_labels
    if labels is None:
        return 0
    return len(requalifier.store.chunks_missing_vectors(
        requalifier.tenant, requalifier.epochs.embedding_model, 1_000_000, labels=labels,
        label_epoch=requalifier.epochs.serving))


def requalify_label_stale(ingestor: Ingestor, run_id: str, at: str) -> list[DocumentOutcome]:
    """At the start of an ingestion run: requalify the heads labelled under another epoch,
    restamping those the change does not affect; outcomes of those derived again."""
    store, tenant = ingestor.store, ingestor.tenant
    requalifier = Derivation(store, ingestor.settings, ingestor_type=type(ingestor),
                             tenant=tenant)
    outcomes: list[DocumentOutcome] = []
    stale = store.label_stale_heads(tenant, ingestor.label_epoch)
    sires = records_by_version(store, tenant) if stale else {}
    for head in stale:
        if requalifier.restamp_if_unaffected(head).status == RESTAMP:
            continue
        outcome = relabel_one(ingestor, head, run_id, at)
        outcomes.append(outcome)
        if outcome.status != QUARANTINED and outcome.node_id is not None:
            new_head = store.head(tenant, outcome.node_id)
            new = records_by_version(store, tenant).get(new_head.version_id) \
                if new_head is not None else None
            carry_over(store, tenant, sires.get(head.version_id), new, actor=SYSTEM_ACTOR,
                       at=at)
    record_epochs(store, tenant, requalifier.epochs, actor=SYSTEM_ACTOR)
    return outcomes


def restamp_unaffected(ingestor: Ingestor, heads: Sequence[HeadInfo]) -> list[HeadInfo]:
    """Mark current in place each of ``heads`` a derivation under the ingestor's epochs
    leaves unchanged; the heads still to derive again, in order."""
    requalifier = Derivation(ingestor.store, ingestor.settings, ingestor_type=type(ingestor),
                             tenant=ingestor.tenant)
    return [h for h in heads if requalifier.restamp_if_unaffected(h).status != RESTAMP]
