"""The openai provider against a scripted OpenAI-compatible server on 127.0.0.1: the whole
Tri-Pass flow (generate, strip, extract, evaluate layers, verify, gate) over real HTTP."""

from __future__ import annotations

import math
from dataclasses import dataclass

import httpx
import pytest
from answer_fake_openai import FakeOpenAI, Scripted, chat, echo, sse

from affidavit.answer import ClaimVerdict, GateDecision, decide, evaluate_layers, verify_claims
from affidavit.config.settings import ProviderSettings
from affidavit.errors import ProviderError, RestrictedContentError
from affidavit.llm.citations import strip_fabricated
from affidavit.llm.claims import extract_claims
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.guard import GuardedProvider, RestrictedGuard
from affidavit.llm.openai import OpenAIProvider, render_for_scoring
from affidavit.llm.providers import ProviderRequest, strip_think_blocks
from affidavit.util.retry import JITTER

RESTRICTED_TEXT = ("The acquisition of Harrow Mutual closes on 14 March at a price of "
                   "ninety million pounds, known only to the board.")
EVIDENCE = [
    EvidenceItem("a1b2c3d4", "a1b2c3d4" + "0" * 56, "node-1", "Supplier contract", "p. 4",
                 "The liability cap is $5M per contract year. The supplier must notify "
                 "breaches within 72 hours.", "CONFIDENTIAL"),
    EvidenceItem("b2c3d4e5", "b2c3d4e5" + "0" * 56, "node-2", "Access policy", "",
                 "Access rights are reviewed quarterly by the system owner.", "INTERNAL"),
]
SUPPORTED = ("The supplier must notify breaches within 72 hours [src:a1b2c3d4]. "
             "Access rights are reviewed quarterly [src:b2c3d4e5].")


def _settings(fake: FakeOpenAI, **changes: object) -> ProviderSettings:
    values: dict[str, object] = {"base_url": fake.base_url, "model": "test-model",
                                 "api_key_env": "TEST_PROVIDER_KEY", "timeout_seconds": 5.0,
                                 "max_retries": 2}
    values.update(changes)
    return ProviderSettings(**values)  # type: ignore[arg-type]


def _guarded(fake: FakeOpenAI, **changes: object) -> GuardedProvider:
    provider = OpenAIProvider(_settings(fake, **changes), sleep=lambda _: None)
    return GuardedProvider(provider, RestrictedGuard([RESTRICTED_TEXT]))


@dataclass
class Outcome:
    answer: str
    stripped: tuple[str, ...]
    verdicts: tuple[ClaimVerdict, ...]
    decision: GateDecision


def _ask(fake: FakeOpenAI, question: str, *, role: str = "authoritative",
         **changes: object) -> Outcome:
    provider = _guarded(fake, **changes)
    settings = _settings(fake, **changes)
    request = ProviderRequest(compile_prompt(question, EVIDENCE, role=role))
    response = provider.generate(request)
    by_src = {item.src: item for item in request.prompt.evidence}
    answer, stripped = strip_fabricated(strip_think_blocks(response.text), by_src)
    claims = extract_claims(answer)
    inputs = evaluate_layers(provider, request, response, answer, claims, settings, role=role)
    verdicts = verify_claims(claims, by_src, layer_inputs=inputs)
    decision = decide(verdicts, role=role, evidence_count=len(by_src),
                      stripped_citations=stripped)
    return Outcome(answer, stripped, verdicts, decision)


def _tokens(text: str, logprob: float) -> list[tuple[str, float]]:
    """``text`` cut into 4-character tokens, each with ``logprob``."""
    return [(text[i : i + 4], logprob) for i in range(0, len(text), 4)]


def _script_scoring(fake: FakeOpenAI, question: str, answer: str, grounded: float,
                    prior: float, role: str = "authoritative") -> None:
    prompt = compile_prompt(question, EVIDENCE, role=role)
    fake.script("/v1/completions", echo(render_for_scoring(prompt), _tokens(answer, grounded)),
                echo(render_for_scoring(prompt.without_evidence()), _tokens(answer, prior)))


# --------------------------------------------------------------------------- the gate


