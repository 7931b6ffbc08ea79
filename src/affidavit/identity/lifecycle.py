"""SIRE lifecycle: PROPOSED → APPROVED → ACTIVE, recorded with who approved and when.

The tuple itself is immutable per document version; approval changes only its state. An
approval is refused when an Excluded term matches the source's own identity.

Approving many records is one pass: the records are read once, each is checked, and the
approvable ones are activated in one store transaction per batch. Reading every record
again for each id made approving a large corpus quadratic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from affidavit.audit.events import SIRE_STATE, record_policy_event
from affidavit.errors import AffidavitError, InputRejected, NotFound
from affidavit.identity.sire import SireInputs, excluded_conflicts
from affidavit.store.protocol import SireRecord, Store

APPROVAL_BATCH = 500


@dataclass(frozen=True)
class Approval:
    """What became of one id asked to be approved: its record, or why it was refused."""

    sire_id: str
    record: SireRecord | None = None
    refused: AffidavitError | None = None


def approve_sire(store: Store, tenant: str, sire_id: str, *, by: str, at: str) -> SireRecord:
    """Approve one proposal and make it ACTIVE; raise InputRejected with the reason if not."""
    (approval,) = approve_sires(store, tenant, [sire_id], by=by, at=at)
    if approval.refused is not None:
        raise approval.refused
    assert approval.record is not None
    return approval.record


def approve_sires(store: Store, tenant: str, sire_ids: Sequence[str], *, by: str, at: str,
                  batch_size: int = APPROVAL_BATCH) -> list[Approval]:
    """Approve many proposals in one pass; one outcome per distinct id, in the order given.

    A record already ACTIVE is returned unchanged (approving twice changes nothing); an
    unknown id or a self-excluding tuple is refused with its reason and does not stop the
    others.
    """
    if not by.strip():
        raise InputRejected("APPROVER_REQUIRED", "an approval must name who approves")
    records = {r.sire_id: r for r in store.list_sire(tenant, head_only=False)}
    outcomes: dict[str, Approval] = {}
    approvable: list[str] = []
    for sire_id in dict.fromkeys(sire_ids):
        record = records.get(sire_id)
        if record is None:
            outcomes[sire_id] = Approval(sire_id, refused=NotFound(f"no SIRE record {sire_id}"))
        elif record.state == "ACTIVE":
            outcomes[sire_id] = Approval(sire_id, record=record)
        else:
            refusal = _self_exclusion(store, tenant, record)
            outcomes[sire_id] = Approval(sire_id, refused=refusal)
            if refusal is None:
                approvable.append(sire_id)
    # Many small writes share a few transactions (and one sync) instead of each its own.
    with store.batched():
        for start in range(0, len(approvable), max(1, batch_size)):
            batch = approvable[start:start + max(1, batch_size)]
            activated = store.activate_sire(tenant, batch, by=by, at=at)
            for record in activated:
                outcomes[record.sire_id] = Approval(record.sire_id, record=record)
            if activated:
                # One policy event per batch, with its approver (affidavit.audit).
                record_policy_event(
                    store, tenant, SIRE_STATE, by,
                    {"records": [{"sire_id": r.sire_id, "version_id": r.version_id,
                                  "state": records[r.sire_id].state} for r in activated]},
                    {"state": "ACTIVE", "sire_ids": [r.sire_id for r in activated]})
    return list(outcomes.values())


def _self_exclusion(store: Store, tenant: str, record: SireRecord) -> InputRejected | None:
    metadata = json.loads(store.version_metadata(tenant, record.version_id) or "{}")
    inputs = SireInputs(oracle_id=metadata.get("oracle_id"), title=record.title,
                        frameworks=tuple(metadata.get("frameworks") or ()),
                        source_id=str(metadata.get("source_id") or record.alias))
    conflicts = excluded_conflicts(record.sire, inputs)
    if not conflicts:
        return None
    return InputRejected(
        "SIRE_SELF_EXCLUSION",
        f"Excluded term(s) {', '.join(conflicts)} match the source's own identity")
