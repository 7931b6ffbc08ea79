"""Stage E: the tokenizer and BM25 scoring (pure functions), the in-memory governed index,
the embedding backends and step of the vector channel, and the geometric boundary.

The names below are imported on first use (PEP 562), so that a command using only the
tokenizer does not load numpy or the HTTP client with the vector backends.
"""

from typing import TYPE_CHECKING

from affidavit.util.lazy import lazy_exports

if TYPE_CHECKING:
    from affidavit.index.backends import BACKENDS, make_backend
    from affidavit.index.bm25 import (
        DEFAULT_PARAMS,
        Bm25Params,
        bm25_scores,
        document_frequencies,
        document_score,
        idf,
        term_frequencies,
        term_weight,
    )
    from affidavit.index.boundary import (
        DEGRADED_BOUNDARY,
        Boundary,
        boundary_record,
        compute_boundary,
        corpus_boundary,
        ledoit_wolf,
        plausibility,
    )
    from affidavit.index.embed import EmbedReport, embed_missing, embed_query
    from affidavit.index.memory import MemoryIndex, TenantIndex, TenantVectors
    from affidavit.index.minilm import MiniLMBackend
    from affidavit.index.openai_embeddings import OpenAIEmbeddingBackend
    from affidavit.index.snapshot import IndexSnapshot, SnapshotSource, SQLiteSnapshotSource
    from affidavit.index.vectors import EmbeddingBackend, HashEmbeddingBackend

_EXPORTS = {
    "DEFAULT_PARAMS": "bm25",
    "Bm25Params": "bm25",
    "bm25_scores": "bm25",
    "document_frequencies": "bm25",
    "document_score": "bm25",
    "idf": "bm25",
    "term_frequencies": "bm25",
    "term_weight": "bm25",
    "DEGRADED_BOUNDARY": "boundary",
    "Boundary": "boundary",
    "boundary_record": "boundary",
    "compute_boundary": "boundary",
    "corpus_boundary": "boundary",
    "ledoit_wolf": "boundary",
    "plausibility": "boundary",
    "EmbedReport": "embed",
    "embed_missing": "embed",
    "embed_query": "embed",
    "MemoryIndex": "memory",
    "TenantIndex": "memory",
    "TenantVectors": "memory",
    "MiniLMBackend": "minilm",
    "OpenAIEmbeddingBackend": "openai_embeddings",
    "IndexSnapshot": "snapshot",
    "SQLiteSnapshotSource": "snapshot",
    "SnapshotSource": "snapshot",
    "BACKENDS": "backends",
    "EmbeddingBackend": "vectors",
    "HashEmbeddingBackend": "vectors",
    "make_backend": "backends",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# Only the exported names stay public.
del TYPE_CHECKING, lazy_exports


__all__ = [
    "BACKENDS",
    "DEFAULT_PARAMS",
    "DEGRADED_BOUNDARY",
    "Bm25Params",
    "Boundary",
    "EmbedReport",
    "EmbeddingBackend",
    "HashEmbeddingBackend",
    "IndexSnapshot",
    "MemoryIndex",
    "MiniLMBackend",
    "OpenAIEmbeddingBackend",
    "SQLiteSnapshotSource",
    "SnapshotSource",
    "TenantIndex",
    "TenantVectors",
    "bm25_scores",
    "boundary_record",
    "compute_boundary",
    "corpus_boundary",
    "document_frequencies",
    "document_score",
    "embed_missing",
    "embed_query",
    "idf",
    "ledoit_wolf",
    "make_backend",
    "plausibility",
    "term_frequencies",
    "term_weight",
]
