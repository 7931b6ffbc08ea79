"""A run whose boundary cannot be computed does not promote its chunks (spec 003 §10.1).

An ingestion run commits each document version as it goes, and locks the geometric boundary
of the served corpus at its end. When that fails (fewer than two chunk vectors, a covariance
that cannot be inverted, vectors that are not finite, an embedder that fails), the corpus
has no boundary to govern it: the run is FAILED, says why, and takes back what it promoted.
Every node whose head it moved serves its previous head again, derived once more from that
version's stored bytes with the metadata it was ingested with (nothing is fetched); a node
the run brought in is withdrawn until a run that can lock a boundary brings it back. The
previous version's SIRE approval comes back with it when its proposal is the same.

Withdrawals the run's listing made stay: they promote nothing. So do versions the run
derived again from the same bytes because settings changed (a requalification): the
version before was derived under settings no longer in force and is never served again.
The vectors of what was put back are computed again at once, unless the embedder is what
failed (then by the next run that reaches its boundary), so that the corpus is again the
one the previous run locked.

A run that promoted nothing has nothing to take back: a corpus with fewer than two chunk
vectors (its labels are not sent to the embedder, say) then keeps serving with no boundary,
and the run's record says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from affidavit.errors import AffidavitError
from affidavit.index.backends import make_backend
from affidavit.index.boundary import BOUNDARY_EMBEDDER_FAILED, BoundaryFailure
from affidavit.index.embed import embed_missing
from affidavit.ingest.outcomes import INGESTED, UNCHANGED
from affidavit.ingest.stored import stored_document
from affidavit.store.protocol import HeadInfo

if TYPE_CHECKING:  # ingest imports this module at run time
    from affidavit.ingest.run import Ingestor


@dataclass
class PromotionGuard:
    """The heads a run started from, so that a boundary failure can put them back."""

    ingestor: Ingestor
    before: dict[str, HeadInfo]

    @classmethod
    def start(cls, ingestor: Ingestor) -> PromotionGuard:
        """Remember the tenant's heads (read before the run commits anything)."""
        heads = ingestor.store.heads(ingestor.tenant)
        return cls(ingestor, {h.node_id: h for h in heads})

    def promoted(self) -> bool:
        """Whether the run moved any head to a version of its own."""
        return any(self.before.get(h.node_id, h).version_id != h.version_id
                   or h.node_id not in self.before
                   for h in self.ingestor.store.heads(self.ingestor.tenant))

    def take_back(self, run_id: str, failure: BoundaryFailure) -> dict[str, Any]:
        """Undo the run's promotions; the run's boundary entry, saying why."""
        store, tenant = self.ingestor.store, self.ingestor.tenant
        restored: list[str] = []
        withdrawn: list[str] = []
        for head in store.heads(tenant):
            prior = self.before.get(head.node_id)
            if prior is not None and prior.raw_digest == head.raw_digest:
                # Unmoved, or its own bytes derived again under changed settings (a
                # requalification): the version before is stale and can never serve again.
                continue
            if prior is not None and self._restore(prior, run_id):
                restored.append(prior.alias)
                continue
            # New in this run, or its previous version cannot be derived again: unserved.
            if store.withdraw(tenant, head.node_id, run_id=run_id, at=_now()):
                withdrawn.append(head.alias)
        embedded = (self._embed_restored() if restored
                    and failure.reason_code != BOUNDARY_EMBEDDER_FAILED else 0)
        return {"failed": failure.reason_code, "detail": failure.detail,
                "promoted": False, "restored": sorted(restored),
                "withdrawn": sorted(withdrawn), "embedded": embedded}

    def _embed_restored(self) -> int | None:
        """Vectors for what was put back, as the run would have embedded them (the declared
        embedding egress only); ``None`` when that fails too."""
        ingestor = self.ingestor
        backend = make_backend(ingestor.settings.vectors)
        if backend is None:
            return 0
        try:
            return embed_missing(ingestor.store, ingestor.tenant, backend,
                                 batch_size=ingestor.settings.vectors.batch_size,
                                 labels=ingestor.settings.egress.embedding_labels,
                                 label_epoch=ingestor.label_epoch).embedded
        except AffidavitError:
            return None

    def _restore(self, prior: HeadInfo, run_id: str) -> bool:
        document = stored_document(self.ingestor, prior)
        if document is None:
            return False
        self.ingestor.restoring[prior.node_id] = prior.version_id
        try:
            outcome = self.ingestor.ingest_one(document, run_id)
        finally:
            self.ingestor.restoring.pop(prior.node_id, None)
        # Unchanged: the head already is what those bytes derive to.
        return outcome.status in (INGESTED, UNCHANGED)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")
