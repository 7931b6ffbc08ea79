"""L2 verification and the Boundary Gate, end to end over small answers."""

from __future__ import annotations

import pytest

from affidavit.answer import (
    CLAIM_STATUSES,
    OUTPUT_STATES,
    ClaimVerdict,
    decide,
    governed_refusal,
    verify_claims,
)
from affidavit.answer.verify.gate import GateDecision
from affidavit.errors import InputRejected
from affidavit.llm.citations import strip_fabricated
from affidavit.llm.claims import extract_claims
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.guard import GuardedProvider, RestrictedGuard
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest


def _item(src: str, text: str) -> EvidenceItem:
    return EvidenceItem(src, src + "0" * 56, "node", "Contract", "", text, "CONFIDENTIAL")


EVIDENCE = {
    "a1b2c3d4": _item("a1b2c3d4", "The liability cap is $5M per contract year. The supplier "
                                  "must notify breaches within 72 hours."),
    "b2c3d4e5": _item("b2c3d4e5", "Access rights are reviewed quarterly by the system owner."),
    "c3d4e5f6": _item("c3d4e5f6", "赔偿上限为500万美元。数据必须在30天以内删除。"),
}


def _verdicts(answer: str, threshold: float = 0.6) -> tuple[ClaimVerdict, ...]:
    return verify_claims(extract_claims(answer), EVIDENCE, threshold=threshold)


def _gate(answer: str, role: str = "authoritative") -> GateDecision:
    cleaned, stripped = strip_fabricated(answer, EVIDENCE)
    return decide(_verdicts(cleaned), role=role, evidence_count=len(EVIDENCE),
                  stripped_citations=stripped)


# --------------------------------------------------------------------------- verification


def test_fully_supported_claims_are_verified_and_authorized() -> None:
    answer = ("The supplier must notify breaches within 72 hours [src:a1b2c3d4]. "
              "Access rights are reviewed quarterly [src:b2c3d4e5].")
    verdicts = _verdicts(answer)
    assert [v.status for v in verdicts] == ["VERIFIED", "VERIFIED"]
    assert all(v.support == 1.0 and not v.contradicted and v.reasons == () for v in verdicts)
    assert _gate(answer) == GateDecision("AUTHORIZED", ("ALL_CLAIMS_VERIFIED",))


def test_number_that_differs_from_evidence_is_contradicted_and_blocked() -> None:
    answer = "The liability cap is $4M [src:a1b2c3d4]."
    (verdict,) = _verdicts(answer)
    assert verdict.contradicted and verdict.status == "UNVERIFIED"
    assert "CONTRADICTED:number:4000000 USD!=5000000 USD:noun=liability" in verdict.reasons
    decision = _gate(answer)
    assert decision.output_state == "BLOCKED"
    assert decision.reasons == ("CONTRADICTED_CLAIM:0",)
    refusal = governed_refusal(decision)
    assert "$5M" not in refusal and "liability" not in refusal and "withheld" in refusal


def test_chinese_number_contradiction_and_support() -> None:
    (bad,) = _verdicts("赔偿上限为400万美元[src:c3d4e5f6]。")
    assert bad.contradicted
    (good,) = _verdicts("数据必须在30天以内删除[src:c3d4e5f6]。")
    assert good.status == "VERIFIED" and good.support == 1.0


def test_uncited_contradiction_is_still_caught() -> None:
    (verdict,) = _verdicts("The liability cap is $9M.")
    assert verdict.contradicted and "NO_VALID_CITATION" in verdict.reasons


def test_missing_atom_with_good_coverage_is_partial() -> None:
    (verdict,) = _verdicts("Access rights are reviewed quarterly under CC6.1 [src:b2c3d4e5].")
    assert verdict.status == "PARTIALLY_VERIFIED"
    assert "ATOM_NOT_IN_EVIDENCE:regulatory_citation:cc6.1" in verdict.reasons
    assert not verdict.contradicted


def test_low_coverage_and_uncited_claims_are_unverified() -> None:
    weak, uncited = _verdicts("Quantum vendors negotiate pricing annually [src:b2c3d4e5]. "
                              "Access rights are reviewed quarterly.")
    assert weak.status == "UNVERIFIED" and any(r.startswith("LOW_COVERAGE") for r in weak.reasons)
    assert uncited.status == "UNVERIFIED" and "NO_VALID_CITATION" in uncited.reasons
    assert uncited.layers["citation"].score == 0.0
    assert not uncited.layers["l2_coverage"].available


def test_refusal_sentences_are_refused_not_verified() -> None:
    (verdict,) = _verdicts("The evidence does not say who approves exceptions.")
    assert verdict.status == "REFUSED" and not verdict.contradicted


def test_every_layer_is_recorded_with_availability() -> None:
    (verdict,) = _verdicts("Access rights are reviewed quarterly [src:b2c3d4e5].")
    assert list(verdict.layers) == ["citation", "l2_atoms", "l2_coverage", "l2_polarity",
                                    "l1_confidence",
                                    "contrastive", "l3_stability", "l4_representation",
                                    "embedding", "nli"]
    assert all(verdict.layers[name].available for name in ("citation", "l2_atoms", "l2_coverage"))
    assert verdict.layers["l1_confidence"].detail == "provider returned no log-probabilities"
    assert verdict.layers["nli"].detail == "not configured"
    assert not any(verdict.layers[name].available for name in ("l3_stability", "embedding"))


