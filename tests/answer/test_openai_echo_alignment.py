"""The openai provider checks, once per provider, that a server's echoed prompt
log-probabilities line up with the prompt's tokens before it scores anything; a server
that cannot be shown aligned gets no prompt scored, and L1 from scoring and Δ say why.
Against a scripted server on 127.0.0.1 whose echo behaves like an aligned server, like
llama-cpp-python's (one position late unless the prompt starts with its
beginning-of-sequence token), or gives no per-token distributions."""

from __future__ import annotations

import pytest
from answer_fake_openai import EchoModel, FakeOpenAI, Scripted, chat

from affidavit.answer import evaluate_layers
from affidavit.config.settings import ProviderSettings
from affidavit.errors import ProviderError, RestrictedContentError
from affidavit.llm.claims import extract_claims
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.echo_alignment import PROBE_TEXTS, SCORING_PREFIXES
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.guard import GuardedProvider, RestrictedGuard
from affidavit.llm.layers import LayerInput
from affidavit.llm.openai import OpenAIProvider, render_for_scoring
from affidavit.llm.providers import ProviderRequest

RESTRICTED_TEXT = "The Harrow Mutual acquisition closes on 14 March, known only to the board."
EVIDENCE = [EvidenceItem("b2c3d4e5", "b2c3d4e5" + "0" * 56, "node-2", "Access policy", "",
                         "Access rights are reviewed quarterly by the system owner.",
                         "CONFIDENTIAL")]
ANSWER = "Access rights are reviewed quarterly [src:b2c3d4e5]."
BOS = "<|im_start|>"


def _settings(fake: FakeOpenAI, **changes: object) -> ProviderSettings:
    values: dict[str, object] = {"base_url": fake.base_url, "model": "test-model",
                                 "timeout_seconds": 5.0, "max_retries": 0}
    values.update(changes)
    return ProviderSettings(**values)  # type: ignore[arg-type]


def _provider(fake: FakeOpenAI, restricted: list[str] | None = None) -> GuardedProvider:
    return GuardedProvider(OpenAIProvider(_settings(fake), sleep=lambda _: None),
                           RestrictedGuard(restricted or [RESTRICTED_TEXT]))


def _request() -> ProviderRequest:
    return ProviderRequest(compile_prompt("How often are access rights reviewed?", EVIDENCE,
                                          role="authoritative"))


def _expected(prompt_text: str, completion: str) -> dict[int, float]:
    """Offset in ``completion`` -> log P(token | every token before it) under the model."""
    tokens = EchoModel.tokens(prompt_text + completion)
    found: dict[int, float] = {}
    position = 0
    for i, token in enumerate(tokens):
        if position >= len(prompt_text):
            found[position - len(prompt_text)] = EchoModel.logprob(tuple(tokens[:i]), token)
        position += len(token)
    return found


def _layers(fake: FakeOpenAI, provider: GuardedProvider) -> dict[str, LayerInput]:
    request = _request()
    response = provider.generate(request)
    claims = extract_claims(ANSWER)
    inputs = evaluate_layers(provider, request, response, ANSWER, claims, _settings(fake),
                             role="authoritative")
    return {layer.name: layer for layer in inputs}


