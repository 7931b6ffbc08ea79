"""Okapi BM25 as pure functions over token lists; no I/O, no index structure.

The variant is the one ``bm25s`` computes with ``method="lucene"``, so that our scores can be
checked against it token for token:

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    weight(t,d) = tf / (tf + k1 * (1 - b + b * |d| / avgdl))
    score(q,d)  = sum over the query's tokens t of idf(t) * weight(t,d)

The idf never goes negative, and the tf part has no ``(k1 + 1)`` factor (it scales every
score alike and does not change a ranking).

Repeated query tokens: each occurrence contributes, as in ``bm25s`` (and as in Lucene, where
a repeated term is a repeated clause). ``"policy policy"`` weighs the term twice. Callers
that want a term counted once de-duplicate the query before scoring.
Query tokens the corpus does not contain contribute nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_K1 = 1.5
DEFAULT_B = 0.75


@dataclass(frozen=True)
class Bm25Params:
    """The two free parameters of BM25: tf saturation ``k1`` and length normalisation ``b``."""

    k1: float = DEFAULT_K1
    b: float = DEFAULT_B

    def __post_init__(self) -> None:
        if not (self.k1 >= 0 and math.isfinite(self.k1)):
            raise ValueError(f"k1 must be a finite number >= 0, not {self.k1!r}")
        if not 0 <= self.b <= 1:
            raise ValueError(f"b must be in [0, 1], not {self.b!r}")


DEFAULT_PARAMS = Bm25Params()


def idf(n_docs: int, df: int) -> float:
    """Inverse document frequency of a term found in ``df`` of ``n_docs`` documents."""
    if n_docs < 0 or not 0 <= df <= n_docs:
        raise ValueError(f"need 0 <= df <= n_docs, got df={df}, n_docs={n_docs}")
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def term_weight(tf: int, doc_len: int, avg_doc_len: float, *, k1: float, b: float) -> float:
    """The saturated, length-normalised term-frequency part of BM25 (0 when ``tf`` is 0)."""
    if tf <= 0:
        return 0.0
    if avg_doc_len <= 0:
        raise ValueError("a term occurs, so the average document length must be positive")
    return tf / (tf + k1 * (1.0 - b + b * doc_len / avg_doc_len))


def term_frequencies(tokens: Iterable[str]) -> dict[str, int]:
    """Occurrences of each token, keys sorted (the form postings are written in)."""
    return dict(sorted(Counter(tokens).items()))


def document_frequencies(docs_tokens: Iterable[Iterable[str]]) -> dict[str, int]:
    """In how many documents each token occurs, keys sorted."""
    counts: Counter[str] = Counter()
    for tokens in docs_tokens:
        counts.update(set(tokens))
    return dict(sorted(counts.items()))


def document_score(
    query_tokens: Sequence[str],
    doc_term_freqs: Mapping[str, int],
    doc_len: int,
    *,
    doc_freqs: Mapping[str, int],
    n_docs: int,
    avg_doc_len: float,
    params: Bm25Params = DEFAULT_PARAMS,
) -> float:
    """BM25 of one document from its term frequencies and the corpus statistics."""
    score = 0.0
    for token in query_tokens:
        tf = doc_term_freqs.get(token, 0)
        if tf:
            weight = term_weight(tf, doc_len, avg_doc_len, k1=params.k1, b=params.b)
            score += idf(n_docs, doc_freqs[token]) * weight
    return score


def bm25_scores(
    query_tokens: Sequence[str],
    docs_tokens: Sequence[Sequence[str]],
    *,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> list[float]:
    """Score every document of a small in-memory corpus; the reference the index must equal."""
    params = Bm25Params(k1=k1, b=b)
    n_docs = len(docs_tokens)
    if n_docs == 0:
        return []
    lengths = [len(tokens) for tokens in docs_tokens]
    avg_doc_len = sum(lengths) / n_docs
    doc_freqs = document_frequencies(docs_tokens)
    return [
        document_score(
            query_tokens,
            Counter(tokens),
            length,
            doc_freqs=doc_freqs,
            n_docs=n_docs,
            avg_doc_len=avg_doc_len,
            params=params,
        )
        for tokens, length in zip(docs_tokens, lengths, strict=True)
    ]
