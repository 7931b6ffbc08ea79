"""The hash chain of policy events, as pure functions.

Every stored column of an event is bound into its hash::

    event_hash = sha256(canonical JSON of {format, tenant, seq, kind, actor, at,
                                           before, after, prev_hash})

The first event of a tenant chains to :data:`GENESIS_HASH`. Editing any column of any event,
deleting one or reordering them breaks the link of that event or of the next one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store imports this module; a runtime import would be a cycle
    from affidavit.store.protocol import PolicyEvent

GENESIS_HASH = "0" * 64
_EVENT_DOMAIN = "affidavit.policy-event/1"


def event_hash(*, tenant: str, seq: int, kind: str, actor: str, at: str, before_json: str,
               after_json: str, prev_hash: str) -> str:
    """The hash of one policy event, binding every stored column and the one before it."""
    # json.dumps rather than records.canonical_json: this byte layout is a stored format.
    content = json.dumps({"format": _EVENT_DOMAIN, "tenant": tenant, "seq": seq,
                          "kind": kind, "actor": actor, "at": at, "before": before_json,
                          "after": after_json, "prev_hash": prev_hash},
                         sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PolicyChainReport:
    """The outcome of walking one tenant's policy events: the first bad one, or the head."""

    ok: bool
    checked: int
    first_bad_seq: int | None = None
    reason: str | None = None
    head_seq: int = 0
    head_hash: str = GENESIS_HASH


def verify_policy_chain(events: Iterable[PolicyEvent], *, tenant: str) -> PolicyChainReport:
    """Walk ``tenant``'s events in sequence order; report the first that does not link."""
    prev, expected, checked = GENESIS_HASH, 1, 0
    for event in events:
        reason = _fault(event, tenant, prev, expected)
        if reason is not None:
            return PolicyChainReport(False, checked, event.seq, reason, checked, prev)
        prev, expected, checked = event.event_hash, expected + 1, checked + 1
    return PolicyChainReport(True, checked, head_seq=checked, head_hash=prev)


def _fault(event: PolicyEvent, tenant: str, prev: str, expected: int) -> str | None:
    if event.seq != expected:
        return f"sequence gap: expected {expected}, found {event.seq} (an event was deleted)"
    if event.prev_hash != prev:
        return "prev_hash does not match the previous event"
    digest = event_hash(tenant=tenant, seq=event.seq, kind=event.kind, actor=event.actor,
                        at=event.at, before_json=event.before_json,
                        after_json=event.after_json, prev_hash=event.prev_hash)
    return None if digest == event.event_hash else "event_hash does not match the event"
