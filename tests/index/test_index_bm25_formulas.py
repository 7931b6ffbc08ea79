"""BM25 building blocks, checked against numbers worked out by hand."""

from __future__ import annotations

import math

import pytest

from affidavit.index import (
    DEFAULT_PARAMS,
    Bm25Params,
    bm25_scores,
    document_frequencies,
    document_score,
    idf,
    term_frequencies,
    term_weight,
)


def test_idf_lucene_formula() -> None:
    # N = 10, df = 2: ln(1 + 8.5 / 2.5) = ln(4.4)
    assert idf(10, 2) == pytest.approx(math.log(4.4), abs=1e-15)


def test_idf_is_positive_even_for_a_term_in_every_document() -> None:
    assert idf(5, 5) == pytest.approx(math.log(1 + 0.5 / 5.5))
    assert idf(5, 5) > 0


def test_idf_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="df"):
        idf(3, 4)
    with pytest.raises(ValueError, match="df"):
        idf(3, -1)


def test_term_weight_formula() -> None:
    # tf 3, |d| 8, avgdl 4: 3 / (3 + 1.5 * (0.25 + 0.75 * 2)) = 3 / 5.625
    assert term_weight(3, 8, 4.0, k1=1.5, b=0.75) == pytest.approx(3 / 5.625, abs=1e-15)
    assert term_weight(0, 8, 4.0, k1=1.5, b=0.75) == 0.0


def test_term_weight_without_length_normalisation() -> None:
    assert term_weight(2, 100, 1.0, k1=1.0, b=0.0) == pytest.approx(2 / 3)


def test_term_weight_needs_a_positive_average_when_a_term_occurs() -> None:
    with pytest.raises(ValueError, match="average"):
        term_weight(1, 0, 0.0, k1=1.5, b=0.75)


def test_hand_worked_three_document_corpus() -> None:
    docs = [["a", "b"], ["b", "c", "c"], ["d"]]
    # avgdl = 2; c: df 1 -> idf ln(1 + 2.5/1.5); in doc 2 tf 2, |d| 3
    expected_c = math.log(1 + 2.5 / 1.5) * 2 / (2 + 1.5 * (0.25 + 0.75 * 1.5))
    assert bm25_scores(["c"], docs) == pytest.approx([0.0, expected_c, 0.0], abs=1e-12)


def test_unknown_query_terms_and_empty_corpus_score_zero() -> None:
    assert bm25_scores(["zzz"], [["a"], ["b"]]) == [0.0, 0.0]
    assert bm25_scores(["a"], []) == []
    assert bm25_scores(["a"], [[], []]) == [0.0, 0.0]
    assert bm25_scores([], [["a"]]) == [0.0]


def test_document_score_matches_bm25_scores() -> None:
    docs = [["x", "y", "y"], ["y"], ["z", "x"]]
    dfs = document_frequencies(docs)
    for index, tokens in enumerate(docs):
        score = document_score(
            ["x", "y"],
            term_frequencies(tokens),
            len(tokens),
            doc_freqs=dfs,
            n_docs=3,
            avg_doc_len=2.0,
            params=DEFAULT_PARAMS,
        )
        assert score == pytest.approx(bm25_scores(["x", "y"], docs)[index], abs=1e-15)


def test_term_frequencies_have_sorted_keys() -> None:
    frequencies = term_frequencies(["b", "a", "b", "数", "a", "b"])
    assert list(frequencies) == ["a", "b", "数"]
    assert frequencies == {"a": 2, "b": 3, "数": 1}


def test_document_frequencies_count_documents_not_occurrences() -> None:
    assert document_frequencies([["a", "a"], ["a", "b"], []]) == {"a": 2, "b": 1}


def test_params_defaults_and_validation() -> None:
    assert Bm25Params() == Bm25Params(k1=1.5, b=0.75)
    with pytest.raises(ValueError, match="b must"):
        Bm25Params(b=1.5)
    with pytest.raises(ValueError, match="k1 must"):
        Bm25Params(k1=-1.0)
    with pytest.raises(ValueError, match="k1 must"):
        Bm25Params(k1=math.nan)
