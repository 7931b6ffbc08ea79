"""The policy the trail implies: its events replayed, and compared with the live tables.

The trail is the policy. A stored tuple, label grant or API key counts only when the events
put it there: the authorizer reads the live rows that the replay also holds
(:func:`tuples_in_force`, :func:`grants_in_force`), so a row written straight into its
table grants nothing, and ``affidavit audit verify`` reports every difference between the
replay and the live rows (:func:`compare_with_live`).

Grants are replayed as changes: a ``grant.add`` event adds the labels its ``after`` holds
and its ``before`` did not, a ``grant.revoke`` removes the ones its ``before`` held and its
``after`` does not. A label that was already live (with or without an event) when a grant
was recorded is thus never laundered into the trail by it.

Label overrides have no table of their own: the overrides in force are read from the
trail itself (:mod:`affidavit.classify.overrides`), so there is nothing to compare.
Pure functions; an event whose JSON does not have the expected shape changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from affidavit.audit.events import (
    API_KEY_CREATE,
    API_KEY_REVOKE,
    GRANT_ADD,
    GRANT_REVOKE,
    TUPLE_ADD,
    TUPLE_REMOVE,
)

if TYPE_CHECKING:
    from affidavit.store.protocol import ApiKeyRecord, PolicyEvent, RelationTuple, Store

POLICY_ROW_KINDS = frozenset({TUPLE_ADD, TUPLE_REMOVE, GRANT_ADD, GRANT_REVOKE,
                              API_KEY_CREATE, API_KEY_REVOKE})
"""The kinds of event that put rows into, or take them out of, the policy tables."""


@dataclass(frozen=True)
class KeyState:
    """What the trail says about one API key."""

    principal: str
    role: str
    expires_at: str | None
    revoked: bool
    seq: int


@dataclass
class PolicyState:
    """The tuples, grants and API keys the events imply, each with the event behind it."""

    tuples: dict[str, int] = field(default_factory=dict)
    """``object#relation@subject`` -> seq of the event that added it."""
    grants: dict[tuple[str, str], int] = field(default_factory=dict)
    """(subject, label) -> seq of the event that granted it."""
    keys: dict[str, KeyState] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    """Tuples and grants taken away, by the same keys, -> seq of the removing event."""


def replay_policy(events: Iterable[PolicyEvent]) -> PolicyState:
    """The policy state ``events`` (one tenant's, in sequence order) imply."""
    state = PolicyState()
    for event in events:
        if event.kind in POLICY_ROW_KINDS:
            _apply(state, event.kind, event.seq, _json(event.before_json),
                   _json(event.after_json))
    return state


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _apply(state: PolicyState, kind: str, seq: int, before: Any, after: Any) -> None:
    if kind == TUPLE_ADD and _has_text(after, "tuple"):
        state.tuples[after["tuple"]] = seq
        state.removed.pop(after["tuple"], None)
    elif kind == TUPLE_REMOVE and _has_text(before, "tuple"):
        state.tuples.pop(before["tuple"], None)
        state.removed[before["tuple"]] = seq
    elif kind in (GRANT_ADD, GRANT_REVOKE):
        _apply_grant(state, kind, seq, before, after)
    elif kind == API_KEY_CREATE and _has_text(after, "key_id"):
        expires = after.get("expires_at")
        state.keys[after["key_id"]] = KeyState(
            str(after.get("principal")), str(after.get("role")),
            None if expires is None else str(expires), False, seq)
    elif kind == API_KEY_REVOKE and _has_text(after, "key_id"):
        known = state.keys.get(after["key_id"])
        if known is not None:
            state.keys[after["key_id"]] = KeyState(known.principal, known.role,
                                                   known.expires_at, True, seq)


def _apply_grant(state: PolicyState, kind: str, seq: int, before: Any, after: Any) -> None:
    described = after if _has_text(after, "subject") else before
    if not _has_text(described, "subject"):
        return
    subject = str(described["subject"])
    had, has = _labels(before), _labels(after)
    if kind == GRANT_ADD:
        for label in has - had:
            state.grants[(subject, label)] = seq
            state.removed.pop(_grant_key(subject, label), None)
    else:
        for label in had - has:
            state.grants.pop((subject, label), None)
            state.removed[_grant_key(subject, label)] = seq


def _has_text(value: Any, key: str) -> bool:
    return isinstance(value, dict) and isinstance(value.get(key), str)