def test_threshold_is_validated_and_applied() -> None:
    with pytest.raises(InputRejected):
        _verdicts("x", threshold=0.0)
    answer = "Access rights are reviewed yearly by auditors [src:b2c3d4e5]."
    assert _verdicts(answer, threshold=0.4)[0].status == "VERIFIED"
    assert _verdicts(answer, threshold=0.9)[0].status == "PARTIALLY_VERIFIED"


# --------------------------------------------------------------------------- gate


def test_advisory_role_is_capped_at_narrative_only() -> None:
    answer = "Access rights are reviewed quarterly [src:b2c3d4e5]."
    decision = _gate(answer, role="advisory")
    assert decision.output_state == "NARRATIVE_ONLY"
    assert decision.reasons[0] == "ADVISORY_ROLE_CEILING"


def test_mixed_answers_are_partial_and_unsupported_ones_require_spec() -> None:
    mixed = ("Access rights are reviewed quarterly [src:b2c3d4e5]. "
             "Quantum vendors negotiate pricing annually [src:b2c3d4e5].")
    assert _gate(mixed) == GateDecision("PARTIAL", ("VERIFIED_CLAIMS:1/2",))
    unsupported = "Quantum vendors negotiate pricing annually [src:b2c3d4e5]."
    assert _gate(unsupported).output_state == "REQUIRES_SPEC"


def test_fabricated_citations_are_stripped_and_lower_authorized_to_partial() -> None:
    answer = "Access rights are reviewed quarterly [src:b2c3d4e5] [src:deadbeef]."
    decision = _gate(answer)
    assert decision.output_state == "PARTIAL"
    assert "FABRICATED_CITATIONS_STRIPPED:1" in decision.reasons
    assert "LOWERED_FOR_FABRICATED_CITATIONS" in decision.reasons


def test_no_evidence_no_claims_and_refusals_only_require_spec() -> None:
    no_evidence = decide((), role="authoritative", evidence_count=0, stripped_citations=())
    assert no_evidence == GateDecision("REQUIRES_SPEC", ("NO_EVIDENCE",))
    assert "No evidence available to you" in governed_refusal(no_evidence)
    assert decide((), role="authoritative", evidence_count=3,
                  stripped_citations=()).reasons == ("NO_CLAIMS",)
    refusal = _gate("The evidence does not say who approves exceptions.")
    assert refusal == GateDecision("REQUIRES_SPEC", ("ONLY_REFUSALS", "REFUSED_CLAIMS:1"))


def test_unknown_role_or_status_fails_closed() -> None:
    verdicts = _verdicts("Access rights are reviewed quarterly [src:b2c3d4e5].")
    assert decide(verdicts, role="root", evidence_count=1,
                  stripped_citations=()).output_state == "BLOCKED"
    from dataclasses import replace

    odd = (replace(verdicts[0], status="MAYBE"),)
    decision = decide(odd, role="authoritative", evidence_count=1, stripped_citations=())
    assert decision == GateDecision("BLOCKED", ("UNKNOWN_CLAIM_STATUS",))
    assert "governance check" in governed_refusal(decision)


@pytest.mark.parametrize(
    ("reason", "phrase"),
    [("OUT_OF_SCOPE_ENTITY:acme", "outside the scope"),
     ("AUTHORIZATION_FAILED: no principal", "could not be authorized"),
     ("RESTRICTED_GUARD: evidence [src:a1b2c3d4] is labelled RESTRICTED", "governance check")],
)
def test_governed_refusal_names_the_kind_of_failure_only(reason: str, phrase: str) -> None:
    text = governed_refusal(GateDecision("BLOCKED", (reason,)))
    assert phrase in text
    assert "RESTRICTED" not in text and "a1b2c3d4" not in text and "acme" not in text


def test_state_constants() -> None:
    assert OUTPUT_STATES == ("AUTHORIZED", "PARTIAL", "REQUIRES_SPEC", "NARRATIVE_ONLY", "BLOCKED")
    assert CLAIM_STATUSES == ("VERIFIED", "PARTIALLY_VERIFIED", "UNVERIFIED", "REFUSED")


def test_extractive_pipeline_end_to_end_is_authorized() -> None:
    items = list(EVIDENCE.values())
    prompt = compile_prompt("How fast must breaches be notified?", items, role="authoritative")
    provider = GuardedProvider(ExtractiveProvider(), RestrictedGuard([]))
    response = provider.generate(ProviderRequest(prompt))
    cleaned, stripped = strip_fabricated(response.text, prompt.src_ids)
    verdicts = verify_claims(extract_claims(cleaned), {e.src: e for e in prompt.evidence})
    decision = decide(verdicts, role="authoritative", evidence_count=len(items),
                      stripped_citations=stripped)
    assert cleaned == "The supplier must notify breaches within 72 hours. [src:a1b2c3d4]"
    assert decision.output_state == "AUTHORIZED"
