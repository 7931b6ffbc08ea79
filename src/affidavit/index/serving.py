"""Which run's boundary an answer is judged against, and the ``DEGRADED_BOUNDARY``
annotation it carries into the ledger (spec 003 §10.2).

The serving run is the tenant's latest run that reached its boundary: COMPLETED, or
DEGRADED when it quarantined documents, whose boundary was computed without them. A FAILED
run promoted nothing (§10.1) and a RUNNING one has not locked its boundary, so neither
serves. Every answer from a DEGRADED run records ``DEGRADED_BOUNDARY`` with the documents
it left out (a reviewer's release lets one in at the next run, not before): an annotation,
never a change of output state.

The names of quarantined documents are derived text that was never labelled (the document
was refused before its labels were decided). The ledger keeps them, as the spec asks; a
reader of the record sees a name only when it may read the whole head document of that
path now (:func:`boundary_shown_to`); the others are left out, count and all, as in run
views (:mod:`affidavit.service.api.run_views`): the annotation alone says the scope was
narrower. The answer returned to the asker carries the annotation on each claim, never the
names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from affidavit.records import AuthzContext
from affidavit.store.protocol import RunRecord, Store

# Defined here rather than beside the boundary's numpy code: every answer reads it.
DEGRADED_BOUNDARY = "DEGRADED_BOUNDARY"
SERVING_STATUSES = ("COMPLETED", "DEGRADED")
# How far back the serving run is looked for: further failed runs in a row mean none.
_RUNS_SCANNED = 50
_RUNS_FIRST = 3


@dataclass(frozen=True)
class ServingRun:
    """The run whose boundary answers are judged against."""

    run_id: str
    status: str
    digest: str | None
    excluded: tuple[str, ...]

    @property
    def degraded(self) -> bool:
        """Whether documents were left out of the corpus this run serves."""
        return bool(self.excluded)

    def to_record(self) -> dict[str, Any]:
        """The ledger's ``boundary`` entry."""
        return {"run_id": self.run_id, "status": self.status, "digest": self.digest,
                "degraded": self.degraded,
                "annotations": [DEGRADED_BOUNDARY] if self.degraded else [],
                "excluded": list(self.excluded)}


def serving_run(store: Store, tenant: str) -> ServingRun | None:
    """The tenant's latest run that locked a boundary, or ``None``."""
    # Every answer asks: the latest few runs first, further back only after failures.
    for limit in (_RUNS_FIRST, _RUNS_SCANNED):
        runs = store.list_runs(tenant, limit=limit)
        for run in runs:
            if run.status in SERVING_STATUSES:
                return _serving(run)
        if len(runs) < limit:
            break
    return None


def boundary_entry(store: Store, tenant: str) -> dict[str, Any]:
    """What a ledger record says about the boundary it was answered under."""
    run = serving_run(store, tenant)
    if run is None:
        return {"run_id": None, "degraded": False, "annotations": [], "excluded": []}
    return run.to_record()


def boundary_shown_to(entry: Any, store: Store, authz: AuthzContext) -> Any:
    """A logged ``boundary`` entry as one reader may see it: each excluded name only when
    that reader may read the whole head document holding that path now; the others are
    left out, count and all (``DEGRADED_BOUNDARY`` stays: the scope was narrower)."""
    if not isinstance(entry, Mapping):
        return entry
    names = [str(n) for n in entry.get("excluded") or ()]
    shown = _readable_paths(store, authz, names) if names else set()
    return {**entry, "excluded": [n for n in names if n in shown]}


def _serving(run: RunRecord) -> ServingRun:
    summary = _summary(run)
    boundary = summary.get("boundary")
    boundary = boundary if isinstance(boundary, Mapping) else {}
    excluded: tuple[str, ...] = ()
    if run.status == "DEGRADED":
        # A reviewer's release lets a document in at the next run; until then the corpus
        # this run serves is still without it.
        excluded = tuple(sorted({str(q.get("alias")) for q in summary.get("quarantined") or ()
                                 if isinstance(q, Mapping) and q.get("alias")}))
    # The entry is shown to every reader of the record: ids, codes and the digest only (the
    # embedding model, whose id can name an endpoint, is in the plausibility entry).
    digest = boundary.get("digest")
    return ServingRun(run.run_id, run.status, None if digest is None else str(digest),
                      excluded)


def _summary(run: RunRecord) -> dict[str, Any]:
    try:
        summary = json.loads(run.summary_json or "{}")
    except ValueError:
        return {}
    return summary if isinstance(summary, dict) else {}


def _readable_paths(store: Store, authz: AuthzContext, names: list[str]) -> set[str]:
    """The paths among ``names`` whose head document this reader may read whole."""
    wanted = set(names)
    readable: set[str] = set()
    for head in store.heads(authz.tenant):
        if head.alias not in wanted:
            continue
        ids = store.document_chunk_ids(authz.tenant, head.node_id)
        if ids and len(store.get_chunks(authz, ids)) == len(ids):
            readable.add(head.alias)
    return readable
