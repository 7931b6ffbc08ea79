"""Pass 3: each claim checked layer by layer; every layer independent and recorded.

Layers, each recorded as evaluated or unavailable with the reason:

* ``citation``: the claim cites at least one evidence item that was in the prompt;
* ``l2_atoms``: every atom of the claim appears, normalized, in the cited evidence; a number
  or date whose controlling noun appears in the evidence with a *different* number or date
  (and not with the claimed one) is a contradiction;
* ``l2_coverage``: the share of the claim's content terms found in the cited evidence;
* ``l2_polarity``: the claim does not reverse the direction or negation of the evidence
  sentences that best match it (:mod:`affidavit.answer.verify.support`);
* ``embedding``: the best cosine similarity between the claim and a cited evidence sentence,
  when a sentence encoder is given;
* ``l1_confidence``, ``contrastive``, ``l3_stability``, ``l4_representation``, ``nli``:
  model signals handed in as :class:`~affidavit.llm.layers.LayerInput` values.

Composite status: L2 decides between VERIFIED, PARTIALLY_VERIFIED and UNVERIFIED (REFUSED
for a claim that says the evidence does not cover something). A claim L2 verifies stays
VERIFIED only if no available layer says otherwise: a layer below its named threshold
lowers it to PARTIALLY_VERIFIED with a reason. No layer can raise a status.

An uncited claim is checked for contradictions against all the evidence it could have
cited, so that an unsupported number that the evidence disputes is still caught.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from affidavit.answer.verify.support import (
    AtomCheck,
    EvidenceSource,
    check_atoms,
    coverage,
    missing_names,
    polarity_conflict,
    read_source,
    same_fact,
)
from affidavit.errors import InputRejected
from affidavit.llm.claims import Claim
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.layers import (
    CONTRASTIVE,
    EMBEDDING,
    L1_CONFIDENCE,
    L3_STABILITY,
    L4_REPRESENTATION,
    MODEL_LAYERS,
    NLI,
    LayerInput,
)

VERIFIED = "VERIFIED"
PARTIALLY_VERIFIED = "PARTIALLY_VERIFIED"
UNVERIFIED = "UNVERIFIED"
REFUSED = "REFUSED"

L1_MIN_MEAN_PROB = 0.4
"""A claim whose tokens have a mean probability below this was written while guessing."""
CONTRASTIVE_MIN_DELTA = 0.0
"""Δ at or below this: the evidence did not make the claim more likely."""
STABILITY_MIN_AGREEMENT = 0.5
"""A claim that reappears in fewer than this share of draws is not stable."""
L4_MIN_AGREEMENT = 0.9
"""A claim whose hidden states match no sentence of the draws this well did not reproduce
inside the model. Mean-pooled hidden states of a decoder are all alike (SmolLM2-135M: about
0.85 between unrelated sentences, 0.96 between paraphrases), hence a floor this high."""
EMBEDDING_MIN_SIMILARITY = 0.5
"""Best claim-to-evidence-sentence cosine below this: the evidence is about something else."""
NLI_MIN_ENTAILMENT = 0.5
"""Entailment probability below this: the cited evidence does not entail the claim (for an
``nli`` input without labels; a labelled one is decided by its label)."""
NLI_CONTRADICT = "CONTRADICT"
NLI_NEUTRAL = "NEUTRAL"

_LAYER_FLOORS = {
    L1_CONFIDENCE: (L1_MIN_MEAN_PROB, "LOW_TOKEN_CONFIDENCE"),
    CONTRASTIVE: (CONTRASTIVE_MIN_DELTA, "EVIDENCE_NOT_INFLUENTIAL"),
    L3_STABILITY: (STABILITY_MIN_AGREEMENT, "UNSTABLE_CLAIM"),
    L4_REPRESENTATION: (L4_MIN_AGREEMENT, "UNSTABLE_REPRESENTATION"),
    EMBEDDING: (EMBEDDING_MIN_SIMILARITY, "LOW_EMBEDDING_SIMILARITY"),
    NLI: (NLI_MIN_ENTAILMENT, "NOT_ENTAILED"),
}

UNAVAILABLE_LAYERS = MODEL_LAYERS
"""Layers that are recorded unavailable unless their inputs are given."""

_REFUSAL = re.compile(
    r"\b(?:the|this|that|provided|available|supplied)\s+(?:evidence|sources?|context|documents?)"
    r"\s+(?:does|do|did)\s*(?:not|n't)\s+"
    r"|\bnot\s+(?:stated|specified|covered|mentioned|addressed)\s+in\s+the\s+"
    r"(?:evidence|sources?|context|documents?)"
    r"|\b(?:insufficient|no)\s+evidence\b|\bcannot\s+(?:be\s+)?(?:answered|determined)\b"
    r"|证据(?:中)?(?:未|没有)|没有(?:相关)?证据|无法(?:回答|确定)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class LayerResult:
    """One verification layer's signal for one claim."""

    name: str
    available: bool
    score: float | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"name": self.name, "available": self.available, "score": self.score,
                "detail": self.detail}


