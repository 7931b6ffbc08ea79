"""An emitted answer's citations as Citation references (spec 004, "Post-Processing").

Each valid citation (its id was in the prompt) of each claim becomes one reference: source
the answer's ledger record, target the cited document and chunk, label the first
:data:`~affidavit.records.LABEL_CHARS` characters of the cited text, reason the
citing sentence, classification the cited chunk's label (and so the label of that text too:
the asker's own sentence, from evidence the asker was shown). They are written by the ledger
append, in its transaction: no record without its references, and no reference without
its record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from affidavit.records import (
    CITATION,
    LABEL_CHARS,
    LEDGER_RECORD,
    Reference,
    ScoredChunk,
    stable_hash,
)


@dataclass(frozen=True)
class CitingClaim:
    """A claim's sentence and the prompt source ids it cites (already validated)."""

    index: int
    sentence: str
    cited_chunk_ids: tuple[str, ...]


@dataclass(frozen=True)
class CitationDrafts:
    """Citation references waiting for their ledger record's id and time."""

    claims: tuple[CitingClaim, ...]
    chunks: Mapping[str, ScoredChunk]
    principal: str

    def bind(self, record_id: str, created_at: str) -> list[Reference]:
        """The references of the record ``record_id``, in claim then citation order."""
        references: list[Reference] = []
        for claim in self.claims:
            for chunk_id in claim.cited_chunk_ids:
                cited = self.chunks[chunk_id].chunk
                page = cited.derived.page if cited.derived is not None else None
                detail = {"chunk_id": chunk_id, "page": page, "claim": claim.index}
                references.append(Reference(
                    ref_id="ref-" + stable_hash("citation", record_id, str(claim.index),
                                                chunk_id)[:20],
                    kind=CITATION, source_type=LEDGER_RECORD, source_id=record_id,
                    target_id=cited.node_id, target_chunk_id=chunk_id, location_type="Chunk",
                    location_detail=json.dumps(detail, sort_keys=True),
                    label=cited.text[:LABEL_CHARS], reason=claim.sentence,
                    classification=cited.label, created_by=self.principal,
                    created_at=created_at, text_label=cited.label))
        return references


NO_CITATIONS = CitationDrafts((), {}, "")


def citation_drafts(claims: Sequence[tuple[int, str, Sequence[str]]],
                    src_to_chunk: Mapping[str, str], shown: Sequence[ScoredChunk],
                    principal: str) -> CitationDrafts:
    """Drafts for ``claims`` given as (index, sentence, cited src ids); a src id not in
    ``src_to_chunk`` (not in the prompt) is no citation and makes no reference."""
    chunks = {c.chunk.chunk_id: c for c in shown}
    citing = tuple(
        CitingClaim(index, sentence, tuple(dict.fromkeys(
            src_to_chunk[s] for s in sources
            if s in src_to_chunk and src_to_chunk[s] in chunks)))
        for index, sentence, sources in claims)
    return CitationDrafts(tuple(c for c in citing if c.cited_chunk_ids), chunks, principal)
