"""Admin label overrides: the only way to lower a detected label.

An override is a ``label.override`` event in the tenant's policy audit trail (actor, time,
the label before and after, the reason): the trail is the one record of them, and the
overrides in force for a document are its replay. An override is bound to the content it
was decided about (:mod:`affidavit.text.bindings`): the hash of the paragraph's normalized
text and the label it replaced, never the paragraph's position. Ingestion
applies it to the paragraphs with that text whose detected label is still the one it
replaced, wherever they now sit; a paragraph inserted above does not inherit it, and an
override whose paragraph changed or went lapses with a ``decision.lapse`` event
(:func:`record_lapses`) and lowers nothing again. Overrides recorded by position, before
bindings, are unbound: they lapse during the next ingestion run
(:func:`overrides_in_force`; fail closed: the position may already name another
paragraph, so binding them to what is there now could cement the very mistake bindings
prevent).

Overrides fold into the version's fingerprint, so the next run relabels the document; an
override never shows the model classifier more than the rules do, and one that makes a
paragraph RESTRICTED withholds it from the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from affidavit.audit import DECISION_LAPSE, LABEL_OVERRIDE, record_policy_event
from affidavit.errors import InputRejected
from affidavit.records import ExtractedDocument, ParagraphLabel, canonical_json, stable_hash
from affidavit.store.protocol import PolicyEvent, Store
from affidavit.text.bindings import UNBOUND, ContentBinding, text_sha256

LAPSE_ACTOR = "system:bindings"
_OVERRIDE_REASON = "override:"


@dataclass(frozen=True)
class LabelOverride:
    """One override in force: the label set, and the content and label it was decided on."""

    seq: int  # the policy event that recorded it
    node_id: str
    paragraph: int  # where the paragraph was when decided (shown, never matched)
    label: str
    binding: ContentBinding


@dataclass(frozen=True)
class LapsedOverride:
    """An override that no longer holds, and why (a :mod:`bindings` reason code)."""

    override: LabelOverride
    reason: str


def all_recorded_overrides(store: Store, tenant: str) -> dict[str, tuple[LabelOverride, ...]]:
    """node id -> the overrides in force: the newest event for a paragraph content wins, a
    null label withdraws it, and a lapsed override is gone for good."""
    found: dict[tuple[str, str], LabelOverride] = {}
    lapsed: set[int] = set()
    for event in store.iter_policy_events(tenant):
        if event.kind == DECISION_LAPSE:
            lapsed.update(_lapsed_seq(event, LABEL_OVERRIDE))
        elif event.kind == LABEL_OVERRIDE:
            _replay(found, event)
    by_node: dict[str, list[LabelOverride]] = {}
    for override in found.values():
        if override.seq not in lapsed:
            by_node.setdefault(override.node_id, []).append(override)
    return {node: tuple(sorted(items, key=lambda o: o.seq)) for node, items in by_node.items()}


def overrides_in_force(store: Store, tenant: str) -> dict[str, tuple[LabelOverride, ...]]:
    """:func:`all_recorded_overrides`, after the unbound ones (recorded by position, before
    bindings) lapse: once each, whether or not their document is derived again."""
    found = all_recorded_overrides(store, tenant)
    unbound = [o for items in found.values() for o in items if o.binding.content_sha256 is None]
    if not unbound:
        return found
    record_lapses(store, tenant, (LapsedOverride(o, UNBOUND) for o in unbound))
    bound = {node: tuple(o for o in items if o.binding.content_sha256 is not None)
             for node, items in found.items()}
    return {node: items for node, items in bound.items() if items}


def _replay(found: dict[tuple[str, str], LabelOverride], event: PolicyEvent) -> None:
    after = json.loads(event.after_json)
    if not isinstance(after, dict) or not isinstance(after.get("node_id"), str):
        return
    binding = ContentBinding.from_dict(after.get("binding"))
    paragraph = int(after.get("paragraph", -1))
    # An unbound (positional) override is keyed by position, as it was recorded.
    key = (after["node_id"], binding.content_sha256 or f"position:{paragraph}")
    if after.get("label") is None:
        found.pop(key, None)
    else:
        found[key] = LabelOverride(event.seq, after["node_id"], paragraph,
                                   str(after["label"]), binding)


def _lapsed_seq(event: PolicyEvent, kind: str) -> list[int]:
    after = json.loads(event.after_json)
    if isinstance(after, dict) and after.get("decision") == kind \
            and isinstance(after.get("seq"), int):
        return [after["seq"]]
    return []


def recorded_overrides(store: Store, tenant: str, node_id: str) -> tuple[LabelOverride, ...]:
    """The overrides in force for ``node_id``."""
    return all_recorded_overrides(store, tenant).get(node_id, ())


def overrides_digest(overrides: Sequence[LabelOverride]) -> str:
    """A stable digest of a document's overrides ('' when there are none)."""
    if not overrides:
        return ""
    return stable_hash("label-overrides", canonical_json(
        [[o.seq, o.label, o.binding.to_dict()] for o in sorted(overrides, key=lambda o: o.seq)]))


