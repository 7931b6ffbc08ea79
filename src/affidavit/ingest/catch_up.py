"""Catching up after a policy change: only what the change touches stays withheld.

Every chunk carries the serving key it was derived under, and readers see only chunks of the
key in force (:mod:`affidavit.index.epochs`), so right after a settings change every head
derived before it is label-stale and withheld. Most of them are not affected: derived again
under the new settings they give the same labels, chunks, metadata and SIRE proposal. This
module finds those, from stored blobs only, and marks them current in place (their version,
ids, vectors and approval stay): they serve again. A head the change does affect stays
withheld, so text the new policy labels differently is never served under the old label,
until ``affidavit requalify --roll`` (or the next ingest) derives and promotes it.

The command line catches up before a search or an answer (when nothing is stale that costs
one query, and nothing of ingestion is imported); the service and the queue worker
do it in the background, in bounded batches. Each pass holds the tenant's ingestion lock
and skips when a run holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from affidavit.errors import RunInProgress

if TYPE_CHECKING:
    from affidavit.config.settings import Settings
    from affidavit.store.protocol import HeadInfo, Store

Progress = Callable[[int, int], None]
"""Called with (heads checked, heads stale) as a pass goes."""


@dataclass
class CatchUp:
    """What one pass did: heads marked current, heads the change affects (still withheld),
    heads left for a later pass, and whether another run held the lock."""

    stale: int = 0
    restamped: list[str] = field(default_factory=list)
    affected: list[str] = field(default_factory=list)  # version ids
    affected_aliases: list[str] = field(default_factory=list)
    remaining: int = 0
    busy: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"stale": self.stale, "restamped": len(self.restamped),
                "affected": sorted(self.affected_aliases), "remaining": self.remaining,
                "busy": self.busy}


def stale_heads(store: Store, settings: Settings, tenant: str | None = None) -> list[HeadInfo]:
    """The heads derived under another serving key than ``settings`` put in force."""
    from affidavit.index.epochs import serving_epoch

    tenant = tenant or settings.tenant
    return store.label_stale_heads(tenant, serving_epoch(settings, tenant))


def catch_up(store: Store, settings: Settings, *, tenant: str | None = None,
             limit: int | None = None, skip: Collection[str] = (),
             progress: Progress | None = None) -> CatchUp:
    """Mark current in place the label-stale heads the settings in force leave unchanged.

    At most ``limit`` heads are checked (all without one); heads whose version id is in
    ``skip`` (found affected by an earlier pass) are not checked again. Nothing is derived
    again as a new version and nothing is fetched."""
    tenant = tenant or settings.tenant
    report = CatchUp()
    heads = [h for h in stale_heads(store, settings, tenant) if h.version_id not in skip]
    report.stale = len(heads)
    if not heads:
        return report  # the common case: a search loads nothing of ingestion beyond this
    from affidavit.ingest.derivation import RESTAMP
    from affidavit.ingest.lock import holding_ingest_lock
    from affidavit.ingest.requalify import Requalifier

    batch = heads if limit is None else heads[:max(0, limit)]
    report.remaining = len(heads) - len(batch)
    try:
        with holding_ingest_lock(store, tenant):
            requalifier = Requalifier(store, settings, tenant=tenant)
            for checked, head in enumerate(batch, 1):
                if requalifier.restamp_if_unaffected(head).status == RESTAMP:
                    report.restamped.append(head.alias)
                else:
                    report.affected.append(head.version_id)
                    report.affected_aliases.append(head.alias)
                if progress is not None:
                    progress(checked, len(batch))
    except RunInProgress:
        report.busy = True
        report.remaining = len(heads)
    return report
