"""The RESTRICTED guard in front of every provider."""

from __future__ import annotations

import pytest

from affidavit.errors import GovernanceError, ProviderError, RestrictedContentError
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.guard import GuardedProvider, RestrictedGuard
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest, ProviderResponse

SECRET = ("The board rated the acquisition of Northwind as high risk. "
          "Executive bonuses will be cut by a third next year.")


class NeverCalledProvider:
    """Records calls and fails the test if a request ever reaches it."""

    name = "never"
    model_id = "never-v1"

    def __init__(self) -> None:
        self.calls: list[ProviderRequest] = []

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        self.calls.append(request)
        raise AssertionError("a RESTRICTED request reached the provider")


def _item(src: str, text: str, label: str = "INTERNAL") -> EvidenceItem:
    return EvidenceItem(src, src + "0" * 56, "node", "Doc", "", text, label)


def _request(items: list[EvidenceItem],
             question: str = "What did the board decide?") -> ProviderRequest:
    return ProviderRequest(compile_prompt(question, items, role="authoritative"))


@pytest.mark.invariant
@pytest.mark.parametrize(
    "items",
    [
        [_item("a1b2c3d4", "Quarterly results."), _item("b2c3d4e5", "Board notes.", "RESTRICTED")],
        [_item("a1b2c3d4", "Minutes.", "restricted")],
        [_item("a1b2c3d4", "Public intro. " + SECRET + " Public outro.")],
        [_item("a1b2c3d4", "Copied: the BOARD rated the   acquisition of\nnorthwind as HIGH")],
        [_item("a1b2c3d4", "Note: executive bonuses will be cut by a third next year")],
    ],
    ids=["label", "label-lowercase", "hidden-in-other-item", "case-and-spacing", "second-sentence"],
)
def test_invariant_restricted_never_reaches_a_provider(items: list[EvidenceItem]) -> None:
    inner = NeverCalledProvider()
    provider = GuardedProvider(inner, RestrictedGuard([SECRET]))
    with pytest.raises(RestrictedContentError):
        provider.generate(_request(items))
    assert inner.calls == []


@pytest.mark.invariant
def test_restricted_text_in_the_question_is_refused_too() -> None:
    inner = NeverCalledProvider()
    provider = GuardedProvider(inner, RestrictedGuard([SECRET]))
    question = "Is it true that executive bonuses will be cut by a third next year?"
    with pytest.raises(RestrictedContentError):
        provider.generate(_request([_item("a1b2c3d4", "Pay policy.")], question))
    assert inner.calls == []


def test_long_restricted_sentence_is_caught_from_a_partial_copy() -> None:
    long_secret = ("Project Falcon will close the Rotterdam plant in the third quarter and move "
                   "production to the new site after the works council has been consulted.")
    guard = RestrictedGuard([long_secret])
    excerpt = "close the Rotterdam plant in the third quarter and move production to the new"
    with pytest.raises(RestrictedContentError):
        guard.check(_request([_item("a1b2c3d4", f"Rumour: {excerpt}.")]))


def test_clean_requests_pass_through() -> None:
    guard = RestrictedGuard([SECRET, "short one"])
    provider = GuardedProvider(ExtractiveProvider(), guard)
    response = provider.generate(_request([_item("a1b2c3d4", "The board approved the budget.")]))
    assert response.text == "The board approved the budget. [src:a1b2c3d4]"
    assert provider.name == "extractive" and provider.model_id == "extractive-v2"
    assert guard.fragment_count > 0


def test_short_restricted_texts_are_not_fragments() -> None:
    assert RestrictedGuard(["Falcon.", "Too short here."]).fragment_count == 0


def test_tampered_prompt_text_is_refused() -> None:
    request = _request([_item("a1b2c3d4", "Fine text.")])
    from dataclasses import replace

    forged = ProviderRequest(replace(request.prompt, text=request.prompt.text + "\nextra"))
    with pytest.raises(GovernanceError):
        RestrictedGuard([]).check(forged)


def test_guarded_provider_cannot_be_built_without_a_guard_or_bypassed() -> None:
    with pytest.raises(GovernanceError):
        GuardedProvider(ExtractiveProvider(), None)  # type: ignore[arg-type]
    provider = GuardedProvider(NeverCalledProvider(), RestrictedGuard([]))
    assert not hasattr(provider, "__dict__")
    assert not any(name.endswith("inner") for name in dir(provider) if not name.startswith("_"))
    with pytest.raises(AttributeError):
        provider.inner = ExtractiveProvider()  # type: ignore[attr-defined]


def test_provider_faults_become_provider_errors() -> None:
    class Broken:
        name = "broken"
        model_id = "broken-v1"

        def generate(self, request: ProviderRequest) -> ProviderResponse:
            raise TimeoutError("upstream")

    provider = GuardedProvider(Broken(), RestrictedGuard([]))
    with pytest.raises(ProviderError):
        provider.generate(_request([_item("a1b2c3d4", "Fine text.")]))
