"""Reciprocal Rank Fusion: 1 / (k + rank), ties broken by id, independent of input order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.retrieval import DEFAULT_RRF_K, rrf_fuse, rrf_scores


def test_scores_are_sums_of_reciprocal_ranks() -> None:
    scores = rrf_scores([["a", "b", "c"], ["b", "d"]], k=60)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["d"] == pytest.approx(1 / 62)
    assert DEFAULT_RRF_K == 60


def test_fused_order_and_ranks() -> None:
    fused = rrf_fuse([["a", "b", "c"], ["b", "d"]])
    assert [f.item_id for f in fused] == ["b", "a", "d", "c"]
    assert [f.rank for f in fused] == [1, 2, 3, 4]
    assert [f.item_id for f in rrf_fuse([["a", "b"]], limit=1)] == ["a"]


def test_ties_are_broken_by_id() -> None:
    fused = rrf_fuse([["z", "y"], ["y", "z"], ["m"], ["c"]])
    assert [f.item_id for f in fused] == ["y", "z", "c", "m"]


def test_a_repeat_within_one_ranking_counts_once_at_its_best_rank() -> None:
    assert rrf_scores([["a", "a", "b"]], k=0) == {"a": 1.0, "b": 1 / 3}


def test_negative_k_is_refused() -> None:
    with pytest.raises(ValueError):
        rrf_scores([["a"]], k=-1)


rankings = st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8, unique=True), max_size=4)


@given(rankings)
def test_fusion_does_not_depend_on_the_order_of_the_rankings(lists: list[list[str]]) -> None:
    forward = [(f.item_id, f.score) for f in rrf_fuse(lists)]
    backward = [(f.item_id, f.score) for f in rrf_fuse(list(reversed(lists)))]
    assert forward == backward


@given(st.lists(st.sampled_from("abcdefgh"), max_size=8, unique=True))
def test_one_ranking_fuses_to_itself(ranking: list[str]) -> None:
    assert [f.item_id for f in rrf_fuse([ranking])] == ranking
