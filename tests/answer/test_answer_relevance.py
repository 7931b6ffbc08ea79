"""An answer must answer: evidence that does not address the question is REQUIRES_SPEC, and
the extractive provider refuses rather than quoting unrelated sentences."""

from __future__ import annotations

from affidavit.answer import decide, governed_refusal, verify_claims
from affidavit.answer.verify.gate import AUTHORIZED, REQUIRES_SPEC, shown_answer
from affidavit.llm.claims import extract_claims
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.guard import GuardedProvider, RestrictedGuard
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest
from affidavit.llm.relevance import NO_SUBJECT_IN_SCOPE, question_coverage

TRAVEL = ("Travel costs are reimbursed when booked through the travel portal. "
          "Alcohol is not reimbursed.")
PARKING = "The car park now has 40 additional spaces for bicycles."


def _item(src: str, text: str, title: str = "Travel policy") -> EvidenceItem:
    return EvidenceItem(src, src + "0" * 56, "node", title, "", text, "INTERNAL")


def test_a_question_term_no_evidence_covers_leaves_the_question_unaddressed() -> None:
    coverage = question_coverage("What is the policy on space travel reimbursement?", [TRAVEL])
    assert not coverage.addressed
    assert coverage.uncovered == ("space",)
    assert coverage.reasons == ("QUESTION_NOT_ADDRESSED",)
    assert coverage.to_dict()["words"] == ["space"]


def test_a_stray_word_in_unrelated_evidence_does_not_address_the_question() -> None:
    # "spaces" in a parking notice is not evidence about space travel.
    coverage = question_coverage("What is the policy on space travel reimbursement?",
                                 [TRAVEL, PARKING])
    assert coverage.uncovered == ("space",)


def test_evidence_covering_every_key_term_addresses_the_question() -> None:
    coverage = question_coverage("How are travel costs reimbursed?", [TRAVEL, PARKING])
    assert coverage.addressed and coverage.reasons == ()


def test_a_boundary_score_of_zero_for_the_named_subject_leaves_it_unaddressed() -> None:
    compliance = {"status": "NON_COMPLIANT", "score": 0.0, "expected_from": "question"}
    coverage = question_coverage("How are travel costs reimbursed?", [TRAVEL],
                                 compliance=compliance)
    assert coverage.reasons == (NO_SUBJECT_IN_SCOPE,)
    # A score derived from the ranking names what was retrieved, not what was asked.
    ranking = {**compliance, "expected_from": "ranking"}
    assert question_coverage("How are travel costs reimbursed?", [TRAVEL],
                             compliance=ranking).addressed


def test_unaddressed_question_requires_spec_even_when_every_claim_verifies() -> None:
    evidence = {"a1b2c3d4": _item("a1b2c3d4", TRAVEL)}
    answer = "Travel costs are reimbursed when booked through the travel portal [src:a1b2c3d4]."
    verdicts = verify_claims(extract_claims(answer), evidence)
    assert [v.status for v in verdicts] == ["VERIFIED"]
    relevance = question_coverage("What is the policy on space travel reimbursement?",
                                  [TRAVEL])
    decision = decide(verdicts, role="authoritative", evidence_count=1,
                      stripped_citations=(), relevance=relevance)
    assert decision.output_state == REQUIRES_SPEC
    assert decision.reasons == ("QUESTION_NOT_ADDRESSED",)
    # The asker sees the governed refusal, not the unrelated sentences.
    assert shown_answer(decision, answer, len(verdicts)) == governed_refusal(decision)
    addressed = question_coverage("How are travel costs reimbursed?", [TRAVEL])
    assert decide(verdicts, role="authoritative", evidence_count=1, stripped_citations=(),
                  relevance=addressed).output_state == AUTHORIZED


def test_unaddressed_question_requires_spec_even_when_a_claim_is_contradicted() -> None:
    """Evidence that does not address the question settles the state first: a model that
    invents an answer to it, contradicting the evidence on the way, still ends
    REQUIRES_SPEC, withheld, with the contradiction kept among the reasons."""
    hotel = "The nightly hotel limit in London is GBP 185."
    evidence = {"a1b2c3d4": _item("a1b2c3d4", hotel, title="Hotels")}
    answer = "The nightly hotel limit in London is GBP 250 [src:a1b2c3d4]."
    verdicts = verify_claims(extract_claims(answer), evidence)
    assert any(v.contradicted for v in verdicts)
    relevance = question_coverage("What is the policy on space travel reimbursement?",
                                  [hotel])
    decision = decide(verdicts, role="authoritative", evidence_count=1,
                      stripped_citations=(), relevance=relevance)
    assert decision.output_state == REQUIRES_SPEC
    assert decision.reasons[0].startswith("QUESTION_NOT_ADDRESSED")
    assert any(r.startswith("CONTRADICTED_CLAIM:") for r in decision.reasons)
    assert shown_answer(decision, answer, len(verdicts)) == governed_refusal(decision)
    # Where the evidence does address the question, a contradiction blocks as before.
    addressed = question_coverage("What is the nightly hotel limit in London?", [hotel])
    assert decide(verdicts, role="authoritative", evidence_count=1, stripped_citations=(),
                  relevance=addressed).output_state == "BLOCKED"


def test_extractive_provider_refuses_rather_than_quoting_unrelated_sentences() -> None:
    prompt = compile_prompt("What is the policy on space travel reimbursement?",
                            [_item("a1b2c3d4", TRAVEL),
                             _item("b2c3d4e5", PARKING, title="Car park notice")],
                            role="authoritative")
    text = ExtractiveProvider().generate(ProviderRequest(prompt)).text
    assert text == "The evidence does not address this question (nothing on: space)."
    assert "[src:" not in text
    verdicts = verify_claims(extract_claims(text), {})
    assert [v.status for v in verdicts] == ["REFUSED"]


def test_a_question_naming_the_document_is_addressed_by_its_title() -> None:
    prompt = compile_prompt("What does the handbook say about alcohol?",
                            [_item("a1b2c3d4", TRAVEL, title="Staff handbook")],
                            role="authoritative")
    text = ExtractiveProvider().generate(ProviderRequest(prompt)).text
    assert text == "Alcohol is not reimbursed. [src:a1b2c3d4]"


def test_the_refusal_never_carries_restricted_or_evidence_text() -> None:
    secret = "Project Lighthouse acquisition price is GBP 90 million."
    prompt = compile_prompt("What is the policy on space travel reimbursement?",
                            [_item("a1b2c3d4", TRAVEL + " " + secret)], role="authoritative")
    provider = GuardedProvider(ExtractiveProvider(), RestrictedGuard([secret]))
    # The guard refuses RESTRICTED text before the provider runs; without it in the prompt,
    # the refusal names only the asker's own words.
    clean = compile_prompt("What is the policy on space travel reimbursement?",
                           [_item("a1b2c3d4", TRAVEL)], role="authoritative")
    text = provider.generate(ProviderRequest(clean)).text
    assert "Lighthouse" not in text and "portal" not in text
    try:
        provider.generate(ProviderRequest(prompt))
    except Exception as exc:  # the guard's refusal, whatever its class
        assert "Lighthouse" not in str(exc)
    else:
        raise AssertionError("RESTRICTED text reached the provider")
