"""Policy changes with their audit events, so that the CLI and the service's admin routes
write the same trail for the same change.

A change that changed nothing (a tuple already present, a label already granted) records no
event. Tuple, grant and API key events are appended by the store in the change's own
transaction, by the actor given here: the row and the event behind it commit together (no
row without one counts; see :mod:`affidavit.audit.replay`). Other events are recorded with
:func:`~affidavit.audit.events.record_policy_event` after their change commits: an
interrupted process may leave such a change without its event, never an event without its
change.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from affidavit.audit.events import (
    IDENTITY_RESOLVE,
    QUARANTINE_RELEASE,
    record_policy_event,
)

if TYPE_CHECKING:
    from affidavit.store.protocol import IdentityResolution, RelationTuple, Store


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def add_tuple(store: Store, tenant: str, rel: RelationTuple, *, actor: str) -> bool:
    """Store a relationship tuple; True when it was not there before."""
    return store.add_tuple(tenant, rel, at=_now(), actor=actor)


def remove_tuple(store: Store, tenant: str, rel: RelationTuple, *, actor: str) -> bool:
    """Remove a stored tuple; True when there was one. Its history stays in the trail."""
    return store.remove_tuple(tenant, rel, actor=actor)


def grant_labels(store: Store, tenant: str, subject: str, labels: Sequence[str], *,
                 actor: str) -> int:
    """Grant ``labels`` to ``subject``; the number newly granted."""
    return store.grant(tenant, subject, labels, at=_now(), actor=actor)


def revoke_labels(store: Store, tenant: str, subject: str, labels: Sequence[str], *,
                  actor: str) -> int:
    """Revoke ``labels`` from ``subject``; the number revoked, each one an event's worth."""
    return store.revoke(tenant, subject, labels, actor=actor)


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


def resolve_identity(store: Store, tenant: str, resolution: IdentityResolution, *,
                     content_sha256: str | None = None) -> None:
    """Record an operator's decision on an identity collision, and its event, bound to the
    sha256 of the claimant's bytes it was decided about (affidavit.identity.take_over)."""
    r = resolution
    store.resolve_identity(tenant, r)
    record_policy_event(store, tenant, IDENTITY_RESOLVE, r.resolved_by,
                        {"node_id": r.node_id, "source_id": r.source_id, "owner": r.owner},
                        {"node_id": r.node_id, "source_id": r.source_id, "claimant": r.claimant,
                         "decision": r.decision, "note": r.note,
                         "binding": {"content_sha256": content_sha256}})
