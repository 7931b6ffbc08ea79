"""What a changed SIRE proposal changes against the approval it no longer matches.

An approval binds to a proposal's content (:mod:`affidavit.identity.carry_over`): a new
version whose proposal differs stays PROPOSED, and its reviewer needs to see what changed
against the tuple that was approved: the terms each field gained and lost, and the Subject
if it moved. The approved tuple is the node's most recent ACTIVE record older than the
proposal (the superseded head's, or an earlier one when versions were never approved in
between).

The diff is derived text made of SIRE terms, so it passes the same audience filter as the
records themselves: both tuples are first reduced to what the reader may see
(:func:`~affidavit.identity.sire_labels.sire_records_for`), and only then compared, so a
term from a paragraph the reader may not read is in neither side and never in the diff.
When the reader may not see the approved version at all, the diff says it is withheld.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from affidavit.identity.sire_labels import sire_records_for
from affidavit.records import AuthzContext, SireTuple
from affidavit.store.protocol import SireRecord, Store

TERM_FIELDS = ("included", "relevant", "excluded")


def term_diff(approved: SireTuple, proposed: SireTuple) -> dict[str, Any]:
    """The terms each field of ``proposed`` adds and removes against ``approved`` (fields
    that did not change are left out), and the Subject when it changed."""
    diff: dict[str, Any] = {}
    if approved.subject != proposed.subject:
        diff["subject"] = {"before": approved.subject, "after": proposed.subject}
    for name in TERM_FIELDS:
        old, new = getattr(approved, name), getattr(proposed, name)
        added = [term for term in new if term not in old]
        removed = [term for term in old if term not in new]
        if added or removed:
            diff[name] = {"added": added, "removed": removed}
    return diff


def approved_predecessor(history: Sequence[SireRecord],
                         record: SireRecord) -> SireRecord | None:
    """The node's most recent ACTIVE record proposed before ``record``, if any."""
    earlier = [r for r in history if r.node_id == record.node_id and r.state == "ACTIVE"
               and r.sire_id != record.sire_id and r.proposed_at <= record.proposed_at]
    return max(earlier, key=lambda r: (r.proposed_at, r.sire_id), default=None)


def proposal_diffs(store: Store, tenant: str, records: Sequence[SireRecord],
                   authz: AuthzContext | None = None) -> dict[str, dict[str, Any]]:
    """sire id -> the diff of each PROPOSED record of ``records`` against the node's last
    approval. ``records`` are as the reader sees them; with ``authz`` the approved record
    is filtered for that reader too (without it: the operator, who sees everything)."""
    proposed = [r for r in records if r.state == "PROPOSED"]
    if not proposed:
        return {}
    history = store.list_sire(tenant, head_only=False)
    diffs: dict[str, dict[str, Any]] = {}
    for record in proposed:
        approved = approved_predecessor(history, record)
        if approved is None:
            continue
        if authz is not None:
            shown = sire_records_for(store, authz, [approved])
            if not shown:
                diffs[record.sire_id] = {"against": approved.sire_id, "withheld": True}
                continue
            approved = shown[0]
        diffs[record.sire_id] = {"against": approved.sire_id,
                                 **term_diff(approved.sire, record.sire)}
    return diffs


def describe_diff(diff: dict[str, Any]) -> str:
    """One line for a terminal: ``included +a -b; subject changed``."""
    if diff.get("withheld"):
        return f"changed against {diff['against']} (not shown to this reader)"
    parts = []
    if "subject" in diff:
        parts.append("subject changed")
    for name in TERM_FIELDS:
        if name in diff:
            terms = [f"+{t}" for t in diff[name]["added"]] + \
                [f"-{t}" for t in diff[name]["removed"]]
            parts.append(f"{name} {' '.join(terms)}")
    return f"changed against {diff['against']}: {'; '.join(parts) or 'term labels only'}"