def present_in(doc: ExtractedDocument,
               overrides: Sequence[LabelOverride]) -> tuple[LabelOverride, ...]:
    """The overrides whose paragraph text ``doc`` still holds (somewhere)."""
    if not overrides:
        return ()
    hashes = {text_sha256(doc.paragraph_text(p)) for p in doc.paragraphs}
    return tuple(o for o in overrides if o.binding.content_sha256 in hashes)


def paragraph_binding(doc: ExtractedDocument, labels: Sequence[ParagraphLabel],
                      paragraph: int, in_force: Sequence[LabelOverride]) -> ContentBinding:
    """What an override of paragraph ``paragraph`` of the version ``doc`` and ``labels``
    describe is about: its text and the label detected for it (under an override in force,
    the label that override replaced)."""
    text = next((doc.paragraph_text(p) for p in doc.paragraphs if p.index == paragraph), None)
    label = next((row for row in labels if row.index == paragraph), None)
    if text is None or label is None:
        raise InputRejected("OVERRIDE_OUT_OF_RANGE",
                            f"the document has no paragraph {paragraph}")
    content = text_sha256(text)
    if not any(reason.startswith(_OVERRIDE_REASON) for reason in label.reasons):
        return ContentBinding(content, label.label)
    current = next((o for o in in_force if o.binding.content_sha256 == content), None)
    if current is None or current.binding.replaced is None:
        raise InputRejected("OVERRIDE_STALE", "the paragraph's label still shows an override "
                            "recorded by position; run an ingestion first (it lapses)")
    return ContentBinding(content, current.binding.replaced)


def record_override(store: Store, tenant: str, *, node_id: str, paragraph: int,
                    label: str | None, reason: str, actor: str,
                    binding: ContentBinding) -> PolicyEvent:
    """Record one override (``label`` None withdraws it) bound to ``binding``; in force from
    the next ingestion run, which relabels the document."""
    if not reason.strip():
        raise InputRejected("OVERRIDE_REASON", "an override needs a reason")
    if paragraph < 0:
        raise InputRejected("OVERRIDE_OUT_OF_RANGE", "paragraph indexes start at 0")
    before = next((o.label for o in recorded_overrides(store, tenant, node_id)
                   if o.binding.content_sha256 == binding.content_sha256), None)
    return record_policy_event(
        store, tenant, LABEL_OVERRIDE, actor,
        {"node_id": node_id, "paragraph": paragraph, "label": before},
        {"node_id": node_id, "paragraph": paragraph, "label": label,
         "binding": binding.to_dict(), "reason": reason.strip()})


def record_lapses(store: Store, tenant: str, lapsed: Iterable[LapsedOverride]) -> int:
    """Record a ``decision.lapse`` event for each lapsed override; how many."""
    count = 0
    for item in lapsed:
        o = item.override
        decided = {"decision": LABEL_OVERRIDE, "seq": o.seq, "node_id": o.node_id,
                   "paragraph": o.paragraph, "label": o.label, "binding": o.binding.to_dict()}
        record_policy_event(store, tenant, DECISION_LAPSE, LAPSE_ACTOR, decided,
                            {"decision": LABEL_OVERRIDE, "seq": o.seq, "node_id": o.node_id,
                             "lapsed": item.reason})
        count += 1
    return count
