"""Policy changes with their audit events: each function makes one change through the store
and records it with :func:`~affidavit.audit.events.record_policy_event`, so that the CLI and
the service's admin routes write the same trail for the same change.

A change that changed nothing (a tuple already present, a label already granted) records no
event. The event is appended after the change commits: an interrupted process may leave a
change without its event, never an event without its change.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from affidavit.audit.events import (
    API_KEY_CREATE,
    API_KEY_REVOKE,
    GRANT_ADD,
    GRANT_REVOKE,
    IDENTITY_RESOLVE,
    QUARANTINE_RELEASE,
    TUPLE_ADD,
    TUPLE_REMOVE,
    record_policy_event,
)

if TYPE_CHECKING:
    from affidavit.service.keys import IssuedKey
    from affidavit.store.base import IdentityResolution, RelationTuple, Store


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _tuple(rel: RelationTuple) -> dict[str, str]:
    return {"tuple": str(rel), "source": rel.source}


def add_tuple(store: Store, tenant: str, rel: RelationTuple, *, actor: str) -> bool:
    """Store a relationship tuple; True when it was not there before."""
    added = store.add_tuple(tenant, rel, at=_now())
    if added:
        record_policy_event(store, tenant, TUPLE_ADD, actor, None, _tuple(rel))
    return added


def remove_tuple(store: Store, tenant: str, rel: RelationTuple, *, actor: str) -> bool:
    """Remove a stored tuple; True when there was one. Its history stays in the trail."""
    removed = store.remove_tuple(tenant, rel)
    if removed:
        record_policy_event(store, tenant, TUPLE_REMOVE, actor, _tuple(rel), None)
    return removed


def _granted(store: Store, tenant: str, subject: str) -> list[str]:
    return sorted(store.list_grants(tenant).get(subject, ()))


def grant_labels(store: Store, tenant: str, subject: str, labels: Sequence[str], *,
                 actor: str) -> int:
    """Grant ``labels`` to ``subject``; the number newly granted."""
    before = _granted(store, tenant, subject)
    added = store.grant(tenant, subject, labels, at=_now())
    if added:
        record_policy_event(store, tenant, GRANT_ADD, actor,
                            {"subject": subject, "labels": before},
                            {"subject": subject, "labels": _granted(store, tenant, subject)})
    return added


def revoke_labels(store: Store, tenant: str, subject: str, labels: Sequence[str], *,
                  actor: str) -> int:
    """Revoke ``labels`` from ``subject``; the number revoked, each one an event's worth."""
    before = _granted(store, tenant, subject)
    removed = store.revoke(tenant, subject, labels)
    if removed:
        record_policy_event(store, tenant, GRANT_REVOKE, actor,
                            {"subject": subject, "labels": before},
                            {"subject": subject, "labels": _granted(store, tenant, subject)})
    return removed


def issue_api_key(store: Store, tenant: str, principal: str, *, role: str,
                  expires: str | None, actor: str) -> IssuedKey:
    """Create an API key; the event names the key id, principal, role and expiry, never the
    secret or its hash."""
    from affidavit.service.keys import issue_key

    issued = issue_key(store, tenant, principal, role=role, expires=expires)
    r = issued.record
    record_policy_event(store, tenant, API_KEY_CREATE, actor, None,
                        {"key_id": r.key_id, "principal": r.principal, "role": r.role,
                         "expires_at": r.expires_at})
    return issued


def revoke_api_key(store: Store, tenant: str, key_id: str, *, actor: str) -> bool:
    """Revoke an API key; False when there is no active key with that id."""
    record = store.get_api_key(tenant, key_id)
    at = _now()
    if record is None or not store.revoke_api_key(tenant, key_id, at=at):
        return False
    described = {"key_id": key_id, "principal": record.principal, "role": record.role}
    record_policy_event(store, tenant, API_KEY_REVOKE, actor,
                        {**described, "revoked_at": None}, {**described, "revoked_at": at})
    return True


def release_quarantine(store: Store, tenant: str, run_id: str, alias: str, *,
                       actor: str) -> bool:
    """Release a quarantine entry; False when there is no unreleased one."""
    at = _now()
    if not store.release_quarantine(tenant, run_id, alias, by=actor, at=at):
        return False
    record_policy_event(store, tenant, QUARANTINE_RELEASE, actor,
                        {"run_id": run_id, "alias": alias, "released": False},
                        {"run_id": run_id, "alias": alias, "released": True})
    return True


def resolve_identity(store: Store, tenant: str, resolution: IdentityResolution) -> None:
    """Record an operator's decision on an identity collision, and its event."""
    r = resolution
    store.resolve_identity(tenant, r)
    record_policy_event(store, tenant, IDENTITY_RESOLVE, r.resolved_by,
                        {"node_id": r.node_id, "source_id": r.source_id, "owner": r.owner},
                        {"node_id": r.node_id, "source_id": r.source_id, "claimant": r.claimant,
                         "decision": r.decision, "note": r.note})
