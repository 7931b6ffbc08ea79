"""L3 stability: whether each claim reproduces when the model is asked again.

With ``[provider] stability_draws = N``, the same request is generated N more times at a
temperature above zero. A claim *reappears* in a draw when every one of its atoms (numbers,
dates, citations, temporal triggers) is stated in the draw with the same value, and at
least :data:`REAPPEAR_COVERAGE` of its content terms occur in the draw. Its stability score
is the fraction of draws it reappears in. Scoring is deterministic given the draws.
"""

from __future__ import annotations

from collections.abc import Sequence

from affidavit.answer.verify.claims_check import same_fact
from affidavit.errors import InputRejected
from affidavit.llm.atoms import extract_atoms
from affidavit.llm.citations import LOOSE_SRC_PATTERN, canonical_tags
from affidavit.llm.claims import Claim
from affidavit.llm.layers import L3_STABILITY, LayerInput
from affidavit.llm.providers import LLMProvider, ProviderRequest, strip_think_blocks
from affidavit.llm.text import content_terms

STABILITY_TEMPERATURE = 0.7
"""Sampling temperature of the extra draws, unless the provider is already set higher."""
REAPPEAR_COVERAGE = 0.6
"""Share of a claim's content terms a draw must contain for the claim to reappear in it."""
MAX_STABILITY_DRAWS = 16


def draw_temperature(configured: float) -> float:
    """The temperature of stability draws: the configured one if it already samples."""
    return configured if configured > 0.0 else STABILITY_TEMPERATURE


def collect_draws(provider: LLMProvider, request: ProviderRequest, draws: int,
                  temperature: float) -> tuple[str, ...]:
    """``draws`` more responses to ``request`` at ``temperature`` (pass a guarded provider)."""
    if not 0 <= draws <= MAX_STABILITY_DRAWS:
        raise InputRejected("INVALID_STABILITY_DRAWS",
                            f"stability draws must be between 0 and {MAX_STABILITY_DRAWS}")
    sampled = ProviderRequest(request.prompt, request.max_sentences, temperature=temperature)
    return tuple(provider.generate(sampled).text for _ in range(draws))


def reappears(claim: Claim, draw: str) -> bool:
    """Whether ``claim`` is restated in ``draw`` (a raw response)."""
    # Tags disguised in a draw are tags too, not facts it states.
    text = LOOSE_SRC_PATTERN.sub(" ", canonical_tags(strip_think_blocks(draw)))
    atoms = extract_atoms(text)
    if not all(any(same_fact(mine, theirs) for theirs in atoms) for mine in claim.atoms):
        return False
    terms = set(content_terms(claim.text))
    if not terms:
        return True
    return len(terms & set(content_terms(text))) / len(terms) >= REAPPEAR_COVERAGE


def stability_layer(claims: Sequence[Claim], draws: Sequence[str]) -> LayerInput:
    """The L3 layer: per claim, the fraction of ``draws`` it reappears in."""
    if not draws:
        return LayerInput.missing(L3_STABILITY, "no stability draws configured")
    scores: dict[int, float] = {}
    details: dict[int, str] = {}
    for claim in claims:
        hits = sum(1 for draw in draws if reappears(claim, draw))
        scores[claim.index] = round(hits / len(draws), 6)
        details[claim.index] = f"reappears in {hits}/{len(draws)} draws"
    return LayerInput(L3_STABILITY, scores, details)