def test_fully_supported_answer_is_authorized_with_every_layer_evaluated(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.script("/v1/chat/completions", chat(SUPPORTED, _tokens(SUPPORTED, -0.05)))
    _script_scoring(fake_openai, "What are the obligations?", SUPPORTED, -0.1, -2.0)
    outcome = _ask(fake_openai, "What are the obligations?")
    assert outcome.decision == GateDecision("AUTHORIZED", ("ALL_CLAIMS_VERIFIED",))
    for verdict in outcome.verdicts:
        assert verdict.status == "VERIFIED"
        assert verdict.layers["l1_confidence"].available
        assert verdict.layers["contrastive"].score is not None
        assert verdict.layers["contrastive"].score > 0


def test_fabricated_citation_is_stripped_and_lowers_the_state(fake_openai: FakeOpenAI) -> None:
    raw = ("<think>I could cite [src:deadbeef] too.</think>Access rights are reviewed "
           "quarterly [src:b2c3d4e5] [src:deadbeef].")
    fake_openai.script("/v1/chat/completions", chat(raw))
    fake_openai.script("/v1/completions", Scripted(status=404, body={"error": "no such"}))
    outcome = _ask(fake_openai, "How often are access rights reviewed?")
    assert outcome.stripped == ("deadbeef",)
    assert "deadbeef" not in outcome.answer and "think" not in outcome.answer
    assert outcome.decision.output_state == "PARTIAL"
    assert "FABRICATED_CITATIONS_STRIPPED:1" in outcome.decision.reasons
    (verdict,) = outcome.verdicts
    assert verdict.layers["contrastive"].detail.startswith("scoring failed")


def test_number_that_differs_from_evidence_is_contradicted_and_blocked(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.script("/v1/chat/completions", chat("The liability cap is $4M [src:a1b2c3d4]."))
    outcome = _ask(fake_openai, "What is the liability cap?", logprobs=False)
    (verdict,) = outcome.verdicts
    assert verdict.contradicted and verdict.status == "UNVERIFIED"
    assert outcome.decision.output_state == "BLOCKED"
    assert outcome.decision.reasons == ("CONTRADICTED_CLAIM:0",)


def test_advisory_role_is_capped_at_narrative_only_and_skips_delta(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.script("/v1/chat/completions", chat(SUPPORTED))
    outcome = _ask(fake_openai, "What are the obligations?", role="advisory", logprobs=False)
    assert outcome.decision.output_state == "NARRATIVE_ONLY"
    assert not fake_openai.bodies("/v1/completions")
    assert all(not v.layers["contrastive"].available for v in outcome.verdicts)


# --------------------------------------------------------------------------- attribution


def test_delta_is_computed_from_the_returned_log_probabilities(fake_openai: FakeOpenAI) -> None:
    answer = "Access rights are reviewed quarterly [src:b2c3d4e5]."
    fake_openai.script("/v1/chat/completions", chat(answer))
    _script_scoring(fake_openai, "How often?", answer, grounded=-0.25, prior=-1.5)
    outcome = _ask(fake_openai, "How often?")
    (verdict,) = outcome.verdicts
    # The claim is "Access rights are reviewed quarterly" (characters 0-36, tokens 0..8)
    # plus the "." after its tag (token 12, "e5]."): 10 tokens scored under both prompts.
    assert verdict.layers["contrastive"].score == pytest.approx(10 * (-0.25 + 1.5))
    assert verdict.layers["l1_confidence"].score == pytest.approx(math.exp(-0.25), abs=1e-6)
    scored = fake_openai.bodies("/v1/completions")
    assert [b["echo"] for b in scored] == [True, True]
    assert [b["max_tokens"] for b in scored] == [1, 1]
    assert scored[0]["prompt"].endswith(answer) and "<<EVIDENCE src=" in scored[0]["prompt"]
    assert "<<EVIDENCE src=" not in scored[1]["prompt"]


def test_evidence_without_influence_leaves_the_claim_partially_verified(
        fake_openai: FakeOpenAI) -> None:
    answer = "Access rights are reviewed quarterly [src:b2c3d4e5]."
    fake_openai.script("/v1/chat/completions", chat(answer))
    _script_scoring(fake_openai, "How often?", answer, grounded=-0.5, prior=-0.5)
    (verdict,) = _ask(fake_openai, "How often?").verdicts
    assert verdict.status == "PARTIALLY_VERIFIED"
    assert "EVIDENCE_NOT_INFLUENTIAL:0.000" in verdict.reasons


def test_l1_confidence_maps_claims_through_a_think_block(fake_openai: FakeOpenAI) -> None:
    raw = "<think>Access rights are reviewed quarterly.</think>Access rights are reviewed " \
          "quarterly [src:b2c3d4e5]."
    visible_start = raw.index("</think>") + len("</think>")
    tokens = [(raw[i : i + 4], -3.0 if i < visible_start else -0.1)
              for i in range(0, len(raw), 4)]
    fake_openai.script("/v1/chat/completions", chat(raw, tokens))
    fake_openai.script("/v1/completions", Scripted(status=400, body={}))
    (verdict,) = _ask(fake_openai, "How often?").verdicts
    layer = verdict.layers["l1_confidence"]
    assert layer.available and layer.score is not None and layer.score > 0.85


def test_stability_draws_sample_above_zero_and_score_each_claim(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("/v1/chat/completions", chat(SUPPORTED),
                       chat("Access rights are reviewed quarterly [src:b2c3d4e5]."),
                       chat("Breaches must be notified within 72 hours; access rights are "
                            "reviewed quarterly."))
    outcome = _ask(fake_openai, "What are the obligations?", logprobs=False, stability_draws=2)
    scores = [v.layers["l3_stability"].score for v in outcome.verdicts]
    assert scores == [0.5, 1.0]
    temperatures = [b["temperature"] for b in fake_openai.bodies("/v1/chat/completions")]
    assert temperatures == [0.0, 0.7, 0.7]


# --------------------------------------------------------------------------- transport


def test_request_body_and_api_key_from_the_environment(
        fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_PROVIDER_KEY", "sk-test-123")
    fake_openai.script("/v1/chat/completions", chat("Fine."))
    provider = _guarded(fake_openai)
    request = ProviderRequest(compile_prompt("Anything?", EVIDENCE, role="authoritative"))
    provider.generate(request)
    (seen,) = fake_openai.requests
    assert seen.headers["Authorization"] == "Bearer sk-test-123"
    assert seen.body["model"] == "test-model" and seen.body["logprobs"] is True
    assert seen.body["top_logprobs"] == 0 and seen.body["temperature"] == 0.0
    assert [m["role"] for m in seen.body["messages"]] == ["system", "user"]
    assert seen.body["messages"][1]["content"] == request.prompt.user


def test_retries_on_503_and_429_then_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("/v1/chat/completions", Scripted(status=503, body={}),
                       Scripted(status=429, body={}, headers={"Retry-After": "1"}),
                       chat("Done."))
    delays: list[float] = []
    provider = OpenAIProvider(_settings(fake_openai), sleep=delays.append)
    response = provider.generate(ProviderRequest(compile_prompt("Q?", EVIDENCE,
                                                                role="authoritative")))
    # Backoff 0.5 then 1.0 (the 429's Retry-After: 1 asks no longer), each plus jitter.
    assert response.text == "Done."
    assert 0.5 <= delays[0] <= 0.5 * (1 + JITTER) and 1.0 <= delays[1] <= 1.0 * (1 + JITTER)


def test_client_errors_are_not_retried_and_become_provider_errors(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.script("/v1/chat/completions", Scripted(status=400, body={"error": "bad"}))
    with pytest.raises(ProviderError, match="HTTP 400"):
        _guarded(fake_openai).generate(
            ProviderRequest(compile_prompt("Q?", EVIDENCE, role="authoritative")))
    assert len(fake_openai.requests) == 1


def test_connect_errors_are_retried_then_fail(fake_openai: FakeOpenAI) -> None:
    closed = httpx.Client(transport=httpx.HTTPTransport(retries=0), timeout=1.0)
    settings = ProviderSettings(base_url="http://127.0.0.1:9/v1", model="m", max_retries=2)
    delays: list[float] = []
    provider = GuardedProvider(OpenAIProvider(settings, client=closed, sleep=delays.append),
                               RestrictedGuard([]))
    with pytest.raises(ProviderError, match="cannot reach"):
        provider.generate(ProviderRequest(compile_prompt("Q?", EVIDENCE, role="authoritative")))
    assert 0.5 <= delays[0] <= 0.5 * (1 + JITTER) and 1.0 <= delays[1] <= 1.0 * (1 + JITTER)


def test_malformed_answers_become_provider_errors(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("/v1/chat/completions", Scripted(body={"choices": []}))
    with pytest.raises(ProviderError, match="no choices"):
        _guarded(fake_openai).generate(
            ProviderRequest(compile_prompt("Q?", EVIDENCE, role="authoritative")))


# --------------------------------------------------------------------------- streaming


def test_stream_strips_a_think_block_split_across_deltas(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("/v1/chat/completions",
                       sse("<thi", "nk>secret plan", " continues</th", "ink>\n\nAccess ",
                           "rights are < reviewed", " quarterly <", "b>[src:b2c3d4e5]."))
    request = ProviderRequest(compile_prompt("How often?", EVIDENCE, role="authoritative"))
    deltas = list(_guarded(fake_openai).stream(request))
    assert "".join(deltas) == "Access rights are < reviewed quarterly <b>[src:b2c3d4e5]."
    assert all("secret" not in d and "think" not in d for d in deltas)
    assert fake_openai.bodies()[0]["stream"] is True


def test_stream_is_guarded_before_the_first_delta(fake_openai: FakeOpenAI) -> None:
    leaky = [*EVIDENCE, EvidenceItem("c3d4e5f6", "c3d4e5f6" + "0" * 56, "n", "Board", "",
                                     RESTRICTED_TEXT, "CONFIDENTIAL")]
    request = ProviderRequest(compile_prompt("Harrow?", leaky, role="authoritative"))
    with pytest.raises(RestrictedContentError):
        _guarded(fake_openai).stream(request)
    assert fake_openai.requests == []


def test_scoring_refuses_a_completion_with_restricted_text(fake_openai: FakeOpenAI) -> None:
    request = ProviderRequest(compile_prompt("Q?", EVIDENCE, role="authoritative"))
    with pytest.raises(RestrictedContentError):
        _guarded(fake_openai).score(request, "Note: " + RESTRICTED_TEXT)
    assert fake_openai.requests == []