def _labels(value: Any) -> set[str]:
    labels = value.get("labels") if isinstance(value, dict) else None
    return {x for x in labels if isinstance(x, str)} if isinstance(labels, list) else set()


def _grant_key(subject: str, label: str) -> str:
    return f"grant {subject} {label}"


# --------------------------------------------------------------------------- in force


def tuples_in_force(live: Iterable[RelationTuple], state: PolicyState) -> list[RelationTuple]:
    """The live tuples an event put there and no later event took away."""
    return [rel for rel in live if str(rel) in state.tuples]


def grants_in_force(live: Mapping[str, Iterable[str]],
                    state: PolicyState) -> dict[str, tuple[str, ...]]:
    """The live grants an event granted and no later event revoked, by subject."""
    out: dict[str, tuple[str, ...]] = {}
    for subject, labels in live.items():
        kept = tuple(label for label in labels if (subject, label) in state.grants)
        if kept:
            out[subject] = kept
    return out


def key_in_force(record: ApiKeyRecord, state: PolicyState) -> bool:
    """Whether the trail created this very key (principal, role, expiry) and has not
    revoked it."""
    known = state.keys.get(record.key_id)
    return (known is not None and not known.revoked
            and (known.principal, known.role, known.expires_at)
            == (record.principal, record.role, record.expires_at))


class ReplayCache:
    """Each tenant's trail replayed once per head, not once per request: one small read
    (the head) when nothing changed."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[tuple[int, str], PolicyState]] = {}

    def state(self, store: Store, tenant: str) -> PolicyState:
        """The policy state of ``tenant``'s trail as it is now."""
        head = store.policy_head(tenant)
        cached = self._states.get(tenant)
        if cached is not None and cached[0] == head:
            return cached[1]
        events = list(store.iter_policy_events(tenant))
        state = replay_policy(events)
        # Kept only when the events read end at the head read: then they are its replay.
        if events and (events[-1].seq, events[-1].event_hash) == head:
            self._states[tenant] = (head, state)
        return state


# --------------------------------------------------------------------------- comparison


def compare_with_live(state: PolicyState, *, tuples: Iterable[RelationTuple],
                      grants: Mapping[str, Iterable[str]],
                      keys: Iterable[ApiKeyRecord]) -> list[str]:
    """Every difference between the replayed trail and the live rows, one sentence each
    (identifiers only: tuples, subjects, labels, key ids, sequence numbers)."""
    faults: list[str] = []
    live_tuples = {str(rel) for rel in tuples}
    for text in sorted(live_tuples - state.tuples.keys()):
        faults.append(f"tuple {text} is live but no event added it{_since(state, text)}")
    for text in sorted(state.tuples.keys() - live_tuples):
        faults.append(f"tuple {text} was added by event #{state.tuples[text]} "
                      "but is not live")
    live_grants = {(s, label) for s, labels in grants.items() for label in labels}
    for subject, label in sorted(live_grants - state.grants.keys()):
        faults.append(f"grant of {label} to {subject} is live but no event granted it"
                      f"{_since(state, _grant_key(subject, label))}")
    for subject, label in sorted(state.grants.keys() - live_grants):
        faults.append(f"grant of {label} to {subject} was granted by event "
                      f"#{state.grants[(subject, label)]} but is not live")
    faults.extend(_key_faults(state, keys))
    return faults


def _since(state: PolicyState, key: str) -> str:
    seq = state.removed.get(key)
    return "" if seq is None else f" (event #{seq} removed it)"


def _key_faults(state: PolicyState, keys: Iterable[ApiKeyRecord]) -> list[str]:
    faults: list[str] = []
    live = {k.key_id: k for k in keys}
    for key_id in sorted(live):
        record, known = live[key_id], state.keys.get(key_id)
        if known is None:
            faults.append(f"API key {key_id} is live but no event created it")
        elif (record.principal, record.role, record.expires_at) != \
                (known.principal, known.role, known.expires_at):
            faults.append(f"API key {key_id} differs from event #{known.seq} "
                          "(principal, role or expiry)")
        elif known.revoked and record.revoked_at is None:
            faults.append(f"API key {key_id} was revoked by event #{known.seq} "
                          "but is live unrevoked")
        elif not known.revoked and record.revoked_at is not None:
            faults.append(f"API key {key_id} is revoked but no event revoked it")
    for key_id in sorted(state.keys.keys() - live.keys()):
        faults.append(f"API key {key_id} was created by event #{state.keys[key_id].seq} "
                      "but is not stored")
    return faults
