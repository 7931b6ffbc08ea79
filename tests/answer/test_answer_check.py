"""verify-claims as a library: one free-standing claim against evidence sentences, with the
layers the answer path runs; bad input lines are named by number."""

from __future__ import annotations

import pytest

from affidavit.answer.verify.check import check_claim, parse_claim_line
from affidavit.answer.verify.nli import load_verifier
from affidavit.cli.verify import check_claim_lines, marked_answer
from affidavit.errors import InputRejected
from affidavit.llm.claims import extract_claims

EVIDENCE = ["The nightly hotel limit in London is GBP 185.",
            "Breakfast up to GBP 15 per night may be claimed."]


def test_a_claim_its_evidence_states_is_verified_with_every_layer_recorded() -> None:
    result = check_claim("c1", "The nightly hotel limit in London is GBP 185.", EVIDENCE)
    line = result.to_dict()
    assert line["id"] == "c1" and line["status"] == "VERIFIED" and line["reasons"] == []
    assert {"citation", "l2_atoms", "l2_coverage", "l2_polarity", "nli"} <= set(line["layers"])
    # The trained nli layer runs where the nli extra is installed, else it is recorded
    # unavailable; either way the claim stays VERIFIED.
    assert line["layers"]["nli"]["available"] is not isinstance(load_verifier(), str)


def test_a_claim_in_words_that_disagrees_is_contradicted() -> None:
    line = check_claim("c2", "The nightly hotel limit in London is two hundred and fifty "
                             "pounds.", EVIDENCE).to_dict()
    assert line["status"] == "UNVERIFIED" and line["contradicted"] is True


def test_checking_is_deterministic() -> None:
    lines = ['{"id": "a", "claim": "Breakfast up to GBP 15 per night may be claimed.", '
             '"evidence": ["Breakfast up to GBP 15 per night may be claimed."]}'] * 2
    first, second = check_claim_lines(lines, threshold=0.6)
    assert first.to_dict() == second.to_dict()


@pytest.mark.parametrize(("line", "message"), [
    ("not json", "line 3: not JSON"),
    ('["a"]', "line 3: expected a JSON object"),
    ('{"id": "a", "claim": "", "evidence": []}', 'line 3: "claim" must be'),
    ('{"id": "a", "claim": "x", "evidence": "one sentence"}', 'line 3: "evidence" must be'),
    ('{"claim": "x", "evidence": []}', 'line 3: "id" must be'),
])
def test_a_bad_input_line_is_rejected_with_its_line_number(line: str, message: str) -> None:
    with pytest.raises(InputRejected) as caught:
        parse_claim_line(line, 3)
    assert message in str(caught.value)


def test_text_answers_mark_the_sentences_not_verified() -> None:
    answer = "Limit is GBP 185. [src:a1b2c3d4] Breakfast is free. [src:a1b2c3d4]"
    claims = [{"start": c.start, "end": c.end, "text": c.text, "status": status}
              for c, status in zip(extract_claims(answer), ("VERIFIED", "UNVERIFIED"),
                                   strict=True)]
    assert marked_answer(answer, claims) == (
        "Limit is GBP 185. [src:a1b2c3d4] [not verified: UNVERIFIED] Breakfast is free. "
        "[src:a1b2c3d4]")


def test_marks_never_land_on_a_refusal_that_replaced_the_answer() -> None:
    refusal = "The evidence available to you does not address this question."
    claims = [{"start": 0, "end": 20, "status": "UNVERIFIED", "text": "Something else here"}]
    assert marked_answer(refusal, claims) == refusal
