"""Stage E, the lexical core: the tokenizer and BM25 scoring, as pure functions."""

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
from affidavit.index.tokenize import TOKENIZER_VERSION, Tokenizer

__all__ = [
    "DEFAULT_PARAMS",
    "TOKENIZER_VERSION",
    "Bm25Params",
    "Tokenizer",
    "bm25_scores",
    "document_frequencies",
    "document_score",
    "idf",
    "term_frequencies",
    "term_weight",
]
