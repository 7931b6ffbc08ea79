"""Facts compared as facts: numbers in words, currencies, units and places tied to a value,
and two claims of one answer that give different values for the same quantity."""

from __future__ import annotations

import pytest

from affidavit.answer import decide, verify_claims
from affidavit.answer.verify.facts import claim_conflicts
from affidavit.answer.verify.gate import AUTHORIZED, BLOCKED, PARTIAL, GateDecision
from affidavit.llm.atoms import extract_atoms
from affidavit.llm.claims import extract_claims
from affidavit.llm.evidence import EvidenceItem

HOTELS = ("The nightly hotel limit in London is GBP 185. The nightly hotel limit in Manchester "
          "is GBP 140. Expense claims must be submitted within 14 days of the trip.")
OLD_SCHEDULE = "The nightly hotel limit in London is GBP 160."


def _item(src: str, text: str) -> EvidenceItem:
    return EvidenceItem(src, src + "0" * 56, "node", "Travel policy", "", text, "INTERNAL")


EVIDENCE = {"a1b2c3d4": _item("a1b2c3d4", HOTELS), "b2c3d4e5": _item("b2c3d4e5", OLD_SCHEDULE)}


def _gate(answer: str) -> GateDecision:
    verdicts = verify_claims(extract_claims(answer), EVIDENCE)
    return decide(verdicts, role="authoritative", evidence_count=len(EVIDENCE),
                  stripped_citations=())


@pytest.mark.parametrize(("text", "value"), [
    ("two hundred and fifty pounds", "250 GBP"),
    ("twenty-five working days", "25 business day"),
    ("three million euros", "3000000 EUR"),
    ("one hundred and eighty-five pounds sterling", "185 GBP"),
    ("twelve nights", "12 night"),
])
def test_numbers_written_in_words_are_atoms_with_their_value(text: str, value: str) -> None:
    atoms = [a for a in extract_atoms(f"The limit is {text}.") if a.kind == "number"]
    assert [(a.text, a.value) for a in atoms] == [(text, value)]


def test_no_one_and_one_of_are_not_numbers() -> None:
    assert [a for a in extract_atoms("No one may approve one of the requests.")
            if a.kind == "number"] == []


def test_an_amount_in_words_that_disagrees_with_the_evidence_is_contradicted() -> None:
    decision = _gate("The nightly hotel limit in London is two hundred and fifty pounds "
                     "[src:a1b2c3d4].")
    assert decision.output_state == BLOCKED
    assert decision.reasons[0].startswith("CONTRADICTED_CLAIM:0")


def test_the_same_amount_in_words_is_verified() -> None:
    decision = _gate("The nightly hotel limit in London is one hundred and eighty-five pounds "
                     "[src:a1b2c3d4].")
    assert decision.output_state == AUTHORIZED


def test_the_right_amount_in_the_wrong_currency_is_contradicted() -> None:
    verdict = verify_claims(extract_claims(
        "The nightly hotel limit in London is EUR 185 [src:a1b2c3d4]."), EVIDENCE)[0]
    assert verdict.contradicted
    assert any("185 EUR!=185 GBP" in reason for reason in verdict.reasons)


def test_a_value_the_evidence_ties_to_another_place_is_contradicted() -> None:
    # GBP 185 is in the evidence, but for London: Manchester's limit is GBP 140.
    verdict = verify_claims(extract_claims(
        "The nightly hotel limit in Manchester is GBP 185 [src:a1b2c3d4]."), EVIDENCE)[0]
    assert verdict.contradicted
    assert "CONTRADICTED:place:manchester:185 GBP!=140 GBP" in verdict.reasons


def test_a_duration_in_another_unit_is_contradicted_unless_it_is_the_same_time() -> None:
    wrong = verify_claims(extract_claims(
        "Expense claims must be submitted within 14 weeks of the trip [src:a1b2c3d4]."),
        EVIDENCE)[0]
    same = verify_claims(extract_claims(
        "Expense claims must be submitted within 2 weeks of the trip [src:a1b2c3d4]."),
        EVIDENCE)[0]
    assert wrong.contradicted
    assert not same.contradicted


