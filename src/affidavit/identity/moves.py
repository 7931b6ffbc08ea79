"""A file that moved is the same document: identity without a declared ``source_id``.

A document with no declared ``source_id`` is identified by its path. When one path of a
full listing disappears and, in the same listing, a new path appears with exactly the same
bytes (one candidate, no other claimant), the file moved: the new path becomes an alias of
the existing node, recorded as an identity resolution (``TAKE_OVER`` by
:data:`MOVE_ACTOR`, an ``identity.resolve`` policy event) whose owner is the old path: the
redirect. The node keeps its id, history and ACL; the move is a new version of it.

Anything less certain (two disappeared paths with those bytes, bytes that changed on the
way) is not a move: the new path is a new node, and the old one is withdrawn as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from affidavit.audit import changes as audited
from affidavit.records import SourceDocument, node_id_for, sha256_hex
from affidavit.store.protocol import TAKE_OVER, HeadInfo, IdentityResolution, Store

MOVE_ACTOR = "system:move"
MOVE_NOTE = "moved: the same bytes left one path and appeared at this one in one listing"


def _path_identified(document: SourceDocument) -> bool:
    return document.source_id == document.alias


class Moves:
    """The moves of one ingestion run of one listing."""

    def __init__(self, store: Store, tenant: str, listing: str | None):
        self.store, self.tenant = store, tenant
        self.prior: set[str] = store.listed_nodes(tenant, listing) if listing else set()
        self._by_digest: dict[str, list[HeadInfo]] | None = None
        self.redirects = {r.claimant: r.node_id for r in store.list_identity_resolutions(tenant)
                          if r.resolved_by == MOVE_ACTOR and r.decision == TAKE_OVER}
        self.deferred: list[SourceDocument] = []
        self.moved: list[tuple[str, str]] = []

    def node_for(self, source_id: str, alias: str) -> str | None:
        """The node a path-identified document reaches through a recorded move."""
        return self.redirects.get(alias) if source_id == alias else None

    def _heads_by_digest(self) -> dict[str, list[HeadInfo]]:
        if self._by_digest is None:
            self._by_digest = {}
            for head in self.store.heads(self.tenant):
                if head.node_id in self.prior:
                    self._by_digest.setdefault(head.raw_digest, []).append(head)
        return self._by_digest

    def defer(self, document: SourceDocument) -> bool:
        """Hold a new path whose bytes a node of the previous listing has, until the
        listing ends shows whether that node's path disappeared."""
        if not self.prior or not _path_identified(document) or document.alias in self.redirects:
            return False
        if self.store.head(self.tenant, node_id_for(document.source_system,
                                                    document.source_id)) is not None:
            return False
        if sha256_hex(document.content) not in self._heads_by_digest():
            return False
        self.deferred.append(document)
        return True

    def settle(self, seen: Sequence[str]) -> list[SourceDocument]:
        """The deferred documents, in order, with every certain move recorded first."""
        gone = self.prior - set(seen)
        taken: set[str] = set()
        for document in self.deferred:
            candidates = [h for h in self._heads_by_digest().get(sha256_hex(document.content), [])
                          if h.node_id in gone and h.node_id not in taken
                          and h.node_id == node_id_for(document.source_system, h.alias)]
            if len(candidates) != 1:
                continue
            head = candidates[0]
            taken.add(head.node_id)
            audited.resolve_identity(self.store, self.tenant, IdentityResolution(
                node_id=head.node_id, source_id=head.alias, claimant=document.alias,
                owner=self.store.identity_owner(self.tenant, head.node_id) or head.alias,
                decision=TAKE_OVER, resolved_by=MOVE_ACTOR,
                resolved_at=datetime.now(UTC).isoformat(timespec="microseconds"),
                note=MOVE_NOTE), content_sha256=sha256_hex(document.content))
            self.redirects[document.alias] = head.node_id
            self.moved.append((head.alias, document.alias))
        return self.deferred
