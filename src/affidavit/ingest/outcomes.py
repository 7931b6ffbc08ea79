"""What an ingestion run reports: one outcome per document, the run's summary, and the
interruption that carries the summary of a run stopped by Ctrl-C."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INGESTED, UNCHANGED, QUARANTINED = "ingested", "unchanged", "quarantined"


@dataclass
class DocumentOutcome:
    alias: str
    source_id: str
    status: str
    reason_code: str | None = None
    message: str | None = None
    chunks: int = 0
    node_id: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class RunSummary:
    run_id: str
    status: str = "RUNNING"
    outcomes: list[DocumentOutcome] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    relabelled: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    links: dict[str, Any] = field(default_factory=dict)
    vectors: dict[str, Any] = field(default_factory=dict)
    boundary: dict[str, Any] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def chunks_written(self) -> int:
        return sum(o.chunks for o in self.outcomes if o.status == INGESTED)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "ingested": self.count(INGESTED),
            "unchanged": self.count(UNCHANGED),
            "quarantined": [
                {"alias": o.alias, "source_id": o.source_id, "reason_code": o.reason_code,
                 "message": o.message}
                for o in self.outcomes if o.status == QUARANTINED
            ],
            "chunks_written": self.chunks_written,
            "withdrawn": sorted(self.withdrawn),
            "relabelled": sorted(self.relabelled),
            "moved": self.moved,
            "links": self.links,
            "vectors": self.vectors,
            "boundary": self.boundary,
            "warnings": [f"{o.alias}: {w}" for o in self.outcomes for w in o.warnings],
        }


class RunInterrupted(KeyboardInterrupt):
    """An interrupted run (Ctrl-C), closed as FAILED, with what it had done: every document
    it committed is whole, and a re-run resumes (what is unchanged is skipped)."""

    def __init__(self, summary: RunSummary) -> None:
        super().__init__(summary.run_id)
        self.summary = summary