def test_a_value_found_elsewhere_in_the_evidence_does_not_verify_another_noun() -> None:
    evidence = {"a1b2c3d4": _item("a1b2c3d4", "Taxi fares are refunded up to GBP 40. The "
                                              "meal allowance is GBP 25 per day.")}
    verdict = verify_claims(extract_claims(
        "The meal allowance is GBP 40 per day [src:a1b2c3d4]."), evidence)[0]
    assert verdict.contradicted
    assert "CONTRADICTED:number:40 GBP!=25 GBP:noun=meal" in verdict.reasons


def test_a_dropped_negation_is_not_verified() -> None:
    evidence = {"a1b2c3d4": _item("a1b2c3d4", "Alcohol is not reimbursed.")}
    verdict = verify_claims(extract_claims("Alcohol is reimbursed [src:a1b2c3d4]."),
                            evidence)[0]
    assert verdict.status != "VERIFIED"
    assert "POLARITY_MISMATCH:negation_flipped" in verdict.reasons


def test_no_later_than_is_a_bound_not_a_negation() -> None:
    evidence = {"a1b2c3d4": _item("a1b2c3d4", "Claims are paid no later than 30 days after "
                                              "approval.")}
    verdict = verify_claims(extract_claims(
        "Claims are paid within 30 days after approval [src:a1b2c3d4]."), evidence)[0]
    assert "POLARITY_MISMATCH:negation_flipped" not in verdict.reasons


def test_a_name_the_evidence_replaces_with_another_is_not_verified() -> None:
    evidence = {"a1b2c3d4": _item("a1b2c3d4", "Hotel bookings in Leeds are approved by the "
                                              "Head of Travel.")}
    verdict = verify_claims(extract_claims(
        "Hotel bookings in Glasgow are approved by the Head of Travel [src:a1b2c3d4]."),
        evidence)[0]
    assert verdict.status != "VERIFIED"
    assert "NAME_NOT_IN_EVIDENCE:glasgow" in verdict.reasons
    # A name merely absent, where no sentence states the rest, is left to coverage.
    other = verify_claims(extract_claims(
        "Glasgow bookings need approval [src:a1b2c3d4]."), evidence)[0]
    assert not any(r.startswith("NAME_NOT_IN_EVIDENCE") for r in other.reasons)


def test_two_claims_giving_different_values_for_one_quantity_are_flagged() -> None:
    # Each claim is true of the source it cites; the answer cannot vouch for both.
    decision = _gate("The nightly hotel limit in London is GBP 185 [src:a1b2c3d4]. "
                     "The nightly hotel limit in London is GBP 160 [src:b2c3d4e5].")
    assert decision.output_state == PARTIAL
    assert "CONFLICTING_CLAIMS:0&1" in decision.reasons
    # Gate reasons reach ledger readers who may not see the evidence: no values in them.
    assert not any("185" in reason or "160" in reason for reason in decision.reasons)


def test_values_for_different_places_are_not_a_conflict() -> None:
    decision = _gate("The nightly hotel limit in London is GBP 185 [src:a1b2c3d4]. "
                     "The nightly hotel limit in Manchester is GBP 140 [src:a1b2c3d4].")
    assert decision.output_state == AUTHORIZED
    assert claim_conflicts([(0, "The limit in London is GBP 185."),
                            (1, "The limit in Manchester is GBP 140.")]) == ()


def test_conflict_detection_is_deterministic() -> None:
    claims = [(0, "The nightly limit in London is GBP 185."),
              (1, "The nightly limit in London is two hundred pounds.")]
    assert claim_conflicts(claims) == claim_conflicts(list(claims))
    assert [c.reason for c in claim_conflicts(claims)] == [
        "CONFLICTING_CLAIMS:0&1"]
    assert [(c.first_value, c.second_value) for c in claim_conflicts(claims)] == [
        ("185 GBP", "200 GBP")]
