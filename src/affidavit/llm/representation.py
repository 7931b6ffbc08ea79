"""L4 representation stability: whether the model's internal state for a claim reproduces
across seeded draws (spec 003: self-hosted tiers only, since it reads hidden states).

A provider that runs the model in process offers ``represent(texts)``: one vector per text,
the mean of the model's final-layer hidden states over the text's tokens. For each claim
(citation tags removed) and each stability draw, the layer takes the best cosine between
the claim's vector and the vectors of the draw's sentences; the claim's score is the mean
over draws. Surface wording can change between draws while the representation stays put
(paraphrase), and a confident-looking token stream can sit on a representation that moves:
this is the signal L1 and L3 cannot give. Deterministic given the draws and the model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from affidavit.llm.citations import LOOSE_SRC_PATTERN, canonical_tags
from affidavit.llm.claims import Claim
from affidavit.llm.layers import L4_REPRESENTATION, LayerInput
from affidavit.llm.providers import LLMProvider, strip_think_blocks
from affidavit.llm.text import _sentence_spans, normalize_space

NO_HIDDEN_STATES = "provider exposes no hidden states (self-hosted models only)"


@runtime_checkable
class RepresentingProvider(LLMProvider, Protocol):
    """A provider that can read its model's hidden states (a model run in process)."""

    def represent(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One vector per text: the mean of the final-layer hidden states of its tokens."""
        ...


def claim_text(claim: Claim) -> str:
    """The claim as the model's representation should see it: no citation tags."""
    return normalize_space(LOOSE_SRC_PATTERN.sub(" ", claim.text))


def draw_sentences(draw: str) -> list[str]:
    """The visible sentences of a raw draw, citation tags (disguised ones too) removed."""
    text = LOOSE_SRC_PATTERN.sub(" ", canonical_tags(strip_think_blocks(draw)))
    found = [normalize_space(text[start:end]) for start, end in _sentence_spans(text)]
    return [sentence for sentence in found if sentence]


def representation_layer(claims: Sequence[Claim], draws: Sequence[str],
                         represent: RepresentingProvider) -> LayerInput:
    """The L4 layer: per claim, the mean over draws of its best hidden-state cosine to a
    sentence of the draw (a draw with no sentence counts 0). Pass a guarded provider."""
    if not draws:
        return LayerInput.missing(L4_REPRESENTATION, "no stability draws configured")
    per_draw = [draw_sentences(draw) for draw in draws]
    texts = [claim_text(claim) for claim in claims] + [s for found in per_draw for s in found]
    vectors = represent.represent(texts)
    claim_vectors = vectors[: len(claims)]
    scores: dict[int, float] = {}
    details: dict[int, str] = {}
    for claim, vector in zip(claims, claim_vectors, strict=True):
        best: list[float] = []
        cursor = len(claims)
        for found in per_draw:
            sentence_vectors = vectors[cursor : cursor + len(found)]
            cursor += len(found)
            best.append(max((cosine(vector, other) for other in sentence_vectors), default=0.0))
        scores[claim.index] = round(math.fsum(best) / len(best), 6)
        details[claim.index] = (f"hidden-state cosine to the closest sentence of each of "
                                f"{len(draws)} draws; lowest {min(best):.3f}")
    return LayerInput(L4_REPRESENTATION, scores, details)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is zero."""
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norm == 0.0:
        return 0.0
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm
