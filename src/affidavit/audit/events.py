"""Recording policy events: the one function every change path calls.

Every change to who may read what (relationship tuples, label grants), to who may call the
service (API keys), to what a source may answer (SIRE state), to what was let in (quarantine
releases, identity resolutions), to how a paragraph is labelled (label overrides) and to the
effective settings is appended by :func:`record_policy_event` with its actor, UTC time, and
the state before and after. A revocation is an event like any other: the live row may go,
its history stays.

Before and after hold identifiers (subjects, labels, key ids, run ids, source paths) and
never a secret, a document's text or a query.
"""

from __future__ import annotations

import getpass
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from affidavit.errors import InputRejected

if TYPE_CHECKING:
    from collections.abc import Sequence

    from affidavit.store.protocol import PolicyEvent, RelationTuple, Store

TUPLE_ADD, TUPLE_REMOVE = "tuple.add", "tuple.remove"
GRANT_ADD, GRANT_REVOKE = "grant.add", "grant.revoke"
API_KEY_CREATE, API_KEY_REVOKE = "api_key.create", "api_key.revoke"
SIRE_STATE = "sire.state"
QUARANTINE_RELEASE = "quarantine.release"
IDENTITY_RESOLVE = "identity.resolve"
LABEL_OVERRIDE = "label.override"
SETTINGS_EFFECTIVE = "settings.effective"
REFERENCE_ADD = "reference.add"
EPOCHS_RECORDED = "epochs.recorded"
SIRE_CARRY_OVER = "sire.carry_over"
DECISION_LAPSE = "decision.lapse"
"""A recorded human decision no longer holds: the content it decided is gone or changed
(:mod:`affidavit.text.bindings`)."""
DOCUMENT_SUPERSEDE = "document.supersede"
"""A submission over the service replaced a document's head
(:mod:`affidavit.ingest.supersession`)."""

POLICY_EVENT_KINDS = frozenset({
    TUPLE_ADD, TUPLE_REMOVE, GRANT_ADD, GRANT_REVOKE, API_KEY_CREATE, API_KEY_REVOKE,
    SIRE_STATE, QUARANTINE_RELEASE, IDENTITY_RESOLVE, LABEL_OVERRIDE, SETTINGS_EFFECTIVE,
    REFERENCE_ADD, EPOCHS_RECORDED, SIRE_CARRY_OVER, DECISION_LAPSE, DOCUMENT_SUPERSEDE,
})
"""The kinds of change the trail records; anything else is refused, so a typo in a caller
cannot open a kind nobody audits."""


LIBRARY_ACTOR = "library"
"""The actor of a change made through the store's own methods without naming one (a
library caller); every change path of the CLI and the service names its actor."""


def event_json(value: Any) -> str:
    """The stored JSON of an event's ``before`` or ``after``."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tuple_change(rel: RelationTuple) -> dict[str, str]:
    """A tuple as an event's ``before`` or ``after`` names it."""
    return {"tuple": str(rel), "source": rel.source}


def grant_change(subject: str, labels: Sequence[str]) -> dict[str, Any]:
    """A subject's granted labels as an event's ``before`` or ``after`` names them."""
    return {"subject": subject, "labels": sorted(labels)}


def event_time() -> str:
    """The UTC time an event is recorded at."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def record_policy_event(store: Store, tenant: str, kind: str, actor: str, before: Any,
                        after: Any) -> PolicyEvent:
    """Append one policy change to ``tenant``'s chain and return it.

    ``before`` and ``after`` are JSON values (``None`` when the thing did not exist, or no
    longer does). ``actor`` names who made the change: a principal from a verified
    credential in the service, ``--by`` or the operator's OS user on the CLI
    (:func:`operator_actor`)."""
    if kind not in POLICY_EVENT_KINDS:
        raise InputRejected("POLICY_EVENT_KIND", f"unknown policy event kind {kind!r}")
    if not actor.strip():
        raise InputRejected("POLICY_EVENT_ACTOR", "a policy change needs an actor")
    return store.append_policy_event(tenant, kind=kind, actor=actor, at=event_time(),
                                     before_json=event_json(before),
                                     after_json=event_json(after))


def operator_actor(by: str | None = None) -> str:
    """Who is acting on the CLI: ``--by`` when given, else ``os:<user>``, the account that
    runs the command (the CLI acts for whoever can open the database; DESIGN.md)."""
    if by and by.strip():
        return by.strip()
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no name for this uid (a bare container)
        user = "unknown"
    return f"os:{user}"


def policy_version(store: Store, tenant: str) -> dict[str, Any]:
    """The policy in force for ``tenant``: the head of its policy chain, as a ledger record
    names it (``{"seq": 0, ...}`` before the first change)."""
    seq, digest = store.policy_head(tenant)
    return {"seq": seq, "event_hash": digest}


def record_effective_settings(store: Store, tenant: str, config_version: str, *,
                              actor: str) -> PolicyEvent | None:
    """Record the effective settings' version when it differs from the last one recorded;
    None when it does not (the chain then already names the settings in force)."""
    last: str | None = None
    for event in store.iter_policy_events(tenant):
        if event.kind == SETTINGS_EFFECTIVE:
            last = json.loads(event.after_json).get("config_version")
    if last == config_version:
        return None
    before = None if last is None else {"config_version": last}
    return record_policy_event(store, tenant, SETTINGS_EFFECTIVE, actor, before,
                               {"config_version": config_version})


def events_after(store: Store, tenant: str, version: Any) -> list[PolicyEvent]:
    """The policy events appended after the policy version a ledger record names (all of
    them for a record written before records named one)."""
    seq = int(version.get("seq", 0)) if isinstance(version, dict) else 0
    return list(store.iter_policy_events(tenant, after_seq=seq))


def event_dict(event: PolicyEvent) -> dict[str, Any]:
    """One event as JSON for ``affidavit audit list --json`` and the service."""
    return {"seq": event.seq, "kind": event.kind, "actor": event.actor, "at": event.at,
            "before": json.loads(event.before_json), "after": json.loads(event.after_json),
            "prev_hash": event.prev_hash, "event_hash": event.event_hash}
