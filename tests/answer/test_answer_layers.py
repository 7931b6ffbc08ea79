"""Model layers as pure functions: token alignment, Δ, stability, and how they fold into
a claim's status."""

from __future__ import annotations

import math

import pytest

from affidavit.answer import stability_layer, verify_claims
from affidavit.errors import InputRejected
from affidavit.llm.attribution import (
    TokenScores,
    claim_segments,
    confidence_layer,
    derived_offsets,
    span_score,
)
from affidavit.llm.claims import extract_claims
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.layers import LayerInput
from affidavit.llm.providers import ThinkStreamFilter, strip_think_blocks

EVIDENCE = {"b2c3d4e5": EvidenceItem("b2c3d4e5", "b2c3d4e5" + "0" * 56, "n", "Policy", "",
                                     "Access rights are reviewed quarterly by the owner.",
                                     "INTERNAL")}
ANSWER = "Access rights are reviewed quarterly [src:b2c3d4e5]."


def test_claim_segments_leave_out_citation_tags() -> None:
    (claim,) = extract_claims(ANSWER)
    assert [ANSWER[s:e] for s, e in claim_segments(ANSWER, claim)] == [
        "Access rights are reviewed quarterly", "."]


def test_span_score_takes_tokens_overlapping_the_segments() -> None:
    scores = TokenScores.from_tokens(["Acc", "ess", " rights", " [src", ":x]"],
                                     [None, -1.0, -0.5, -4.0, -4.0])
    score = span_score(scores, [(0, 13)])
    assert score is not None and score.token_count == 2
    assert score.logprob_sum == -1.5 and score.min_prob == pytest.approx(math.exp(-1.0))
    assert span_score(scores, [(0, 3)]) is None  # only the unscored first token


def test_offsets_that_go_backwards_are_rejected() -> None:
    with pytest.raises(InputRejected):
        TokenScores(("a", "b"), (-1.0, -1.0), (3, 1))


def test_derived_offsets_prefer_the_answer_over_a_repeated_think_block() -> None:
    raw = "<think>Access rights.</think>Access rights."
    mapping = derived_offsets(raw, strip_think_blocks(raw))
    assert mapping[0] == raw.index("</think>") + len("</think>")


def test_confidence_layer_scores_each_claim() -> None:
    claims = extract_claims(ANSWER)
    scores = TokenScores.from_tokens([ANSWER[:20], ANSWER[20:]], [-0.1, -0.2])
    layer = confidence_layer(claims, ANSWER, scores)
    assert layer.scores[0] == pytest.approx((math.exp(-0.1) + math.exp(-0.2)) / 2, abs=1e-6)


def test_stability_counts_draws_that_restate_the_claim() -> None:
    claims = extract_claims("Backups run within 24 hours [src:b2c3d4e5].")
    layer = stability_layer(claims, ["Backups run within 24 hours.", "Backups run within 48 "
                                     "hours.", "<think>Backups run within 24 hours</think>No."])
    assert layer.scores[0] == pytest.approx(1 / 3)
    assert stability_layer(claims, []).unavailable


@pytest.mark.parametrize(("layer", "reason"), [
    (LayerInput("l1_confidence", {0: 0.2}), "LOW_TOKEN_CONFIDENCE:0.200"),
    (LayerInput("contrastive", {0: -0.4}), "EVIDENCE_NOT_INFLUENTIAL:-0.400"),
    (LayerInput("l3_stability", {0: 0.25}), "UNSTABLE_CLAIM:0.250"),
    (LayerInput("nli", {0: 0.1}), "NOT_ENTAILED:0.100"),
])
def test_a_dissenting_layer_lowers_verified_to_partial(layer: LayerInput, reason: str) -> None:
    (verdict,) = verify_claims(extract_claims(ANSWER), EVIDENCE, layer_inputs=[layer])
    assert verdict.status == "PARTIALLY_VERIFIED" and reason in verdict.reasons
    assert verdict.layers[layer.name].available


def test_agreeing_layers_keep_verified_and_missing_ones_say_why() -> None:
    layers = [LayerInput("l1_confidence", {0: 0.9}), LayerInput("contrastive", {0: 3.0}),
              LayerInput.missing("l3_stability", "no stability draws configured")]
    (verdict,) = verify_claims(extract_claims(ANSWER), EVIDENCE, layer_inputs=layers)
    assert verdict.status == "VERIFIED"
    assert verdict.layers["l3_stability"].detail == "no stability draws configured"
    assert not verdict.layers["embedding"].available


def test_layers_never_raise_a_status() -> None:
    (verdict,) = verify_claims(extract_claims("Passwords are deleted daily [src:b2c3d4e5]."),
                               EVIDENCE, layer_inputs=[LayerInput("contrastive", {0: 9.0})])
    assert verdict.status != "VERIFIED"


def test_layer_inputs_round_trip_and_reject_bad_names() -> None:
    layer = LayerInput("contrastive", {1: 0.5, 0: -1.0}, {0: "x"})
    assert LayerInput.from_dict(layer.to_dict()) == layer
    with pytest.raises(InputRejected):
        LayerInput("l4_volatility", {0: 1.0})
    with pytest.raises(InputRejected):
        verify_claims((), EVIDENCE, layer_inputs=[layer, layer])


def test_polarity_reversal_is_not_verified() -> None:
    (verdict,) = verify_claims(
        extract_claims("Access rights are not reviewed quarterly by the owner [src:b2c3d4e5]."),
        EVIDENCE)
    assert verdict.status == "PARTIALLY_VERIFIED"
    assert "POLARITY_MISMATCH:negation" in verdict.reasons


@pytest.mark.parametrize("cut", range(1, 30))
def test_think_filter_never_leaks_whatever_the_chunking(cut: int) -> None:
    raw = "<think>secret</think>  The answer <b> is 5 < 6.<THINK a=1>more</Think >!"
    pieces = [raw[i : i + cut] for i in range(0, len(raw), cut)]
    stream = ThinkStreamFilter()
    out = "".join(stream.feed(p) for p in pieces) + stream.close()
    assert out == "The answer <b> is 5 < 6.!"
    assert not stream.orphan_close
