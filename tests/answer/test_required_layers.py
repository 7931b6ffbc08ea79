"""Proof depth a deployment can require (``[gate] required_layers``, spec 003 §6.4, §9.2):
a required layer that did not run over every asserted claim keeps an answer from
AUTHORIZED, and every ledger record says which layers ran, which did not and why, and what
the proof does not cover."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import EXAMPLES, Run, as_json, run  # noqa: F401

from affidavit.answer import decide, verify_claims
from affidavit.answer.verify.proof import EPISTEMIC_LIMITS, proof_depth
from affidavit.config import loader as config
from affidavit.config.gate import GateSettings
from affidavit.errors import ConfigurationError
from affidavit.llm.claims import extract_claims
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.layers import LayerInput

EVIDENCE = {"a1b2c3d4": EvidenceItem(
    "a1b2c3d4", "a1b2c3d4" + "0" * 56, "node", "Contract", "",
    "The supplier must notify breaches within 72 hours.", "CONFIDENTIAL")}
ANSWER = "The supplier must notify breaches within 72 hours [src:a1b2c3d4]."


def _decide(required: tuple[str, ...], *inputs: LayerInput) -> Any:
    verdicts = verify_claims(extract_claims(ANSWER), EVIDENCE, layer_inputs=inputs)
    return decide(verdicts, role="authoritative", evidence_count=1, stripped_citations=(),
                  required_layers=required)


def test_a_required_layer_that_did_not_run_keeps_an_answer_from_authorized() -> None:
    assert _decide(()).output_state == "AUTHORIZED"
    decision = _decide(("l3_stability",))
    assert decision.output_state == "PARTIAL"
    assert decision.reasons[0] == "REQUIRED_LAYER_NOT_RUN:l3_stability"


def test_a_required_layer_that_ran_leaves_the_answer_authorized() -> None:
    stable = LayerInput("l3_stability", scores={0: 1.0}, details={0: "3 of 3 draws"})
    assert _decide(("l3_stability",), stable).output_state == "AUTHORIZED"
    assert _decide(("l2_atoms", "l2_coverage", "citation")).output_state == "AUTHORIZED"


def test_an_advisory_answer_missing_a_required_layer_stays_narrative_only() -> None:
    verdicts = verify_claims(extract_claims(ANSWER), EVIDENCE)
    decision = decide(verdicts, role="advisory", evidence_count=1, stripped_citations=(),
                      required_layers=("contrastive",))
    assert decision.output_state == "NARRATIVE_ONLY"
    assert "REQUIRED_LAYER_NOT_RUN:contrastive" in decision.reasons


def test_the_proof_depth_names_each_layer_that_did_not_run_and_why() -> None:
    verdicts = verify_claims(extract_claims(ANSWER), EVIDENCE, layer_inputs=(
        LayerInput.missing("contrastive", "provider cannot score completions"),))
    proof = proof_depth(verdicts, ("contrastive",)).to_dict()
    assert {"citation", "l2_atoms", "l2_coverage", "l2_polarity"} <= set(proof["layers_ran"])
    assert proof["layers_unavailable"]["contrastive"] == "provider cannot score completions"
    assert proof["missing_required"] == ["contrastive"]
    assert proof["epistemic_limits"] == EPISTEMIC_LIMITS


@pytest.mark.parametrize("names,expanded", [
    (("L3",), ("l3_stability",)),
    (("delta", "L1"), ("l1_confidence", "contrastive")),
    (("L2",), ("l2_atoms", "l2_coverage", "l2_polarity")),
    (("nli", "L4"), ("l4_representation", "nli")),
])
def test_required_layers_take_the_spec_names_too(names: tuple[str, ...],
                                                 expanded: tuple[str, ...]) -> None:
    assert GateSettings(required_layers=names).required() == expanded


def test_an_unknown_required_layer_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "affidavit.toml").write_text('[gate]\nrequired_layers = ["L5"]\n',
                                             encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"gate\.required_layers"):
        config.load(tmp_path / "affidavit.toml", environ={})


def test_the_layer_names_are_the_ones_the_verifier_writes() -> None:
    from affidavit.config.gate import LAYER_NAMES
    from affidavit.llm.layers import MODEL_LAYERS

    (verdict,) = verify_claims(extract_claims(ANSWER), EVIDENCE)
    assert set(verdict.layers) == set(LAYER_NAMES)
    assert set(MODEL_LAYERS) <= set(LAYER_NAMES)


# --------------------------------------------------------------------------- end to end


def _workspace(run: Run, tmp_path: Path, gate: str) -> Run:  # noqa: F811
    settings = (EXAMPLES / "affidavit.toml").read_text(encoding="utf-8")
    (tmp_path / "affidavit.toml").write_text(settings + "\n[gate]\n" + gate + "\n",
                                             encoding="utf-8")
    shutil.copytree(EXAMPLES / "corpus", tmp_path / "corpus")
    assert run("init")[0] == 0
    assert run("ingest", "corpus", "--quiet")[0] in (0, 3)
    assert run("sire", "approve", "--all", "--by", "user:curator")[0] == 0
    return run


def _ask(cli: Run, question: str) -> tuple[dict[str, Any], dict[str, Any]]:
    _, out, _ = cli("ask", question, "--as", "user:sam.reed", "--json")
    answer = as_json(out)
    code, shown, err = cli("ledger", "show", answer["request_id"], "--as", "user:sam.reed",
                           "--json")
    assert code == 0, err
    record: dict[str, Any] = as_json(shown)["record"]
    return answer, record


def test_a_deployment_requiring_l3_gets_no_authorized_answer_without_it(
        run: Run, tmp_path: Path) -> None:  # noqa: F811
    cli = _workspace(run, tmp_path, 'required_layers = ["L3"]')
    answer, record = _ask(cli, "What is the nightly hotel limit?")
    assert answer["output_state"] == "PARTIAL", answer
    assert "REQUIRED_LAYER_NOT_RUN:l3_stability" in answer["reasons"]
    proof = record["proof"]
    assert proof["required_layers"] == ["l3_stability"]
    assert proof["missing_required"] == ["l3_stability"]
    assert "l3_stability" in proof["layers_unavailable"]
    assert proof["tier"] == "no_model" and proof["epistemic_limits"] == EPISTEMIC_LIMITS


def test_a_deployment_requiring_l2_still_authorizes_a_verified_answer(
        run: Run, tmp_path: Path) -> None:  # noqa: F811
    cli = _workspace(run, tmp_path, 'required_layers = ["L2"]')
    answer, record = _ask(cli, "What is the nightly hotel limit?")
    assert answer["output_state"] == "AUTHORIZED", answer
    assert record["proof"]["missing_required"] == []


def test_a_record_refused_before_verification_states_its_proof_too(
        run: Run, tmp_path: Path) -> None:  # noqa: F811
    cli = _workspace(run, tmp_path, 'required_layers = ["L3"]')
    answer, record = _ask(cli, "What does Northwind charge for travel insurance?")
    assert answer["output_state"] == "BLOCKED"
    proof = record["proof"]
    assert proof["layers_ran"] == [] and proof["missing_required"] == ["l3_stability"]
    assert proof["layers_unavailable"]["l3_stability"].startswith("no claim was verified")
    assert proof["epistemic_limits"] == EPISTEMIC_LIMITS
