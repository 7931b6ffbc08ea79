"""An identity take-over binds to the bytes the operator decided about.

``affidavit identity resolve PATH --take-over`` lets PATH own a source id another path held,
on the strength of the collision the operator was shown: PATH with particular bytes. The
collision's quarantine entry names those bytes' sha256, and the resolution's policy event
keeps it as its binding. At PATH's next ingest, before it supersedes the node, its bytes
must be the ones decided about; other bytes lapse the take-over (a ``decision.lapse``
event, shown in review), give the node back to the path that held it, and quarantine PATH
again as a collision, for a new decision about what it is now. Once PATH has superseded the
node, it is the owner and its edits are ordinary edits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from affidavit.audit.events import DECISION_LAPSE, IDENTITY_RESOLVE, record_policy_event
from affidavit.store.protocol import TAKE_OVER, IdentityResolution, Store, identity_collision
from affidavit.text.bindings import CONTENT_CHANGED

LAPSE_ACTOR = "system:bindings"
_BYTES = re.compile(r"bytes sha256:([0-9a-f]{64})")


def collision_bytes(message: str) -> str | None:
    """The sha256 of the claimant's bytes a collision's quarantine message names."""
    found = _BYTES.search(message)
    return found.group(1) if found else None


@dataclass(frozen=True)
class PendingTakeOver:
    """A take-over not yet acted on: the event that recorded it and what it is bound to."""

    seq: int
    node_id: str
    source_id: str
    claimant: str
    owner: str
    content_sha256: str | None


def pending_take_over(store: Store, tenant: str, node_id: str,
                      claimant: str) -> PendingTakeOver | None:
    """The latest take-over of ``node_id`` by ``claimant`` while the node's head is not yet
    the claimant's own (None once it has superseded the node, or when there is none)."""
    head = store.head(tenant, node_id)
    if head is not None and head.alias == claimant:
        return None
    latest: PendingTakeOver | None = None
    for event in store.iter_policy_events(tenant):
        if event.kind != IDENTITY_RESOLVE:
            continue
        before, after = json.loads(event.before_json), json.loads(event.after_json)
        if not (isinstance(before, dict) and isinstance(after, dict)):
            continue
        if after.get("node_id") != node_id or after.get("claimant") != claimant:
            continue
        if after.get("decision") != TAKE_OVER:
            latest = None
            continue
        binding = after.get("binding")
        digest = binding.get("content_sha256") if isinstance(binding, dict) else None
        latest = PendingTakeOver(event.seq, node_id, str(after.get("source_id", "")),
                                 claimant, str(before.get("owner", "")),
                                 digest if isinstance(digest, str) else None)
    return latest


def lapse_take_over(store: Store, tenant: str, pending: PendingTakeOver) -> None:
    """Give the node back to the path that held it and record why (a ``decision.lapse``)."""
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    store.resolve_identity(tenant, IdentityResolution(
        node_id=pending.node_id, source_id=pending.source_id, claimant=pending.owner,
        owner=pending.claimant, decision=TAKE_OVER, resolved_by=LAPSE_ACTOR, resolved_at=now,
        note=f"take-over #{pending.seq} lapsed: the claimant's bytes are not the ones decided"))
    binding = {"content_sha256": pending.content_sha256, "replaced": None}
    record_policy_event(store, tenant, DECISION_LAPSE, LAPSE_ACTOR,
                        {"decision": IDENTITY_RESOLVE, "seq": pending.seq,
                         "node_id": pending.node_id, "binding": binding},
                        {"decision": IDENTITY_RESOLVE, "seq": pending.seq,
                         "node_id": pending.node_id, "lapsed": CONTENT_CHANGED})


class TakeOvers:
    """The take-overs of one ingestion run: read once, checked per document."""

    def __init__(self, store: Store, tenant: str) -> None:
        self.store, self.tenant = store, tenant
        self._pairs: set[tuple[str, str]] | None = None

    def check(self, node_id: str, alias: str, raw_digest: str, source_id: str) -> None:
        """A take-over ``alias`` has not acted on yet holds only for the bytes it was
        decided about; other bytes lapse it and are a collision again."""
        if self._pairs is None:  # most runs have none: one read per run
            self._pairs = {(r.node_id, r.claimant) for r in
                           self.store.list_identity_resolutions(self.tenant)
                           if r.decision == TAKE_OVER}
        if (node_id, alias) not in self._pairs:
            return
        pending = pending_take_over(self.store, self.tenant, node_id, alias)
        if pending is not None and pending.content_sha256 != raw_digest:
            lapse_take_over(self.store, self.tenant, pending)
            self._pairs = None
            raise identity_collision(source_id, alias, raw_digest)