@dataclass(frozen=True)
class ClaimVerdict:
    """The composite status of one claim, with every layer's signal."""

    claim: Claim
    status: str
    support: float
    contradicted: bool
    reasons: tuple[str, ...]
    layers: Mapping[str, LayerResult] = field(hash=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"claim": self.claim.to_dict(), "status": self.status, "support": self.support,
                "contradicted": self.contradicted, "reasons": list(self.reasons),
                "layers": {name: layer.to_dict() for name, layer in self.layers.items()}}


class SentenceEncoder(Protocol):
    """Anything that turns sentences into vectors (an embedding backend)."""

    def encode(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One vector per text, in order."""
        ...


def is_refusal(text: str) -> bool:
    """Whether a claim says what the evidence does not cover instead of asserting a fact."""
    return bool(_REFUSAL.search(text))


def verify_claims(
    claims: Sequence[Claim],
    evidence: Mapping[str, EvidenceItem],
    *,
    threshold: float = 0.6,
    token_logprobs: Sequence[float] | None = None,
    layer_inputs: Sequence[LayerInput] = (),
    encoder: SentenceEncoder | None = None,
) -> tuple[ClaimVerdict, ...]:
    """Verify each claim against the evidence items (keyed by src tag) it cites.

    ``layer_inputs`` carry the model layers' scores (L1, Δ, L3, NLI); ``encoder`` enables
    the embedding layer. ``token_logprobs`` is accepted for older callers and only changes
    the reason recorded for an L1 layer that was not given.
    """
    if not 0.0 < threshold <= 1.0:
        raise InputRejected("INVALID_THRESHOLD", f"threshold must be in (0, 1]: {threshold}")
    given = _layers_by_name(layer_inputs)
    if encoder is not None:
        if EMBEDDING in given:
            raise InputRejected("DUPLICATE_LAYER", "embedding given both as input and encoder")
        given[EMBEDDING] = embedding_layer(claims, evidence, encoder)
    model_layers = _model_layers(given, token_logprobs)
    sources = {src.lower(): read_source(item) for src, item in sorted(evidence.items())}
    return tuple(_verify(claim, sources, threshold, model_layers) for claim in claims)


def _layers_by_name(layer_inputs: Sequence[LayerInput]) -> dict[str, LayerInput]:
    by_name: dict[str, LayerInput] = {}
    for layer in layer_inputs:
        if layer.name in by_name:
            raise InputRejected("DUPLICATE_LAYER", f"layer {layer.name} given twice")
        by_name[layer.name] = layer
    return by_name


def _model_layers(given: Mapping[str, LayerInput],
                  token_logprobs: Sequence[float] | None) -> dict[str, LayerInput]:
    logprob_reason = ("provider returned no log-probabilities" if token_logprobs is None
                      else "log-probability scoring not configured")
    defaults = {L1_CONFIDENCE: logprob_reason, CONTRASTIVE: logprob_reason}
    return {name: given.get(name) or LayerInput.missing(name, defaults.get(name, "not configured"))
            for name in MODEL_LAYERS}


def _verify(claim: Claim, sources: Mapping[str, EvidenceSource], threshold: float,
            model_layers: Mapping[str, LayerInput]) -> ClaimVerdict:
    cited = [c for c in claim.citations if c in sources]
    cited_sources = [sources[c] for c in cited]
    check = check_atoms(claim, cited_sources or list(sources.values()))
    polarity = polarity_conflict(claim.text, cited_sources) if cited_sources else ""
    names = missing_names(claim.text, cited_sources) if cited_sources else ()
    layers: dict[str, LayerResult] = {
        "citation": _citation_layer(claim, cited),
        "l2_atoms": _atoms_layer(claim, cited_sources, check),
        "l2_coverage": _coverage_layer(claim, cited_sources),
        "l2_polarity": _polarity_layer(cited_sources, polarity),
    }
    layers.update({name: _model_layer(layer, claim.index)
                   for name, layer in model_layers.items()})
    support = layers["l2_coverage"].score or 0.0
    status, reasons = _l2_status(claim, bool(cited), check, support, threshold,
                                 polarity, names)
    nli = model_layers[NLI]
    status, reasons = _fold_model_layers(status, reasons, layers,
                                         labelled=claim.index in nli.labels)
    status, reasons, refuted = _fold_nli(status, reasons, nli, claim.index)
    return ClaimVerdict(
        claim=claim,
        status=status,
        support=round(support, 6),
        contradicted=(bool(check.contradictions) or refuted) and status != REFUSED,
        reasons=reasons,
        layers=MappingProxyType(layers),
    )


def _l2_status(claim: Claim, cited: bool, check: AtomCheck, support: float, threshold: float,
               polarity: str, names: tuple[str, ...] = ()) -> tuple[str, tuple[str, ...]]:
    if is_refusal(claim.text):
        return REFUSED, ("REFUSAL",)
    reasons: list[str] = []
    if not cited:
        reasons.append("NO_VALID_CITATION")
    reasons.extend(check.contradictions)
    reasons.extend(f"ATOM_NOT_IN_EVIDENCE:{a.kind}:{a.value}" for a in check.missing)
    if support < threshold:
        reasons.append(f"LOW_COVERAGE:{support:.3f}")
    if polarity:
        reasons.append(polarity)
    reasons.extend(f"NAME_NOT_IN_EVIDENCE:{name}" for name in names)
    if check.contradictions or not cited:
        return UNVERIFIED, tuple(reasons)
    if not check.missing and support >= threshold and not polarity and not names:
        return VERIFIED, tuple(reasons)
    if support >= threshold / 2:
        return PARTIALLY_VERIFIED, tuple(reasons)
    return UNVERIFIED, tuple(reasons)


def _fold_model_layers(status: str, reasons: tuple[str, ...],
                       layers: Mapping[str, LayerResult], *,
                       labelled: bool = False) -> tuple[str, tuple[str, ...]]:
    """Add a reason for every available model layer below its floor; such a layer lowers
    VERIFIED to PARTIALLY_VERIFIED. Layers never raise a status. An ``nli`` layer that
    labelled the claim is decided by its label (:func:`_fold_nli`), not by this floor."""
    if status == REFUSED:
        return status, reasons
    found = list(reasons)
    for name in MODEL_LAYERS:
        if name == NLI and labelled:
            continue
        layer = layers[name]
        floor, code = _LAYER_FLOORS[name]
        if layer.available and layer.score is not None and _below(name, layer.score, floor):
            found.append(f"{code}:{layer.score:.3f}")
    lowered = len(found) > len(reasons)
    if lowered and status == VERIFIED:
        status = PARTIALLY_VERIFIED
    return status, tuple(found)


def _fold_nli(status: str, reasons: tuple[str, ...], nli: LayerInput,
              index: int) -> tuple[str, tuple[str, ...], bool]:
    """The trained verifier's label: CONTRADICT (above its calibrated confidence) makes the
    claim UNVERIFIED and contradicted; NEUTRAL lowers VERIFIED to PARTIALLY_VERIFIED;
    SUPPORT changes nothing. The status only ever goes down."""
    label = nli.labels.get(index)
    if status == REFUSED or label is None or index not in nli.scores:
        return status, reasons, False
    if label == NLI_CONTRADICT:
        return UNVERIFIED, (*reasons, "NLI_CONTRADICTION"), True
    if label == NLI_NEUTRAL:
        lowered = PARTIALLY_VERIFIED if status == VERIFIED else status
        return lowered, (*reasons, f"NOT_ENTAILED:{nli.scores[index]:.3f}"), False
    return status, reasons, False


def _below(name: str, score: float, floor: float) -> bool:
    # Δ at exactly zero means "no influence", so the contrastive floor is inclusive.
    return score <= floor if name == CONTRASTIVE else score < floor


# --------------------------------------------------------------------------- layers


def _citation_layer(claim: Claim, cited: list[str]) -> LayerResult:
    unknown = [c for c in claim.citations if c not in cited]
    detail = f"cited: {', '.join(cited) or '-'}; not in prompt: {', '.join(unknown) or '-'}"
    return LayerResult("citation", True, 1.0 if cited else 0.0, detail)


def _atoms_layer(claim: Claim, cited: list[EvidenceSource], check: AtomCheck) -> LayerResult:
    if not cited:
        return LayerResult("l2_atoms", False, None, "claim cites no evidence from the prompt")
    if not claim.atoms:
        return LayerResult("l2_atoms", True, 1.0, "claim has no atoms")
    found = len(claim.atoms) - len(check.missing)
    detail = f"{found}/{len(claim.atoms)} atoms in cited evidence"
    if check.contradictions:
        detail += "; " + "; ".join(check.contradictions)
    return LayerResult("l2_atoms", True, round(found / len(claim.atoms), 6), detail)


def _coverage_layer(claim: Claim, cited: list[EvidenceSource]) -> LayerResult:
    if not cited:
        return LayerResult("l2_coverage", False, None, "claim cites no evidence from the prompt")
    score, missing, total = coverage(claim.text, cited)
    if not total:
        return LayerResult("l2_coverage", True, 0.0, "claim has no content terms")
    detail = f"{total - len(missing)}/{total} content terms in cited evidence"
    if missing:
        detail += f"; missing: {', '.join(missing[:12])}"
    return LayerResult("l2_coverage", True, round(score, 6), detail)


def _polarity_layer(cited: list[EvidenceSource], conflict: str) -> LayerResult:
    if not cited:
        return LayerResult("l2_polarity", False, None, "claim cites no evidence from the prompt")
    if conflict:
        return LayerResult("l2_polarity", True, 0.0, conflict)
    return LayerResult("l2_polarity", True, 1.0, "no reversal of the best-matching evidence")


def _model_layer(layer: LayerInput, index: int) -> LayerResult:
    if layer.unavailable:
        return LayerResult(layer.name, False, None, layer.unavailable)
    if index not in layer.scores:
        return LayerResult(layer.name, False, None, "claim not scored by this layer")
    return LayerResult(layer.name, True, layer.scores[index], layer.details.get(index, ""))


def embedding_layer(claims: Sequence[Claim], evidence: Mapping[str, EvidenceItem],
                    encoder: SentenceEncoder) -> LayerInput:
    """Per claim, the best cosine similarity to a sentence of the evidence it cites."""
    sources = {src.lower(): read_source(item) for src, item in sorted(evidence.items())}
    scores: dict[int, float] = {}
    details: dict[int, str] = {}
    for claim in claims:
        sentences = [s.text for c in claim.citations if c in sources
                     for s in sources[c].sentences]
        if not sentences:
            continue
        vectors = encoder.encode([claim.text, *sentences])
        best = max(_cosine(vectors[0], vector) for vector in vectors[1:])
        scores[claim.index] = round(best, 6)
        details[claim.index] = f"best of {len(sentences)} cited sentences"
    return LayerInput(EMBEDDING, scores, details)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


__all__ = [
    "CONTRASTIVE_MIN_DELTA",
    "EMBEDDING_MIN_SIMILARITY",
    "L1_MIN_MEAN_PROB",
    "L4_MIN_AGREEMENT",
    "NLI_MIN_ENTAILMENT",
    "PARTIALLY_VERIFIED",
    "REFUSED",
    "STABILITY_MIN_AGREEMENT",
    "UNVERIFIED",
    "VERIFIED",
    "ClaimVerdict",
    "LayerResult",
    "SentenceEncoder",
    "embedding_layer",
    "is_refusal",
    "same_fact",
    "verify_claims",
]
