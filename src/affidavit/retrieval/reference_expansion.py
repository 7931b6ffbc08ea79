"""Reference-aware retrieval (spec 004, "Reference Graph Traversal").

From the documents a query's first pass found, references are followed breadth-first in
both directions for ``depth`` hops: cycle-safe (a visited set), at most
:data:`MAX_DOCUMENTS_PER_HOP` new documents per hop and :data:`MAX_REFERENCES` references
read per query, and never through a reference or a document the caller may not read (the
store filters on the reference's classification inside its query; both ends are checked
readable, a document meaning all of its head chunks). The reached documents are then
searched with the same query, under a context narrowed to their ``doc:`` objects: a
subset of what the caller may read, with the authorization filter inside the store query
as on every path. Their hits are tagged with the reference they came through and
interleaved with the first pass by score (each search's RRF scores are on one scale: rank r
of either list scores 1/(k + r)), so the best passages of a referenced document take the
places of the first pass's weakest hits.

Kind salience. Each reference the traversal read scales the scores of hits in the
documents at its ends (multiplied, then kept within [0.5, 1.5]) before the merged list is
cut to the limit:

==============  ==================  ==================
kind            on the target       on the source
==============  ==================  ==================
Citation        1.0                 1.0
CrossReference  1.05                1.05
DerivedFrom     1.2                 1.0
Supersedes      0.8                 1.1
BuildsOn        1.15                1.0
Contradicts     1.1                 1.1
UpdateOf        0.8                 1.1
SupportedBy     1.1                 1.0
Bookmark        1.0                 1.0
==============  ==================  ==================

So a superseded or outdated document ranks below the one that replaced it, and a document
others derive from or build upon ranks higher.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from affidavit.authz.tuples import doc_object
from affidavit.records import DOCUMENT, AuthzContext, Reference
from affidavit.references.access import ReadableEnds
from affidavit.retrieval.hybrid import HybridHit
from affidavit.store.protocol import Store

MAX_DOCUMENTS_PER_HOP = 50
MAX_REFERENCES = 200
MAX_DEPTH = 5

SALIENCE: dict[str, tuple[float, float]] = {
    "Citation": (1.0, 1.0), "CrossReference": (1.05, 1.05), "DerivedFrom": (1.2, 1.0),
    "Supersedes": (0.8, 1.1), "BuildsOn": (1.15, 1.0), "Contradicts": (1.1, 1.1),
    "UpdateOf": (0.8, 1.1), "SupportedBy": (1.1, 1.0), "Bookmark": (1.0, 1.0),
}
"""(effect on the target, effect on the source) of each kind, as multipliers."""
SALIENCE_BOUNDS = (0.5, 1.5)


class HitSearcher(Protocol):
    def search(self, authz: AuthzContext | None, query: str, *,
               limit: int) -> list[HybridHit]: ...


@dataclass
class Expansion:
    """What one traversal read and reached: documents, each with the reference that first
    reached it, and every reference read."""

    reached: dict[str, Reference] = field(default_factory=dict)
    references: list[Reference] = field(default_factory=list)
    hops: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"hops": self.hops, "references": [r.ref_id for r in self.references],
                "reached": {node: ref.ref_id for node, ref in sorted(self.reached.items())}}


def traverse(store: Store, authz: AuthzContext, seeds: Sequence[str], *, depth: int,
             per_hop: int = MAX_DOCUMENTS_PER_HOP,
             max_references: int = MAX_REFERENCES) -> Expansion:
    """Breadth-first over references from ``seeds``; see the module docstring."""
    expansion = Expansion()
    ends = ReadableEnds(store, authz)
    visited = set(seeds)
    read: set[str] = set()
    frontier = sorted(set(seeds))
    for _ in range(min(depth, MAX_DEPTH)):
        budget = max_references - len(expansion.references)
        if not frontier or budget <= 0:
            break
        expansion.hops += 1
        found = store.references_touching(authz.tenant, frontier, direction="both",
                                          labels=authz.granted_labels, limit=budget,
                                          viewer=authz.principal)
        reached: list[str] = []
        for reference in found:
            # A reference read in an earlier hop (the way back along a cycle) is not new.
            if reference.ref_id in read or not ends.reference(reference):
                continue
            read.add(reference.ref_id)
            expansion.references.append(reference)
            for node in _document_ends(reference):
                if node in visited or len(reached) >= per_hop or not ends.document(node):
                    continue
                visited.add(node)
                reached.append(node)
                expansion.reached[node] = reference
        frontier = sorted(reached)
    return expansion


def _document_ends(reference: Reference) -> list[str]:
    if reference.source_type == DOCUMENT:
        return [reference.source_id, reference.target_id]
    return [reference.target_id]


def salience(node_id: str, references: Sequence[Reference]) -> float:
    """The product of the kind effects of ``references`` on ``node_id``, bounded."""
    factor = 1.0
    for r in references:
        on_target, on_source = SALIENCE.get(r.kind, (1.0, 1.0))
        if r.target_id == node_id:
            factor *= on_target
        if r.source_type == DOCUMENT and r.source_id == node_id:
            factor *= on_source
    low, high = SALIENCE_BOUNDS
    return min(high, max(low, factor))


def expand_hits(store: Store, searcher: HitSearcher, authz: AuthzContext, query: str,
                first_pass: Sequence[HybridHit], *, depth: int,
                limit: int) -> tuple[list[HybridHit], Expansion, dict[str, Reference]]:
    """The first pass merged with hits from documents reached through references, scaled by
    kind salience, best ``limit`` first; and which hit came through which reference."""
    seeds = sorted({h.chunk.node_id for h in first_pass})
    expansion = traverse(store, authz, seeds, depth=depth)
    via: dict[str, Reference] = {}
    extra: list[HybridHit] = []
    if expansion.reached:
        narrowed = replace(authz, tokens=frozenset(doc_object(n) for n in expansion.reached))
        for hit in searcher.search(narrowed, query, limit=limit):
            if hit.chunk.node_id in expansion.reached:
                extra.append(hit)
                via[hit.chunk.chunk_id] = expansion.reached[hit.chunk.node_id]
    merged = [replace(h, score=h.score * salience(h.chunk.node_id, expansion.references))
              for h in [*first_pass, *extra]]
    merged.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    kept = [replace(h, fused_rank=rank) for rank, h in enumerate(merged[:limit], start=1)]
    return kept, expansion, {cid: r for cid, r in via.items()
                             if any(h.chunk.chunk_id == cid for h in kept)}
