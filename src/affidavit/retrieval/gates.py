"""Gates between retrieval and the prompt. Each returns what it kept and why it dropped
the rest, so that the ledger can show the evidence set before and after every gate.

* :func:`sire_gate` — spec 003 Algorithm 2 step 3: a chunk reaches a prompt only if its
  source has an ACTIVE SIRE, and is purged if it contains one of its own source's Excluded
  terms or a configured default exclusion in force now. It is independent of authorization,
  which already happened inside retrieval.
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


def sire_gate(candidates: Sequence[ScoredChunk], active: Mapping[str, SireRecord],
              default_excludes: Sequence[str] = ()) -> GateResult:
    """Keep chunks whose source has an ACTIVE SIRE and none of its Excluded terms in the text.

    A source's Excluded terms are its approved set and the configured ``default_excludes``
    in force now: an exclusion-list change takes effect on the next request, with no
    re-derivation and no approval reset (spec 003 §10.3). A default term that names the
    source's own identity is not applied to it (§7, identity rule 5); the ledger reports it
    (:func:`default_excludes_record`)."""
    # Term matching compiles its patterns on import; only answering needs it.
    from affidavit.identity.terms import exclusion_hits

    kept: list[ScoredChunk] = []
    dropped: list[GateDrop] = []
    for candidate in candidates:
        record = active.get(candidate.chunk.version_id)
        if record is None:
            dropped.append(GateDrop(candidate.chunk.chunk_id, "NO_ACTIVE_SIRE"))
            continue
        applied, _ = _split_defaults(record, default_excludes)
        terms = tuple(dict.fromkeys((*record.sire.excluded, *applied)))
        hits = exclusion_hits(candidate.chunk.text, terms)
        if hits:
            dropped.append(GateDrop(candidate.chunk.chunk_id, "SIRE_EXCLUDED:" + ",".join(hits)))
            continue
        kept.append(candidate)
    return GateResult("sire", tuple(kept), tuple(dropped))


def _split_defaults(record: SireRecord, default_excludes: Sequence[str]
                    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``default_excludes`` (as stored terms) split into those applied to ``record``'s source
    and those that collapse into its own identity (its subject and title), not applied."""
    if not default_excludes:
        return (), ()
    from affidavit.identity.terms import identity_tokens, split_by_identity

    return split_by_identity(default_excludes,
                             identity_tokens([record.sire.subject, record.title]))


def default_excludes_record(active: Mapping[str, SireRecord],
                            default_excludes: Sequence[str]) -> dict[str, object]:
    """What an answer records about the default exclusions: the list in force, and each
    source of the candidates to which a term was not applied because it names the source
    itself (reported, never silently excluding the source)."""
    terms = [t for t in dict.fromkeys(str(x) for x in default_excludes) if t]
    not_applied = []
    for version_id in sorted(active):
        record = active[version_id]
        _, own = _split_defaults(record, terms)
        if own:
            not_applied.append({"sire_id": record.sire_id, "version_id": version_id,
                                "terms": list(own)})
    return {"in_force": terms, "not_applied": not_applied}


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
