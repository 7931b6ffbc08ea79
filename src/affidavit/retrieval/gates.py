"""Gates between retrieval and the prompt. Each returns what it kept and why it dropped
the rest, so that the ledger can show the evidence set before and after every gate.

* :func:`sire_gate` — spec 003 Algorithm 2 step 3: a chunk reaches a prompt only if its
  source has an ACTIVE SIRE, and is purged if it contains one of its own source's Excluded
  terms. It is independent of authorization, which already happened inside retrieval.
* :func:`restricted_exit` — the context-assembly exit: RESTRICTED text never goes on towards
  a model (the rerank exit is the other one; the provider guard backs both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from affidavit.config.settings import RESTRICTED
from affidavit.records import ScoredChunk
from affidavit.store.protocol import SireRecord


@dataclass(frozen=True)
class GateDrop:
    chunk_id: str
    reason: str


@dataclass(frozen=True)
class GateResult:
    gate: str
    kept: tuple[ScoredChunk, ...]
    dropped: tuple[GateDrop, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "gate": self.gate,
            "kept": [c.chunk.chunk_id for c in self.kept],
            "dropped": [{"chunk_id": d.chunk_id, "reason": d.reason} for d in self.dropped],
        }


def sire_gate(candidates: Sequence[ScoredChunk],
              active: Mapping[str, SireRecord]) -> GateResult:
    """Keep chunks whose source has an ACTIVE SIRE and no own Excluded term in the text."""
    # Term matching compiles its patterns on import; only answering needs it.
    from affidavit.identity.terms import exclusion_hits

    kept: list[ScoredChunk] = []
    dropped: list[GateDrop] = []
    for candidate in candidates:
        record = active.get(candidate.chunk.version_id)
        if record is None:
            dropped.append(GateDrop(candidate.chunk.chunk_id, "NO_ACTIVE_SIRE"))
            continue
        hits = exclusion_hits(candidate.chunk.text, record.sire.excluded)
        if hits:
            dropped.append(GateDrop(candidate.chunk.chunk_id, "SIRE_EXCLUDED:" + ",".join(hits)))
            continue
        kept.append(candidate)
    return GateResult("sire", tuple(kept), tuple(dropped))


def is_restricted(label: str) -> bool:
    return label.strip().upper() == RESTRICTED


def restricted_exit(candidates: Sequence[ScoredChunk], *, limit: int) -> GateResult:
    """Drop RESTRICTED chunks, then keep the best ``limit`` of the rest in rank order."""
    kept: list[ScoredChunk] = []
    dropped: list[GateDrop] = []
    for candidate in candidates:
        if is_restricted(candidate.chunk.label):
            dropped.append(GateDrop(candidate.chunk.chunk_id, "RESTRICTED_EXIT"))
        elif len(kept) >= limit:
            dropped.append(GateDrop(candidate.chunk.chunk_id, "BEYOND_EVIDENCE_LIMIT"))
        else:
            kept.append(candidate)
    return GateResult("context_assembly", tuple(kept), tuple(dropped))
