"""An answer must answer, end to end on the example corpus: a question the corpus cannot
answer ends REQUIRES_SPEC with a reason and quotes nothing; a good question stays
AUTHORIZED; every record replays (the fixture replays them all on teardown)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import Run, as_json


def test_a_question_the_corpus_cannot_answer_requires_spec(example_workspace: Run) -> None:
    code, out, _ = example_workspace(
        "ask", "What is the policy on space travel reimbursement?", "--as", "user:sam.reed",
        "--json")
    result = as_json(out)
    assert result["output_state"] == "REQUIRES_SPEC"
    assert "QUESTION_NOT_ADDRESSED" in result["reasons"]
    assert result["citations"] == []
    # The refusal quotes no evidence: no travel-policy sentence reaches the asker.
    assert "[src:" not in result["answer"] and "GBP" not in result["answer"]
    assert code != 0


def test_a_question_the_corpus_answers_stays_authorized(example_workspace: Run) -> None:
    code, out, _ = example_workspace("ask", "What is the nightly hotel limit?", "--as",
                                     "user:sam.reed", "--json")
    result = as_json(out)
    assert code == 0 and result["output_state"] == "AUTHORIZED"
    assert all(claim["status"] == "VERIFIED" for claim in result["claims"])


def test_verify_claims_writes_one_line_per_claim(example_workspace: Run,
                                                 tmp_path: Path) -> None:
    claims = tmp_path / "claims.jsonl"
    evidence = ["The nightly hotel limit in London is GBP 185."]
    claims.write_text("\n".join(json.dumps(line) for line in (
        {"id": "same", "claim": "The nightly hotel limit in London is GBP 185.",
         "evidence": evidence},
        {"id": "words", "claim": "The nightly hotel limit in London is two hundred and "
                                 "fifty pounds.", "evidence": evidence},
    )) + "\n", encoding="utf-8")
    out_file = tmp_path / "verdicts.jsonl"
    code, _, err = example_workspace("verify-claims", str(claims), "--out", str(out_file))
    assert code == 0, err
    lines = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert [(line["id"], line["status"]) for line in lines] == [
        ("same", "VERIFIED"), ("words", "UNVERIFIED")]
    assert all(set(line) >= {"id", "status", "layers", "reasons"} for line in lines)


def test_verify_claims_names_the_bad_line(example_workspace: Run, tmp_path: Path) -> None:
    claims = tmp_path / "claims.jsonl"
    claims.write_text('{"id": "a", "claim": "x", "evidence": []}\n{"id": "b"}\n',
                      encoding="utf-8")
    code, out, err = example_workspace("verify-claims", str(claims))
    assert code != 0 and out == ""
    assert "line 2" in err
