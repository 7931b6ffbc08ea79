"""The Review and Permissions pages' data: SIRE proposals with what changed since the
previous version, recorded decisions that lapsed, ingest runs with their quarantine, and
the permissions explainer.

SIRE records come through ``sire_records_for`` (what ``/v1/review/sire`` serves): a
reviewer sees a proposal only for a document it may read, with the terms it may see; the
previous version is shown the same way. Approval goes through
:func:`affidavit.identity.lifecycle.approve_sire`, with the reviewer from the credential.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from affidavit.audit import changes as audited
from affidavit.audit.lapses import LapsedDecision, lapsed_decisions
from affidavit.authz.explain import AccessExplanation
from affidavit.authz.facts import explain_document
from affidavit.engine.query import Engine
from affidavit.errors import NotFound
from affidavit.identity.lifecycle import approve_sire
from affidavit.identity.sire_labels import sire_records_for
from affidavit.records import AuthzContext
from affidavit.service.api.auth import Credential
from affidavit.service.api.ingest_routes import run_screen
from affidavit.store.protocol import HeadInfo, QuarantineRecord, RunRecord, SireRecord, Store

REJECTED = "REJECTED"
_TERMS = ("included", "relevant", "excluded")


@dataclass(frozen=True)
class TermChange:
    """One part of a SIRE tuple: its value now, and what was added or removed."""

    part: str
    now: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]


@dataclass(frozen=True)
class Proposal:
    record: SireRecord
    previous: SireRecord | None
    changes: tuple[TermChange, ...]

    @property
    def subject_changed(self) -> bool:
        return self.previous is not None and self.previous.sire.subject != self.record.sire.subject


def _changes(record: SireRecord, previous: SireRecord | None) -> tuple[TermChange, ...]:
    changes = []
    for part in _TERMS:
        now = tuple(getattr(record.sire, part))
        before = tuple(getattr(previous.sire, part)) if previous is not None else ()
        changes.append(TermChange(part, now, tuple(t for t in now if t not in before),
                                  tuple(t for t in before if t not in now)))
    return tuple(changes)


def proposals(engine: Engine, caller: Credential) -> list[Proposal]:
    """The visible SIRE records of current documents, proposals first, each beside the
    record of the document's previous version (as the reviewer may see it)."""
    authz = engine.authz_context(caller.principal)
    every = sire_records_for(engine.store, authz,
                             engine.store.list_sire(caller.tenant, head_only=False))
    by_node: dict[str, list[SireRecord]] = {}
    for record in every:
        by_node.setdefault(record.node_id, []).append(record)
    shown: list[Proposal] = []
    for record in every:
        if not record.is_head:
            continue
        earlier = sorted((r for r in by_node[record.node_id]
                          if r.proposed_at < record.proposed_at), key=lambda r: r.proposed_at)
        previous = earlier[-1] if earlier else None
        shown.append(Proposal(record, previous, _changes(record, previous)))
    order = {"PROPOSED": 0, "ACTIVE": 1}
    return sorted(shown, key=lambda p: (order.get(p.record.state, 2), p.record.alias))


def decide_proposal(engine: Engine, caller: Credential, sire_id: str, approve: bool) -> SireRecord:
    """Approve or reject a proposal the reviewer may see, recorded as the reviewer."""
    authz = engine.authz_context(caller.principal)
    visible = {r.sire_id for r in sire_records_for(engine.store, authz,
                                                    engine.store.list_sire(caller.tenant))}
    if sire_id not in visible:
        raise NotFound(f"no SIRE record {sire_id} that you may review")
    at = datetime.now(UTC).isoformat(timespec="seconds")
    if approve:
        return approve_sire(engine.store, caller.tenant, sire_id, by=caller.principal, at=at)
    return engine.store.set_sire_state(caller.tenant, sire_id, state=REJECTED,
                                       by=caller.principal, at=at)


@dataclass(frozen=True)
class LapseView:
    """A lapsed decision on a document the reviewer may read, named as the reader sees it."""

    lapse: LapsedDecision
    alias: str


def lapses(engine: Engine, caller: Credential) -> list[LapseView]:
    """The recorded decisions that lapsed (their content changed or went), newest first,
    for the documents the reviewer may read at least a part of."""
    authz = engine.authz_context(caller.principal)
    heads = {head.node_id: head for head in engine.store.heads(caller.tenant)}
    shown = []
    for lapse in lapsed_decisions(engine.store, caller.tenant):
        head = heads.get(lapse.node_id or "")
        alias = _readable_alias(engine.store, authz, head) if head is not None else None
        if alias is not None:
            shown.append(LapseView(lapse, alias))
    return shown


def _readable_alias(store: Store, authz: AuthzContext, head: HeadInfo) -> str | None:
    """The document's path as a chunk the reader may read shows it, or None."""
    metadata = json.loads(store.version_metadata(authz.tenant, head.version_id) or "{}")
    source_id = str(metadata.get("source_id") or "")
    ids = store.source_chunk_ids(authz.tenant, source_id) if source_id else []
    readable = [c for c in store.get_chunks(authz, ids) if c.chunk.node_id == head.node_id]
    return readable[0].alias if readable else None


@dataclass(frozen=True)
class RunView:
    run_id: str
    status: str
    started_at: str
    finished_at: str | None
    summary: dict[str, Any]
    quarantined: tuple[QuarantineRecord, ...]


def runs(engine: Engine, caller: Credential, submitter: Callable[[RunRecord], str | None],
         limit: int = 20) -> list[RunView]:
    """Recent ingest runs and their quarantine, naming only the documents the caller may
    see (what ``/v1/admin/runs/{id}`` serves; ``submitter`` names who submitted a run)."""
    screen = run_screen(engine, caller)
    shown = []
    for run in engine.store.list_runs(caller.tenant, limit=limit):
        summary, entries = screen.run_view(
            json.loads(run.summary_json or "{}"),
            engine.store.list_quarantine(caller.tenant, run.run_id), submitter(run))
        shown.append(RunView(run.run_id, run.status, run.started_at, run.finished_at,
                             summary, tuple(QuarantineRecord(**q) for q in entries)))
    return shown


def release(engine: Engine, caller: Credential, run_id: str, alias: str,
            submitter: Callable[[RunRecord], str | None]) -> bool:
    """Release an entry the caller sees named (as ``/v1/admin/quarantine/release``)."""
    run = engine.store.get_run(caller.tenant, run_id)
    screen = run_screen(engine, caller)
    if run is None or not any(q.alias == alias and screen.names(q, submitter(run))
                              for q in engine.store.list_quarantine(caller.tenant, run_id)):
        return False
    # Through the audited change, as the API's release: a policy event with its actor.
    return audited.release_quarantine(engine.store, caller.tenant, run_id, alias,
                                      actor=caller.principal)


def explain(engine: Engine, caller: Credential, principal: str, doc: str) -> AccessExplanation:
    """``affidavit authz explain`` for the admin's tenant."""
    return explain_document(engine.store, engine.settings, caller.tenant, principal, doc)
