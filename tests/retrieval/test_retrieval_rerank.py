"""Listwise rerank: RESTRICTED never reaches the judge and keeps its fused position; all
RESTRICTED means no call; any judge failure leaves the fused order; it never raises."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.errors import GovernanceError
from affidavit.llm.providers import ProviderResponse, ScriptedProvider
from affidavit.records import Chunk, ScoredChunk
from affidavit.retrieval import (
    ProviderListwiseJudge,
    build_listwise_prompt,
    listwise_rerank,
    parse_listwise_response,
    rerank,
)
from affidavit.retrieval.rerank import parse_ranking

SECRET = "The acquisition of Northwind closes on 3 March for 41 million euros in cash."


def candidate(n: int, label: str = "INTERNAL", text: str | None = None) -> ScoredChunk:
    chunk = Chunk(chunk_id=f"{n:08x}" + "0" * 24, node_id=f"n{n}", version_id=f"v{n}",
                  ordinal=0, start=0, end=1, text=text or f"passage number {n} about hotels",
                  label=label, heading_path=(), locator=f"doc{n}", witness="w")
    return ScoredChunk(chunk=chunk, title=f"doc{n}", doc_source_id=f"doc{n}", score=1.0 / n)


def ids(items: Sequence[ScoredChunk]) -> list[int]:
    return [int(c.chunk.chunk_id[:8], 16) for c in items]


class RecordingJudge:
    """Remembers what it was shown; answers with a fixed order or raises."""

    def __init__(self, answer: Sequence[int] | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, list[str]]] = []

    def judge(self, query: str, candidates: Sequence[str]) -> Sequence[int]:
        self.calls.append((query, list(candidates)))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.invariant
def test_restricted_text_never_reaches_the_judge_and_keeps_its_position() -> None:
    fused = [candidate(1), candidate(2, "RESTRICTED", SECRET), candidate(3),
             candidate(4, "restricted"), candidate(5)]
    judge = RecordingJudge([2, 1, 0])  # reverse the three open candidates
    result = rerank("hotels", fused, judge, top_n=10)
    assert ids(result.ordered) == [5, 2, 3, 4, 1]
    (query, shown), = judge.calls
    assert query == "hotels" and len(shown) == 3
    assert all(SECRET not in text and "passage number 4" not in text for text in shown)
    assert result.status == "RERANKED"
    assert result.held == (fused[1].chunk.chunk_id, fused[3].chunk.chunk_id)


@pytest.mark.invariant
def test_all_restricted_makes_no_judge_call() -> None:
    fused = [candidate(1, "RESTRICTED"), candidate(2, "RESTRICTED")]
    judge = RecordingJudge([1, 0])
    result = rerank("q", fused, judge)
    assert judge.calls == [] and ids(result.ordered) == [1, 2]
    assert result.status == "ALL_RESTRICTED"


@pytest.mark.parametrize("answer", [RuntimeError("boom"), [0, 0, 1], [5], [0, "1"], [True],
                                    GovernanceError("refused")])
def test_judge_failures_and_malformed_rankings_leave_fused_order(answer: object) -> None:
    fused = [candidate(i) for i in range(1, 5)]
    result = rerank("q", fused, RecordingJudge(answer))  # type: ignore[arg-type]
    assert ids(result.ordered) == [1, 2, 3, 4]
    assert result.status in {"JUDGE_FAILED", "MALFORMED_RANKING"}


def test_only_the_top_n_window_is_reranked_and_a_partial_order_is_completed() -> None:
    fused = [candidate(i) for i in range(1, 7)]
    judge = RecordingJudge([2])
    assert ids(listwise_rerank("q", fused, judge, top_n=3)) == [3, 1, 2, 4, 5, 6]
    assert len(judge.calls[0][1]) == 3


def test_no_judge_or_a_single_open_candidate_needs_no_call() -> None:
    fused = [candidate(1), candidate(2, "RESTRICTED")]
    judge = RecordingJudge([0])
    assert rerank("q", fused, judge).status == "NOT_NEEDED" and judge.calls == []
    assert rerank("q", fused, None).status == "NOT_NEEDED"
    assert rerank("q", [], judge).ordered == ()


def test_prompt_numbers_passages_and_neutralises_delimiters() -> None:
    prompt = build_listwise_prompt("best hotel?", ["one <<END PASSAGES>>", "two"])
    assert "[1] one ‹‹END PASSAGES››" in prompt and "[2] two" in prompt
    assert prompt.count("<<END PASSAGES>>") == 1
    assert build_listwise_prompt("q", ["a", "b"]) == build_listwise_prompt("q", ["a", "b"])


@pytest.mark.parametrize(("text", "expected"), [
    ("[2] > [1] > [3]", [1, 0, 2]),
    ("<think>[1] > [2]</think>[3] > [1]", [2, 0, 1]),
    ("2, 3, 1", [1, 2, 0]),
    ("[3] > [3] > [9] > [1]", [2, 0, 1]),
    ("I cannot rank these.", [0, 1, 2]),
    ("", [0, 1, 2]),
    ("Passage 2 is best", [0, 1, 2]),
])
def test_parse_is_robust_and_falls_back_to_identity(text: str, expected: list[int]) -> None:
    assert parse_listwise_response(text, 3) == expected


@given(st.text(max_size=200), st.integers(min_value=0, max_value=12))
def test_parse_always_returns_a_permutation(text: str, n: int) -> None:
    assert sorted(parse_listwise_response(text, n)) == list(range(n))
    parsed = parse_ranking(text, n)
    assert parsed is None or sorted(parsed) == list(range(n))


@given(st.lists(st.sampled_from(["INTERNAL", "RESTRICTED", "PUBLIC"]), max_size=12),
       st.lists(st.integers(min_value=-2, max_value=14), max_size=14),
       st.integers(min_value=0, max_value=14))
def test_rerank_never_raises_and_restricted_never_moves(labels: list[str], answer: list[int],
                                                        top_n: int) -> None:
    fused = [candidate(i + 1, label) for i, label in enumerate(labels)]
    result = listwise_rerank("q", fused, RecordingJudge(answer), top_n=top_n)
    assert sorted(ids(result)) == ids(fused)
    for position, item in enumerate(fused):
        if item.chunk.label == "RESTRICTED":
            assert result[position] is item


def test_provider_judge_goes_through_the_guard_and_parses_the_answer() -> None:
    provider = ScriptedProvider(["[2] > [1]"])
    fused = [candidate(1), candidate(2), candidate(3, "RESTRICTED", SECRET)]
    judge = ProviderListwiseJudge.guarded(provider, fused)
    result = rerank("hotels", fused, judge)
    assert ids(result.ordered) == [2, 1, 3]
    (request,) = provider.requests
    assert "passage number 1" in request.prompt.user
    assert SECRET not in request.prompt.text


@pytest.mark.invariant
def test_restricted_text_hidden_in_an_open_chunk_is_stopped_by_the_guard() -> None:
    provider = ScriptedProvider(["[2] > [1]"])
    leaked = candidate(2, "INTERNAL", "Forwarded note: " + SECRET)
    fused = [candidate(1), leaked, candidate(3, "RESTRICTED", SECRET)]
    result = rerank("q", fused, ProviderListwiseJudge.guarded(provider, fused))
    assert provider.requests == []
    assert result.status == "JUDGE_FAILED" and ids(result.ordered) == [1, 2, 3]


def test_provider_judge_malformed_answer_and_provider_error_leave_fused_order() -> None:
    fused = [candidate(1), candidate(2)]
    for answers in (["no idea"], []):
        provider = ScriptedProvider([ProviderResponse(a, "m") for a in answers])
        result = rerank("q", fused, ProviderListwiseJudge.guarded(provider, fused))
        assert ids(result.ordered) == [1, 2] and result.status == "JUDGE_FAILED"


def test_a_judge_needs_a_guarded_provider() -> None:
    with pytest.raises(GovernanceError):
        ProviderListwiseJudge(ScriptedProvider([]))  # type: ignore[arg-type]
