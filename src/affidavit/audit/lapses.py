"""Decisions that lapsed: the ``decision.lapse`` events of a tenant's policy trail, as
review lists them (``affidavit labels lapsed``, the console's Review page).

A lapse names the decision (its kind and the sequence number of the event that recorded
it), the document node, what the decision set and why it no longer holds: identifiers,
labels, hashes and a reason code, never the content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from affidavit.audit.events import DECISION_LAPSE

if TYPE_CHECKING:
    from affidavit.store.protocol import Store


@dataclass(frozen=True)
class LapsedDecision:
    """One lapse: when, which decision, on which node, and why."""

    seq: int
    at: str
    decision: str  # the kind of the event that recorded the decision
    decision_seq: int
    node_id: str | None
    paragraph: int | None
    label: str | None  # what the decision set
    replaced: str | None  # the label it replaced
    reason: str  # a bindings reason code

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def lapsed_decisions(store: Store, tenant: str) -> list[LapsedDecision]:
    """Every lapse recorded for ``tenant``, newest first."""
    found = []
    for event in store.iter_policy_events(tenant):
        if event.kind != DECISION_LAPSE:
            continue
        before, after = json.loads(event.before_json), json.loads(event.after_json)
        before = before if isinstance(before, dict) else {}
        after = after if isinstance(after, dict) else {}
        binding = before.get("binding")
        binding = binding if isinstance(binding, dict) else {}
        found.append(LapsedDecision(
            event.seq, event.at, str(after.get("decision", "")), int(after.get("seq", 0)),
            _text(after.get("node_id")), _int(before.get("paragraph")),
            _text(before.get("label")), _text(binding.get("replaced")),
            str(after.get("lapsed", ""))))
    return sorted(found, key=lambda lapse: -lapse.seq)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None
