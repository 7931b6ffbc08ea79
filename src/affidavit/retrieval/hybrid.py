"""Hybrid retrieval: lexical ∥ vector, both prefiltered by authz, fused with RRF.

For each query of the glossary rewrite (original first), the lexical channel (BM25) and,
when an embedding backend is configured, the vector channel (exact cosine) each rank the
chunks the caller may read; the filter is applied inside each channel by the store or the
in-memory index, never to a finished top-k. All rankings are fused with Reciprocal Rank
Fusion (ties by chunk id) and the best are read back, authz applied again (by the store, or
by the in-memory index's mask of the generation it scored).

A :class:`HybridHit` is a :class:`~affidavit.records.ScoredChunk` (so every gate takes it)
whose ``score`` is the fused score, with each channel's rank and score for ``--explain``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from affidavit.config.settings import Settings
from affidavit.errors import AuthorizationError
from affidavit.index.epochs import serving_epoch
from affidavit.observability.traces import AttributeValue, stage
from affidavit.records import AuthzContext, ScoredChunk
from affidavit.retrieval.fusion import rrf_fuse
from affidavit.retrieval.lexical import LexicalRetriever
from affidavit.retrieval.rewrite import GlossaryQueryRewriter
from affidavit.store.protocol import LexicalHit, Store, VectorHit
from affidavit.text.tokenize import Tokenizer

if TYPE_CHECKING:
    from affidavit.index.memory import MemoryIndex
    from affidavit.index.vectors import EmbeddingBackend


@dataclass(frozen=True)
class HybridHit(ScoredChunk):
    """A fused hit; channel ranks are the best over the rewritten queries (1-based)."""

    vector_rank: int | None = None
    vector_score: float | None = None
    fused_rank: int = 0
    queries: tuple[int, ...] = ()  # indexes of the rewritten queries that found it
    # Whether the vector channel's rankings were the exact top-k of the caller's readable
    # chunks (False where an approximate index answered); None without a vector channel.
    vector_exact: bool | None = None

    @property
    def fused_score(self) -> float:
        """The RRF score (also ``score``)."""
        return self.score

    def explain(self) -> dict[str, Any]:
        """Ranks and scores per channel and fused, for ``affidavit search --explain``."""
        return {"chunk_id": self.chunk.chunk_id, "fused_rank": self.fused_rank,
                "fused_score": self.score, "lexical_rank": self.lexical_rank,
                "lexical_score": self.lexical_score, "vector_rank": self.vector_rank,
                "vector_score": self.vector_score, "vector_exact": self.vector_exact,
                "queries": list(self.queries)}


@dataclass(frozen=True)
class ChannelRankings:
    """Every channel's ranking for every rewritten query (the input to fusion)."""

    queries: tuple[str, ...]
    lexical: tuple[tuple[LexicalHit, ...], ...]
    vector: tuple[tuple[VectorHit, ...], ...]

    def id_rankings(self) -> list[list[str]]:
        """Chunk-id lists in a fixed order: lexical per query, then vector per query."""
        return ([[h.chunk_id for h in hits] for hits in self.lexical]
                + [[h.chunk_id for h in hits] for hits in self.vector])


def _best(rankings: Sequence[Sequence[LexicalHit | VectorHit]]) -> dict[str, tuple[int, float]]:
    """chunk id -> (best rank, its score) over several rankings (first query wins ties)."""
    best: dict[str, tuple[int, float]] = {}
    for hits in rankings:
        for rank, hit in enumerate(hits, start=1):
            if hit.chunk_id not in best or rank < best[hit.chunk_id][0]:
                best[hit.chunk_id] = (rank, hit.score)
    return best


def channels_exact(rankings: Sequence[Sequence[VectorHit]]) -> bool:
    """Whether every vector ranking is the exact top-k (an empty ranking is exact)."""
    return all(hit.exact for hits in rankings for hit in hits)


def _found_by(channels: ChannelRankings) -> dict[str, tuple[int, ...]]:
    """chunk id -> indexes of the rewritten queries whose rankings (any channel) hold it."""
    found: dict[str, set[int]] = {}
    rankings: list[tuple[int, Sequence[LexicalHit | VectorHit]]] = [
        *enumerate(channels.lexical), *enumerate(channels.vector)]
    for query_index, hits in rankings:
        for hit in hits:
            found.setdefault(hit.chunk_id, set()).add(query_index)
    return {cid: tuple(sorted(q)) for cid, q in found.items()}


