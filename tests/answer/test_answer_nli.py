"""The trained entailment layer (``nli``): its label can only lower a claim's status, it is
recorded (and replayed) with its labels, it loads offline and scores deterministically,
it reads only the evidence a claim cites, and without its runtime it is recorded
unavailable, never an error.

The tests marked ``nli`` run the packaged cross-encoder, which needs the ``nli`` extra
(onnxruntime, tokenizers); they are skipped with the reason when it is missing, and fail
under ``CI=true``, where it must be installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from affidavit.answer.verify.check import check_claim
from affidavit.answer.verify.claims_check import (
    PARTIALLY_VERIFIED,
    REFUSED,
    UNVERIFIED,
    VERIFIED,
    verify_claims,
)
from affidavit.answer.verify.nli import (
    CLASSES,
    MODEL_FILE,
    SETTINGS_FILE,
    TOKENIZER_FILE,
    NliVerifier,
    checked_layer,
    load_encoder,
    load_verifier,
    model_digest,
    nli_input,
    nli_inputs,
    premise_units,
    split_sentences,
)
from affidavit.llm.claims import Claim, extract_claims
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.layers import NLI, LayerInput

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "affidavit" / "answer"
SRC = "a1b2c3d4"
OTHER = "e5f6a7b8"
EVIDENCE = {SRC: EvidenceItem(SRC, SRC + "0" * 56, "n1", "Travel policy", "",
                              "The nightly hotel limit in London is GBP 185. Breakfast is "
                              "not included in the hotel limit.", "PUBLIC")}
RANK = {REFUSED: -1, UNVERIFIED: 0, PARTIALLY_VERIFIED: 1, VERIFIED: 2}


def _verified_claims() -> tuple[Claim, ...]:
    return extract_claims(f"The nightly hotel limit in London is GBP 185 [src:{SRC}]. "
                          f"Hotels in Paris cost nothing at all [src:{SRC}].")


def _verifier() -> NliVerifier:
    """The packaged verifier; skipped without the nli extra, failed under CI."""
    verifier = load_verifier()
    if isinstance(verifier, str):
        if os.environ.get("CI") == "true":
            pytest.fail(f"the nli tests cannot run under CI: {verifier}")
        pytest.skip(f"the nli layer is unavailable here: {verifier}")
    return verifier


def _labelled(label: str, claims: int = 2) -> LayerInput:
    indexes = range(claims)
    return LayerInput(NLI, dict.fromkeys(indexes, 0.5), dict.fromkeys(indexes, label),
                      labels=dict.fromkeys(indexes, label))


def test_a_contradict_label_makes_the_claim_unverified_and_contradicted() -> None:
    first = verify_claims(_verified_claims(), EVIDENCE, layer_inputs=[_labelled("CONTRADICT")])[0]
    assert first.status == UNVERIFIED and first.contradicted is True
    assert "NLI_CONTRADICTION" in first.reasons


def test_a_neutral_label_lowers_verified_to_partially_verified() -> None:
    first = verify_claims(_verified_claims(), EVIDENCE, layer_inputs=[_labelled("NEUTRAL")])[0]
    assert first.status == PARTIALLY_VERIFIED and not first.contradicted
    assert "NOT_ENTAILED:0.500" in first.reasons


@pytest.mark.parametrize("label", CLASSES)
def test_no_nli_label_ever_raises_a_status(label: str) -> None:
    claims = _verified_claims()
    before = verify_claims(claims, EVIDENCE)
    after = verify_claims(claims, EVIDENCE, layer_inputs=[_labelled(label)])
    assert [v.status for v in before] == [VERIFIED, UNVERIFIED]
    for old, new in zip(before, after, strict=True):
        assert RANK[new.status] <= RANK[old.status]
    # SUPPORT does not lift the unsupported Paris claim.
    assert after[1].status == UNVERIFIED


def test_a_support_label_keeps_a_verified_claim_verified_even_below_the_plain_floor() -> None:
    # A labelled layer is decided by its label; the 0.5 floor is only for unlabelled inputs.
    layer = LayerInput(NLI, {0: 0.3}, {0: "SUPPORT"}, labels={0: "SUPPORT"})
    assert verify_claims(_verified_claims()[:1], EVIDENCE, layer_inputs=[layer])[0].status \
        == VERIFIED
    plain = LayerInput(NLI, {0: 0.3}, {0: "entailment 0.3"})
    assert verify_claims(_verified_claims()[:1], EVIDENCE, layer_inputs=[plain])[0].status \
        == PARTIALLY_VERIFIED


def test_labels_are_recorded_and_replayed_and_unlabelled_records_keep_their_shape() -> None:
    layer = _labelled("CONTRADICT")
    assert LayerInput.from_dict(json.loads(json.dumps(layer.to_dict()))) == layer
    assert dict(LayerInput.from_dict(layer.to_dict()).labels) == {0: "CONTRADICT",
                                                                  1: "CONTRADICT"}
    assert "labels" not in LayerInput(NLI, {0: 0.9}, {0: "x"}).to_dict()


def test_the_premise_is_the_sentences_sharing_most_terms_joined_in_order() -> None:
    sentences = ["Trains run hourly.", "The hotel limit is GBP 185.", "Taxis need receipts.",
                 "London hotels are expensive.", "The limit applies in London."]
    assert premise_units("The hotel limit in London is GBP 185.", sentences) == [
        "The hotel limit is GBP 185. London hotels are expensive. The limit applies in London."]
    assert premise_units("x", ["Only one sentence."]) == ["Only one sentence."]
    assert premise_units("x", ["  ", ""]) == []


def test_the_shipped_model_is_the_one_its_thresholds_were_calibrated_for() -> None:
    settings = json.loads((PACKAGE / SETTINGS_FILE).read_text(encoding="utf-8"))
    assert settings["version"] == model_digest(PACKAGE / MODEL_FILE)
    assert 0.0 < settings["support_threshold"] < 1.0
    assert 0.0 < settings["contradict_threshold"] <= 1.0


def test_the_model_files_ship_in_the_wheel_and_stay_under_50_mb() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["affidavit"]
    for name in (MODEL_FILE, TOKENIZER_FILE, SETTINGS_FILE, "nli_cross.NOTICE.md"):
        assert f"answer/{name}" in shipped and (PACKAGE / name).is_file()
    assert (PACKAGE / MODEL_FILE).stat().st_size <= 50 * 1024 * 1024
    assert pyproject["project"]["optional-dependencies"]["nli"]


@pytest.mark.nli
def test_the_model_loads_offline_and_scores_deterministically() -> None:
    verifier = _verifier()
    claims = _verified_claims()
    first = verifier.layer(claims, EVIDENCE)
    second = nli_input(claims, EVIDENCE)
    assert first == second and first.to_dict() == second.to_dict()
    assert set(first.labels.values()) <= set(CLASSES) and set(first.scores) == {0, 1}
    assert all(0.0 <= s <= 1.0 for s in first.scores.values())
    # A claim's scores do not depend on the claims checked with it.
    alone = verifier.layer(claims[1:], EVIDENCE)
    assert alone.scores[1] == first.scores[1] and alone.details[1] == first.details[1]


@pytest.mark.nli
def test_claims_scored_side_by_side_give_the_bytes_they_give_one_by_one() -> None:
    # Several claims run on one-thread sessions in parallel, one claim on the two-thread
    # session: each claim is its own batch, so the path must not change a bit.
    verifier = _verifier()
    evidence = split_sentences(EVIDENCE[SRC].text)
    items = [("The nightly hotel limit in London is GBP 250.", evidence),
             ("Breakfast is included in the hotel limit.", evidence),
             ("Hotels in Paris cost nothing at all.", evidence),
             ("The limit is GBP 185 a night in London.", evidence),
             ("No evidence here.", [])]
    together = verifier.score_many(items)
    assert together[4] is None
    for (claim, sentences), joint in zip(items, together, strict=True):
        assert verifier.score(claim, sentences) == joint
    layers = nli_inputs([(_verified_claims(), EVIDENCE), ((), EVIDENCE),
                         (_verified_claims()[1:], EVIDENCE)])
    assert layers[0] == nli_input(_verified_claims(), EVIDENCE)
    assert layers[1].unavailable == "the answer has no claims"
    assert layers[2].scores == {1: layers[0].scores[1]}


@pytest.mark.nli
def test_a_claim_longer_than_the_model_window_is_scored_not_failed() -> None:
    verifier = _verifier()
    claim = " ".join(["The nightly hotel limit in London is GBP 185 for every traveller"] * 30)
    score = verifier.score(claim, ["The nightly hotel limit in London is GBP 185."])
    assert score is not None and 0.0 <= score.support <= 1.0


@pytest.mark.nli
def test_a_runtime_failure_records_the_layer_unavailable_without_the_text() -> None:
    verifier = _verifier()
    folder = Path(str(resources.files("affidavit.answer")))
    encoder = load_encoder(folder / MODEL_FILE, folder / TOKENIZER_FILE)
    encoder.tokenizer.no_truncation()  # past 512 positions the model itself refuses
    broken = NliVerifier(encoder, verifier.thresholds)
    secret = "Tarnwick " * 700
    claims = extract_claims(f"{secret}costs GBP 185 [src:a1b2c3d4].")
    layer = checked_layer(broken, claims, EVIDENCE)
    assert layer.unavailable and "nli model failed" in layer.unavailable
    assert "Tarnwick" not in str(layer.to_dict())


@pytest.mark.nli
@pytest.mark.parametrize("quote", ["Printers closing notes.", "printers   closing notes"])
def test_a_claim_quoting_a_sentence_of_its_evidence_is_supported(quote: str) -> None:
    verifier = _verifier()
    sentences = ["Printers closing notes.", "The board meets in spring."]
    score = verifier.score(quote, sentences)
    assert score is not None and score.label == "SUPPORT"
    changed = verifier.score("Printers closing notes are late.", sentences)
    assert changed is not None and changed.support < 1.0


CHANGED = [
    ("The nightly hotel limit in London is GBP 185.",
     "The nightly hotel limit in London is GBP 250."),
    ("Breakfast is not included in the hotel limit.",
     "Breakfast is included in the hotel limit."),
]


@pytest.mark.nli
@pytest.mark.parametrize(("stated", "changed"), CHANGED)
def test_a_changed_number_or_a_dropped_negation_is_not_verified(stated: str,
                                                                changed: str) -> None:
    verifier = _verifier()
    same = verifier.score(stated, [stated])
    other = verifier.score(changed, [stated])
    assert same is not None and other is not None
    assert same.label == "SUPPORT"
    assert other.contradict > same.contradict and other.support < same.support
    # With every layer (the atoms and polarity checks beside the model) it is not VERIFIED.
    assert check_claim("c", changed, [stated]).verdict.status != VERIFIED


@pytest.mark.nli
@pytest.mark.parametrize(("stated", "changed"), [
    CHANGED[0],
    pytest.param(*CHANGED[1], marks=pytest.mark.xfail(
        reason="the model alone gives the dropped negation support 0.52 and contradiction "
               "0.46: above the calibrated support threshold (0.29), below the contradiction "
               "one; the polarity layer catches it")),
], ids=["changed number", "dropped negation"])
def test_a_changed_fact_is_not_supported_by_the_model_alone(stated: str, changed: str) -> None:
    other = _verifier().score(changed, [stated])
    assert other is not None and other.label != "SUPPORT"


@pytest.mark.nli
@pytest.mark.xfail(reason="0.70 three-way accuracy on the held NLI dev half: such pairs stay "
                          "below the calibrated contradiction threshold (0.85), so the model "
                          "says NEUTRAL or SUPPORT; the atoms and polarity layers catch them")
@pytest.mark.parametrize(("stated", "changed"), CHANGED)
def test_a_changed_number_or_a_dropped_negation_is_a_contradiction(stated: str,
                                                                   changed: str) -> None:
    verifier = _verifier()
    other = verifier.score(changed, [stated])
    assert other is not None and other.label == "CONTRADICT"


HOTELS = """Hotels MUST be booked through the travel portal, room only, standard room.

