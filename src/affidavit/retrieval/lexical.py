"""Governed lexical retrieval: BM25 with the authz filter inside the scoring query."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from affidavit.config.settings import LexicalSettings
from affidavit.errors import AuthorizationError
from affidavit.index import idf
from affidavit.records import AuthzContext, ScoredChunk
from affidavit.store.protocol import LexicalHit, Store
from affidavit.text.tokenize import Tokenizer

if TYPE_CHECKING:  # the in-memory index (numpy) is given by a long-running process only
    from affidavit.index.memory import MemoryIndex


@dataclass(frozen=True)
class LexicalRetriever:
    """Scores a query against one tenant's head chunks that the caller may read."""

    store: Store
    settings: LexicalSettings
    tokenizer: Tokenizer
    # The accelerated in-memory index; None scores in SQL inside the store. Same scores.
    memory: MemoryIndex | None = None

    @classmethod
    def from_settings(cls, store: Store, settings: LexicalSettings, *,
                      memory: MemoryIndex | None = None) -> LexicalRetriever:
        return cls(store, settings, Tokenizer.from_settings(settings), memory)

    def search(self, authz: AuthzContext | None, query: str, *, limit: int) -> list[ScoredChunk]:
        """Top ``limit`` readable chunks by BM25; ties broken by chunk id."""
        if authz is None:
            raise AuthorizationError("no authorization context: retrieval refused")
        terms = sorted(set(self.tokenizer.tokenize(query)))
        if not terms:
            return []
        hits = self.hits(authz, terms, limit=limit)
        records = {r.chunk.chunk_id: r for r in
                   self.store.get_chunks(authz, [h.chunk_id for h in hits])}
        out: list[ScoredChunk] = []
        for rank, hit in enumerate(hits, start=1):
            record = records.get(hit.chunk_id)
            if record is None:  # vanished between the two reads: never show it
                continue
            out.append(ScoredChunk(chunk=record.chunk, title=record.title,
                                   doc_source_id=record.source_id, score=hit.score,
                                   lexical_rank=rank, lexical_score=hit.score))
        return out

    def hits(self, authz: AuthzContext, terms: list[str], *, limit: int) -> list[LexicalHit]:
        """Chunk ids and BM25 scores, authz applied inside scoring (memory or SQL)."""
        if self.memory is not None:
            return self.memory.lexical_search(authz, terms, k1=self.settings.k1,
                                              b=self.settings.b, limit=limit)
        stats = self.store.lexical_stats(authz.tenant)
        if stats.n_chunks == 0:
            return []
        dfs = self.store.document_frequencies(authz.tenant, terms)
        # Statistics are the tenant's, not the caller's: the filter removes, never reorders.
        term_idf = {t: idf(stats.n_chunks, df) for t, df in dfs.items() if df > 0}
        return self.store.lexical_search(authz, term_idf, k1=self.settings.k1,
                                         b=self.settings.b, avg_length=stats.avg_length,
                                         limit=limit,
                                         postings=sum(dfs[t] for t in term_idf))