class HybridRetriever:
    """Governed hybrid search for one store and one set of settings."""

    def __init__(self, store: Store, settings: Settings, *,
                 backend: EmbeddingBackend | None = None, memory: MemoryIndex | None = None,
                 rewriter: GlossaryQueryRewriter | None = None) -> None:
        self.store = store
        self.settings = settings
        self.backend = backend
        self.memory = memory
        self.rewriter = rewriter or GlossaryQueryRewriter.from_settings(settings.retrieval)
        self.tokenizer = Tokenizer.from_settings(settings.lexical)
        self.lexical = LexicalRetriever(store, settings.lexical, self.tokenizer, memory)
        self._embedded_generation: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, store: Store, settings: Settings, *,
                      memory: MemoryIndex | None = None) -> HybridRetriever:
        """The retriever ``settings`` describe (backend from ``[vectors]``)."""
        # The vector backends (numpy, and a model or an HTTP client) are imported only when
        # a vector channel is configured: a lexical search never loads them.
        backend = None
        if settings.vectors.backend.strip().lower() != "none":
            from affidavit.index.backends import make_backend

            backend = make_backend(settings.vectors)
        return cls(store, settings, backend=backend, memory=memory)

    # ------------------------------------------------------------------ channels
    def lexical_hits(self, authz: AuthzContext, query: str, *, limit: int) -> list[LexicalHit]:
        """BM25 over the chunks ``authz`` may read; each distinct query term counted once."""
        terms = sorted(set(self.tokenizer.tokenize(query)))
        return self.lexical.hits(authz, terms, limit=limit) if terms else []

    def vector_hits(self, authz: AuthzContext, queries: Sequence[str], *,
                    limit: int) -> list[list[VectorHit]]:
        """Exact cosine over readable chunks, one ranking per query; none without a backend."""
        backend = self.backend
        if backend is None or not queries:
            return []
        self._ensure_vectors(authz.tenant, backend)
        matrix = backend.embed_texts(list(queries))
        out: list[list[VectorHit]] = []
        for row in matrix:
            vector = [float(x) for x in row]
            if self.memory is not None:
                out.append(self.memory.vector_search(authz, backend.model_id, vector,
                                                     limit=limit))
            else:
                out.append(self.store.vector_search(authz, backend.model_id, vector,
                                                    limit=limit))
        return out

    def _ensure_vectors(self, tenant: str, backend: EmbeddingBackend) -> None:
        """Lazy mode: embed what is missing, once per corpus generation."""
        if self.settings.vectors.compute != "lazy":
            return
        generation = self.store.corpus_generation(tenant)
        if self._embedded_generation.get(tenant) == generation:
            return
        from affidavit.index.embed import embed_missing

        with self._lock:
            # Only the declared embedding egress is sent; the rest stays lexical-only.
            embed_missing(self.store, tenant, backend, batch_size=self.settings.vectors.batch_size,
                          labels=self.settings.egress.embedding_labels,
                          label_epoch=serving_epoch(self.settings, tenant))
            self._embedded_generation[tenant] = generation

    def rankings(self, authz: AuthzContext | None, query: str, *, depth: int) -> ChannelRankings:
        """Each channel's top ``depth`` for each rewritten query."""
        if authz is None:
            raise AuthorizationError("no authorization context: retrieval refused")
        return self._rankings(authz, tuple(self.rewriter.rewrite(query)), depth=depth)

    def _rankings(self, authz: AuthzContext, queries: tuple[str, ...], *,
                  depth: int) -> ChannelRankings:
        # A retrieval span per channel (GenAI semantic conventions); counts, never terms.
        about: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.top_k": depth,
            "affidavit.queries": len(queries)}
        with stage("query.retrieve.lexical", about) as span:
            lexical = tuple(tuple(self.lexical_hits(authz, q, limit=depth)) for q in queries)
            span.set_attribute("affidavit.hits", sum(len(h) for h in lexical))
        vector: tuple[tuple[VectorHit, ...], ...] = ()
        if self.backend is not None:
            with stage("query.retrieve.vector", about) as span:
                vector = tuple(tuple(r) for r in self.vector_hits(authz, queries, limit=depth))
                span.set_attribute("affidavit.hits", sum(len(h) for h in vector))
                span.set_attribute("affidavit.vector.exact", channels_exact(vector))
        return ChannelRankings(queries, lexical, vector)

    # ------------------------------------------------------------------ search
    def search(self, authz: AuthzContext | None, query: str, *, limit: int,
               depth: int | None = None) -> list[HybridHit]:
        """The best ``limit`` readable chunks by RRF over all channels and rewrites."""
        if authz is None:
            raise AuthorizationError("no authorization context: retrieval refused")
        depth = depth or self.settings.retrieval.candidates
        queries = tuple(self.rewriter.rewrite(query))
        if len(queries) == 1 and self.backend is None:
            # One ranking: its fused order is its own (1 / (k + rank) falls with the rank),
            # so fusion can return nothing beyond its first ``limit``; ranking deeper only
            # made hits to throw away.
            depth = min(depth, limit)
        with (nullcontext() if self.memory is None else self.memory.pinned(authz.tenant)):
            channels = self._rankings(authz, queries, depth=depth)
            fused = rrf_fuse(channels.id_rankings(), k=self.settings.retrieval.rrf_k,
                             limit=limit)
            # Read back with authz applied again: by the store, or by the in-memory index's
            # mask for the generation its rankings were scored at (pinned for this search;
            # records kept per generation).
            reader = self.store if self.memory is None else self.memory
            records = {r.chunk.chunk_id: r for r in
                       reader.get_chunks(authz, [f.item_id for f in fused])}
        lexical, vector = _best(channels.lexical), _best(channels.vector)
        found = _found_by(channels)
        exact = channels_exact(channels.vector) if self.backend is not None else None
        hits: list[HybridHit] = []
        for item in fused:
            record = records.get(item.item_id)
            if record is None:  # vanished, or no longer readable: never show it
                continue
            lex, vec = lexical.get(item.item_id), vector.get(item.item_id)
            hits.append(HybridHit(
                chunk=record.chunk, title=record.title, doc_source_id=record.source_id,
                score=item.score, lexical_rank=lex[0] if lex else None,
                lexical_score=lex[1] if lex else None, vector_rank=vec[0] if vec else None,
                vector_score=vec[1] if vec else None, fused_rank=len(hits) + 1,
                queries=found.get(item.item_id, ()), vector_exact=exact))
        return hits
