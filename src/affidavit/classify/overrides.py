"""Admin label overrides: the only way to lower a detected label.

An override is a ``label.override`` event in the tenant's policy audit trail (actor, time,
the label before and after, the reason): the trail is the one record of them, and the
overrides in force for a document are its replay. Ingestion applies them to the paragraph
they name and folds them into the version's fingerprint, so the next run relabels the
document; an override never shows the model classifier more than the rules do, and one
that makes a paragraph RESTRICTED withholds it from the model.
"""

from __future__ import annotations

import json

from affidavit.audit import LABEL_OVERRIDE, record_policy_event
from affidavit.errors import InputRejected
from affidavit.records import canonical_json, stable_hash
from affidavit.store.base import PolicyEvent, Store


def all_recorded_overrides(store: Store, tenant: str) -> dict[str, dict[int, str]]:
    """node id -> paragraph index -> label of the overrides in force (the newest event for
    a paragraph wins; a null label withdraws the override)."""
    found: dict[str, dict[int, str]] = {}
    for event in store.iter_policy_events(tenant):
        if event.kind != LABEL_OVERRIDE:
            continue
        after = json.loads(event.after_json)
        if not isinstance(after, dict) or not isinstance(after.get("node_id"), str):
            continue
        node = found.setdefault(after["node_id"], {})
        if after.get("label") is None:
            node.pop(int(after["paragraph"]), None)
        else:
            node[int(after["paragraph"])] = str(after["label"])
    return {node: labels for node, labels in found.items() if labels}


def recorded_overrides(store: Store, tenant: str, node_id: str) -> dict[int, str]:
    """paragraph index -> label of the overrides in force for ``node_id``."""
    return all_recorded_overrides(store, tenant).get(node_id, {})


def overrides_digest(overrides: dict[int, str]) -> str:
    """A stable digest of a document's overrides ('' when there are none)."""
    if not overrides:
        return ""
    return stable_hash("label-overrides", canonical_json(
        {str(k): v for k, v in sorted(overrides.items())}))


def record_override(store: Store, tenant: str, *, node_id: str, paragraph: int,
                    label: str | None, reason: str, actor: str) -> PolicyEvent:
    """Record one override (``label`` None withdraws it); in force from the next ingestion
    run, which relabels the document."""
    if not reason.strip():
        raise InputRejected("OVERRIDE_REASON", "an override needs a reason")
    if paragraph < 0:
        raise InputRejected("OVERRIDE_OUT_OF_RANGE", "paragraph indexes start at 0")
    before = recorded_overrides(store, tenant, node_id).get(paragraph)
    return record_policy_event(
        store, tenant, LABEL_OVERRIDE, actor,
        {"node_id": node_id, "paragraph": paragraph, "label": before},
        {"node_id": node_id, "paragraph": paragraph, "label": label, "reason": reason.strip()})