def test_an_aligned_server_is_probed_once_and_scored_without_a_prefix(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.echo_model = EchoModel(scores_all=True)
    provider = _provider(fake_openai)
    request = _request()
    first = provider.score(request, ANSWER)
    provider.score(request, ANSWER)
    assert [b["prompt"] for b in fake_openai.probes()] == list(PROBE_TEXTS)
    (sent, _) = [b["prompt"] for b in fake_openai.bodies("/v1/completions")]
    assert sent == render_for_scoring(request.prompt) + ANSWER
    expected = _expected(render_for_scoring(request.prompt), ANSWER)
    assert dict(zip(first.offsets, first.logprobs, strict=True)) == expected


def test_a_server_one_position_late_is_scored_after_its_beginning_of_sequence_token(
        fake_openai: FakeOpenAI) -> None:
    # llama-cpp-python's server: late unless the prompt starts with the BOS token, which
    # it then echoes without text and leaves out of its offsets.
    fake_openai.echo_model = EchoModel(late=True, bos=BOS, scores_all=True)
    provider = _provider(fake_openai)
    request = _request()
    scores = provider.score(request, ANSWER)
    (sent,) = [b["prompt"] for b in fake_openai.bodies("/v1/completions")]
    assert sent == BOS + render_for_scoring(request.prompt) + ANSWER
    assert dict(zip(scores.offsets, scores.logprobs, strict=True)) == _expected(
        render_for_scoring(request.prompt), ANSWER)
    assert "".join(scores.tokens).startswith(ANSWER)
    # Every spelling before the server's own was tried; plain-text ones with one request.
    tried = [b["prompt"] for b in fake_openai.probes()]
    assert tried[0] == PROBE_TEXTS[0] and tried[-2:] == [BOS + t for t in PROBE_TEXTS]
    assert len(tried) == 2 + (SCORING_PREFIXES.index(BOS) - 1) + 2


def test_delta_from_a_late_server_is_the_models_own(fake_openai: FakeOpenAI) -> None:
    fake_openai.echo_model = EchoModel(late=True, bos=BOS, scores_all=True)
    fake_openai.script("/v1/chat/completions", chat(ANSWER))
    layers = _layers(fake_openai, _provider(fake_openai))
    request = _request()
    grounded = _expected(render_for_scoring(request.prompt), ANSWER)
    prior = _expected(render_for_scoring(request.prompt.without_evidence()), ANSWER)
    claim_end = ANSWER.index(" [src:")
    delta = sum(grounded[o] - prior[o] for o in grounded if o < claim_end)
    delta += grounded[len(ANSWER) - 1] - prior[len(ANSWER) - 1]  # the "." after the tag
    contrastive = layers["contrastive"]
    assert contrastive.scores[0] == pytest.approx(delta, abs=1e-4)


def test_a_server_late_under_every_prefix_gets_no_prompt_scored(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.echo_model = EchoModel(late=True, scores_all=True)
    fake_openai.script("/v1/chat/completions", chat(ANSWER, [(ANSWER, -0.1)]))
    provider = _provider(fake_openai)
    layers = _layers(fake_openai, provider)
    reason = layers["contrastive"].unavailable
    assert "cannot be shown to line up" in reason
    assert "distribution of the position after it" in reason
    assert f"{fake_openai.base_url}/completions" in reason
    assert not layers["contrastive"].scores
    # L1 still comes from the chat answer's own log-probabilities, which are not echoed.
    assert layers["l1_confidence"].scores
    assert fake_openai.bodies("/v1/completions") == []
    probes = len(fake_openai.probes())
    with pytest.raises(ProviderError, match="cannot be shown to line up"):
        provider.score(_request(), ANSWER)
    assert len(fake_openai.probes()) == probes  # the conclusion is kept


def test_l1_is_unavailable_with_the_reason_when_nothing_else_gives_it(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.echo_model = EchoModel(late=True, scores_all=True)
    fake_openai.script("/v1/chat/completions", chat(ANSWER))
    layers = _layers(fake_openai, _provider(fake_openai))
    assert not layers["l1_confidence"].scores
    assert layers["l1_confidence"].unavailable


def test_a_server_without_per_token_distributions_is_not_scored(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.echo_model = EchoModel(tops=False, scores_all=True)
    with pytest.raises(ProviderError, match="no per-token log-probability distributions"):
        _provider(fake_openai).score(_request(), ANSWER)
    assert len(fake_openai.probes()) == 1  # no prefix changes the shape of an answer
    assert fake_openai.bodies("/v1/completions") == []


@pytest.mark.parametrize(("status", "message"), [(401, "invalid api key"),
                                                 (500, "model crashed")])
def test_a_probe_the_server_refuses_is_a_provider_failure_tried_again_later(
        fake_openai: FakeOpenAI, status: int, message: str) -> None:
    fake_openai.echo_model = None
    fake_openai.script("/v1/completions",
                       Scripted(status=status, body={"error": {"message": message}}))
    provider = _provider(fake_openai)
    with pytest.raises(ProviderError) as caught:
        provider.score(_request(), ANSWER)
    assert (f"provider at {fake_openai.base_url}/completions answered HTTP {status}: "
            f"{message}") in str(caught.value)
    assert "Access rights" not in str(caught.value)
    fake_openai.echo_model = EchoModel(scores_all=True)
    assert provider.score(_request(), ANSWER).logprobs


def test_the_probe_carries_only_its_fixed_texts(fake_openai: FakeOpenAI) -> None:
    fake_openai.echo_model = EchoModel(late=True, bos=BOS, scores_all=True)
    provider = _provider(fake_openai)
    provider.score(_request(), ANSWER)
    allowed = {prefix + text for prefix in SCORING_PREFIXES for text in PROBE_TEXTS}
    assert fake_openai.probes()
    assert {b["prompt"] for b in fake_openai.probes()} <= allowed


def test_restricted_text_is_refused_before_any_probe(fake_openai: FakeOpenAI) -> None:
    leaky = [*EVIDENCE, EvidenceItem("c3d4e5f6", "c3d4e5f6" + "0" * 56, "n", "Board", "",
                                     RESTRICTED_TEXT, "CONFIDENTIAL")]
    provider = _provider(fake_openai)
    with pytest.raises(RestrictedContentError):
        provider.score(ProviderRequest(compile_prompt("Harrow?", leaky, role="authoritative")),
                       ANSWER)
    with pytest.raises(RestrictedContentError):
        provider.score(_request(), "Note: " + RESTRICTED_TEXT)
    assert fake_openai.requests == []