Section 4.2. The nightly hotel limit, meaning the maximum room rate per night excluding
breakfast and local taxes, is:

| Location | Maximum per night |
| --- | --- |
| London (inside the M25) | GBP 185 |
| Edinburgh, Manchester, Bristol | GBP 140 |
| Other UK locations | GBP 120 |
| Europe (EU capitals) | EUR 210 |
| New York | USD 340 |
| Other international | GBP 175 |

Section 4.3. A stay above the limit in Section 4.2 requires written pre-approval from the
colleague's Head of Department, recorded in the travel portal before booking.

Section 4.4. Breakfast up to GBP 15 per night may be claimed when it is not included in the
room rate."""


@pytest.mark.nli
def test_a_claim_quoting_one_cited_sentence_is_supported_among_its_neighbours() -> None:
    # The example travel policy: read only inside the joined premise, the quoted sentence
    # was NEUTRAL and lowered the extractive answer to "the nightly hotel limit" to PARTIAL.
    claim = ("Breakfast up to GBP 15 per night may be claimed when it is not included in "
             "the room rate.")
    score = _verifier().score(claim, split_sentences(HOTELS))
    assert score is not None and score.label == "SUPPORT" and score.premises == 1


@pytest.mark.nli
def test_the_trained_layer_never_raises_a_status_the_other_layers_set() -> None:
    _verifier()
    claims = _verified_claims()
    before = verify_claims(claims, EVIDENCE)
    after = verify_claims(claims, EVIDENCE, layer_inputs=[nli_input(claims, EVIDENCE)])
    assert after[1].layers["nli"].available
    for old, new in zip(before, after, strict=True):
        assert RANK[new.status] <= RANK[old.status]


@pytest.mark.nli
def test_the_layer_reads_only_the_evidence_a_claim_cites() -> None:
    verifier = _verifier()
    # Not a verbatim quote of the cited sentence, so the model reads it.
    claims = extract_claims(f"In London the nightly hotel limit is GBP 185 [src:{SRC}].")
    uncited = EvidenceItem(OTHER, OTHER + "0" * 56, "n2", "Old policy", "",
                           "The nightly hotel limit in London is GBP 90.", "RESTRICTED")
    alone = verifier.layer(claims, EVIDENCE)
    beside = verifier.layer(claims, {**EVIDENCE, OTHER: uncited})
    assert alone == beside
    # Read, the uncited sentence would change the scores: the check above can fail.
    read = verifier.score(claims[0].text, [EVIDENCE[SRC].text, uncited.text])
    assert read is not None and read.detail != alone.details[0]


@pytest.mark.nli
def test_the_nli_layer_records_numbers_and_labels_never_evidence_text() -> None:
    verifier = _verifier()
    secret = "RESTRICTED-ZX81-launch-codes"
    evidence = {SRC: EvidenceItem(SRC, SRC + "0" * 56, "n1", "t", "",
                                  f"The vault code is {secret}. The vault opens at 9.",
                                  "RESTRICTED")}
    claims = extract_claims(f"The vault code is {secret} [src:{SRC}].")
    recorded = json.dumps(verifier.layer(claims, evidence).to_dict())
    assert secret not in recorded and "vault" not in recorded


@pytest.mark.nli
def test_check_claim_runs_the_nli_layer_when_the_extra_is_installed() -> None:
    _verifier()
    line = check_claim("c1", "The nightly hotel limit in London is GBP 185.",
                       ["The nightly hotel limit in London is GBP 185."]).to_dict()
    assert line["layers"]["nli"]["available"] is True
    assert line["layers"]["nli"]["detail"].split(":")[0] in CLASSES


@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers"])
def test_without_the_nli_extra_the_layer_is_recorded_unavailable_not_an_error(
        module: str) -> None:
    # A fresh interpreter where the runtime cannot be imported (as when the extra is not
    # installed): the layer is unavailable with the reason, the check runs.
    script = textwrap.dedent(f"""
        import json, sys
        sys.modules[{module!r}] = None
        from affidavit.answer.verify.check import check_claim
        line = check_claim("c1", "The limit is GBP 185.", ["The limit is GBP 185."]).to_dict()
        print(json.dumps(line))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    line = json.loads(done.stdout)
    assert line["status"] == "VERIFIED"
    assert line["layers"]["nli"]["available"] is False
    assert "nli extra" in line["layers"]["nli"]["detail"]
