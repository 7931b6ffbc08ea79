"""Providers: the extractive default, think-block stripping, the scripted double."""

from __future__ import annotations

import pytest

from affidavit.errors import InputRejected, ProviderError
from affidavit.llm.claims import extract_claims
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.providers import (
    ExtractiveProvider,
    LLMProvider,
    ProviderRequest,
    ProviderResponse,
    ScriptedProvider,
    strip_think_blocks,
)


def _item(src: str, text: str) -> EvidenceItem:
    return EvidenceItem(src, src + "0" * 56, "node", "Doc", "", text, "INTERNAL")


EVIDENCE = [
    _item("a1b2c3d4", "The office opens at nine. Access reviews happen quarterly for all "
                      "production systems."),
    _item("b2c3d4e5", "Each access review is signed by the system owner. Lunch is at noon."),
    _item("c3d4e5f6", "Backups are encrypted."),
]


def _request(question: str, evidence: list[EvidenceItem] = EVIDENCE,
             max_sentences: int = 4) -> ProviderRequest:
    prompt = compile_prompt(question, evidence, role="authoritative")
    return ProviderRequest(prompt, max_sentences=max_sentences)


def test_extractive_answers_with_cited_evidence_sentences_in_evidence_order() -> None:
    response = ExtractiveProvider().generate(_request("How often are access reviews done?"))
    assert response.text == (
        "Access reviews happen quarterly for all production systems. [src:a1b2c3d4] "
        "Each access review is signed by the system owner. [src:b2c3d4e5]"
    )
    assert response.model_id == "extractive-v2" and response.token_logprobs is None
    claims = extract_claims(response.text)
    assert [c.citations for c in claims] == [("a1b2c3d4",), ("b2c3d4e5",)]


def test_extractive_respects_the_sentence_limit_and_prefers_higher_overlap() -> None:
    response = ExtractiveProvider(max_sentences=1).generate(
        _request("Who signs the access review?"))
    assert response.text == "Each access review is signed by the system owner. [src:b2c3d4e5]"
    limited = ExtractiveProvider().generate(_request("access review", max_sentences=1))
    assert limited.text.count("[src:") == 1


def test_extractive_ties_break_by_evidence_order_then_position() -> None:
    evidence = [_item("b2c3d4e5", "Encryption is used. Encryption is mandatory."),
                _item("a1b2c3d4", "Encryption everywhere.")]
    response = ExtractiveProvider(max_sentences=2).generate(_request("encryption", evidence))
    assert response.text == (
        "Encryption is used. [src:b2c3d4e5] Encryption is mandatory. [src:b2c3d4e5]")


def test_extractive_gives_empty_answer_without_overlap() -> None:
    assert ExtractiveProvider().generate(_request("What is the parking policy?")).text == ""


def test_extractive_answers_chinese_by_bigrams() -> None:
    evidence = [_item("a1b2c3d4", "数据保留30天。办公室九点开门。")]
    response = ExtractiveProvider().generate(_request("数据保留多久？", evidence))
    assert response.text == "数据保留30天。 [src:a1b2c3d4]"


def test_extractive_never_repeats_tags_found_in_evidence_text() -> None:
    evidence = [_item("a1b2c3d4", "Backups are encrypted [src:deadbeef] nightly.")]
    response = ExtractiveProvider().generate(_request("Are backups encrypted?", evidence))
    assert response.text == "Backups are encrypted nightly. [src:a1b2c3d4]"


def test_extractive_is_deterministic() -> None:
    request = _request("access review owner production")
    provider = ExtractiveProvider()
    assert len({provider.generate(request).text for _ in range(5)}) == 1
    assert provider.generate(request) == ExtractiveProvider().generate(request)


def test_providers_satisfy_the_protocol() -> None:
    assert isinstance(ExtractiveProvider(), LLMProvider)
    assert isinstance(ScriptedProvider([]), LLMProvider)


def test_invalid_sentence_limits_are_rejected() -> None:
    with pytest.raises(InputRejected):
        ExtractiveProvider(max_sentences=0)
    with pytest.raises(InputRejected):
        _request("x", max_sentences=0)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("<think>plan the answer</think>The answer [src:a1b2c3d4].", "The answer [src:a1b2c3d4]."),
        ("A. <THINK>x\ny</Think> B.", "A.  B."),
        ("Final answer. <think>still thinking about", "Final answer."),
        ("reasoning that lost its opening tag</think>\nAnswer.", "Answer."),
        ("No reasoning here.", "No reasoning here."),
    ],
)
def test_strip_think_blocks(raw: str, clean: str) -> None:
    assert strip_think_blocks(raw) == clean


def test_scripted_provider_records_requests_and_runs_out() -> None:
    provider = ScriptedProvider(["first", ProviderResponse("second", "m", (-0.1,))])
    request = _request("access")
    assert provider.generate(request).text == "first"
    assert provider.generate(request).token_logprobs == (-0.1,)
    assert provider.requests == [request, request]
    with pytest.raises(ProviderError):
        provider.generate(request)
