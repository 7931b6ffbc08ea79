"""Stage E: the tokenizer and BM25 scoring (pure functions), the in-memory governed index,
the embedding backends and step of the vector channel, and the geometric boundary."""

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
from affidavit.index.stopwords import BUILTIN_STOP_WORDS, expand_stop_words
from affidavit.index.tokenize import TOKENIZER_VERSION, Tokenizer
from affidavit.index.vectors import (
    BACKENDS,
    EmbeddingBackend,
    HashEmbeddingBackend,
    make_backend,
)

__all__ = [
    "BACKENDS",
    "BUILTIN_STOP_WORDS",
    "DEFAULT_PARAMS",
    "DEGRADED_BOUNDARY",
    "TOKENIZER_VERSION",
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
    "Tokenizer",
    "bm25_scores",
    "boundary_record",
    "compute_boundary",
    "corpus_boundary",
    "document_frequencies",
    "document_score",
    "embed_missing",
    "embed_query",
    "expand_stop_words",
    "idf",
    "ledoit_wolf",
    "make_backend",
    "plausibility",
    "term_frequencies",
    "term_weight",
]
