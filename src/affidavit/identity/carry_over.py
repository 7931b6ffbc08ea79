"""An approval binds to the proposal's content, not to the version it was made for.

A reviewer approves a SIRE proposal: a Subject, what it includes, what is relevant and what
it excludes. When a document is derived again (an edit elsewhere in it, a policy change
that moved no label of its identity) and the new version's proposal is the same tuple, the
approval still describes it: the new record is made ACTIVE with the original approver, and
the carry-over is a policy event of its own. A different proposal stays PROPOSED, and
:func:`proposal_diff` says what changed against the approved one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from affidavit.audit.events import SIRE_CARRY_OVER, record_policy_event
from affidavit.records import SireTuple, canonical_json, stable_hash
from affidavit.store.protocol import SireRecord, Store, VersionBundle

PROPOSAL_FIELDS = ("subject", "included", "relevant", "excluded")
CARRY_OVER_ACTOR = "system:carry_over"


def sire_id_for(version_id: str) -> str:
    """The id both backends give a version's SIRE record."""
    return "sire-" + version_id[:16]


def proposal_hash(sire: SireTuple) -> str:
    """The content hash an approval binds to: the tuple and the labels of its terms."""
    return stable_hash("sire-proposal", canonical_json(sire.to_dict()))[:32]


def proposal_diff(approved: SireTuple, proposed: SireTuple) -> dict[str, Any]:
    """What a new proposal adds and drops against the approved one, per field.

    Terms are derived text with labels of their own: the diff names how many terms each
    field gained or lost, never the terms, so it can be shown to anyone who may see that a
    proposal changed."""
    before, after = approved.to_dict(), proposed.to_dict()
    diff: dict[str, Any] = {}
    for name in PROPOSAL_FIELDS:
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if isinstance(old, list) and isinstance(new, list):
            diff[name] = {"added": len([t for t in new if t not in old]),
                          "removed": len([t for t in old if t not in new])}
        else:
            diff[name] = {"changed": True}
    if not diff and before != after:
        diff["term_labels"] = {"changed": True}
    return diff


def carry_over(store: Store, tenant: str, previous: SireRecord | None,
               current: SireRecord | None, *, actor: str, at: str) -> bool:
    """Make ``current`` ACTIVE when ``previous`` (the superseded head's record) was ACTIVE
    with an identical proposal; True when carried over. Anything else changes nothing."""
    if previous is None or current is None or previous.state != "ACTIVE" \
            or current.state == "ACTIVE" or previous.node_id != current.node_id:
        return False
    digest = proposal_hash(previous.sire)
    if proposal_hash(current.sire) != digest:
        return False
    store.activate_sire(tenant, [current.sire_id], by=previous.approved_by or actor, at=at)
    record_policy_event(store, tenant, SIRE_CARRY_OVER, actor,
                        {"sire_id": previous.sire_id, "version_id": previous.version_id,
                         "state": previous.state, "proposal": digest},
                        {"sire_id": current.sire_id, "version_id": current.version_id,
                         "state": "ACTIVE", "proposal": digest,
                         "approved_by": previous.approved_by})
    return True


def records_by_version(store: Store, tenant: str) -> Mapping[str, SireRecord]:
    """Every SIRE record of the tenant (head or not) by version id: read once per pass."""
    return {r.version_id: r for r in store.list_sire(tenant, head_only=False)}


def approved_before(store: Store, tenant: str, version_id: str) -> SireRecord | None:
    """The ACTIVE record of the head version about to be superseded, if any."""
    return store.active_sire(tenant, [version_id]).get(version_id)


def carry_over_commit(store: Store, tenant: str, previous: SireRecord | None,
                      bundle: VersionBundle, *, at: str) -> bool:
    """After ``bundle`` superseded the version of ``previous``: keep the approval when the
    new proposal is the approved one."""
    if previous is None or previous.alias != bundle.alias:
        # Another path's bytes (an identity take-over) never inherit the approval.
        return False
    current = replace(previous, sire_id=sire_id_for(bundle.version_id),
                      version_id=bundle.version_id, state="PROPOSED", sire=bundle.sire,
                      approved_by=None, approved_at=None)
    return carry_over(store, tenant, previous, current, actor=CARRY_OVER_ACTOR, at=at)
