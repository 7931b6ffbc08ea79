"""The subject-scope gate: a request's SIRE subject scope override (spec 003 §8.1).

A caller may narrow one answer to sources about named subjects. A chunk goes on toward the
prompt only when the ACTIVE SIRE Subject of its source is in the scope; the others are
dropped with ``SUBJECT_OUT_OF_SCOPE`` and the ledger lists them with the other gates. It
runs after the SIRE gate (so every chunk it sees has an ACTIVE SIRE) and only narrows:
it never admits what authorization or the exclusion gate refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from affidavit.identity.sire import normalize_subject
from affidavit.records import ScoredChunk
from affidavit.retrieval.gates import GateDrop, GateResult
from affidavit.store.protocol import SireRecord

OUT_OF_SCOPE = "SUBJECT_OUT_OF_SCOPE"


def subject_scope_gate(candidates: Sequence[ScoredChunk], active: Mapping[str, SireRecord],
                       scope: Sequence[str]) -> GateResult:
    """Keep chunks whose source's ACTIVE SIRE Subject is one of ``scope`` (normalized)."""
    wanted = {normalize_subject(subject) for subject in scope}
    kept: list[ScoredChunk] = []
    dropped: list[GateDrop] = []
    for candidate in candidates:
        record = active.get(candidate.chunk.version_id)
        if record is not None and normalize_subject(record.sire.subject) in wanted:
            kept.append(candidate)
        else:
            dropped.append(GateDrop(candidate.chunk.chunk_id, OUT_OF_SCOPE))
    return GateResult("subject_scope", tuple(kept), tuple(dropped))
