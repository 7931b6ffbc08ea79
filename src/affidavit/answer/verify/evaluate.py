"""The Pass 3 evaluator shell: the model calls behind L1, contrastive Δ, L3 and L4.

Every call goes through the :class:`~affidavit.llm.guard.GuardedProvider` it is given.
A layer the provider cannot serve, or whose call fails, is returned unavailable with the
reason; the RESTRICTED guard's refusals are never swallowed (fail closed). The advisory
role is evaluated at L1-L2 only (spec 003 §9.1), so it gets no Δ and no stability draws.
L3 and L4 read the same draws: L3 their words, L4 the model's hidden states for them (only
a provider that runs its model in process can offer those).
"""

from __future__ import annotations

from collections.abc import Sequence

from affidavit.answer.verify.stability import collect_draws, draw_temperature, stability_layer
from affidavit.config.settings import ProviderSettings
from affidavit.errors import ProviderError
from affidavit.llm.attribution import TokenScores, confidence_layer, contrastive_layer
from affidavit.llm.claims import Claim
from affidavit.llm.guard import GuardedProvider
from affidavit.llm.layers import (
    CONTRASTIVE,
    L1_CONFIDENCE,
    L3_STABILITY,
    L4_REPRESENTATION,
    LayerInput,
)
from affidavit.llm.providers import ProviderRequest, ProviderResponse
from affidavit.llm.representation import NO_HIDDEN_STATES, representation_layer

ADVISORY_REASON = "not evaluated for the advisory role (L1-L2 only)"


def evaluate_layers(
    provider: GuardedProvider,
    request: ProviderRequest,
    response: ProviderResponse,
    answer: str,
    claims: Sequence[Claim],
    settings: ProviderSettings,
    *,
    role: str,
) -> tuple[LayerInput, ...]:
    """L1, contrastive, L3 and L4 inputs for ``claims`` of ``answer`` (the cleaned
    response)."""
    if not claims:
        reason = "the answer has no claims"
        return tuple(LayerInput.missing(n, reason) for n in (L1_CONFIDENCE, CONTRASTIVE,
                                                             L3_STABILITY, L4_REPRESENTATION))
    if role == "advisory":
        return (_confidence(claims, answer, response, None),
                *(LayerInput.missing(n, ADVISORY_REASON)
                  for n in (CONTRASTIVE, L3_STABILITY, L4_REPRESENTATION)))
    grounded = _score(provider, request, answer)
    draws = _draws(provider, request, settings)
    return (
        _confidence(claims, answer, response, grounded),
        _contrastive(provider, request, answer, claims, grounded),
        (LayerInput.missing(L3_STABILITY, draws) if isinstance(draws, str)
         else stability_layer(claims, draws)),
        _representation(provider, claims, draws),
    )


def _score(provider: GuardedProvider, request: ProviderRequest,
           completion: str) -> TokenScores | str:
    """Scores of ``completion`` after the request's prompt, or why there are none."""
    if not provider.can_score:
        return "provider cannot score completions"
    try:
        return provider.score(request, completion)
    except ProviderError as exc:
        return f"scoring failed: {exc}"


def _confidence(claims: Sequence[Claim], answer: str, response: ProviderResponse,
                grounded: TokenScores | str | None) -> LayerInput:
    generated = response.token_scores()
    if generated is not None:
        return confidence_layer(claims, answer, generated, source_text=response.text)
    if isinstance(grounded, TokenScores):
        return confidence_layer(claims, answer, grounded)
    return LayerInput.missing(L1_CONFIDENCE, "provider returned no log-probabilities")


def _contrastive(provider: GuardedProvider, request: ProviderRequest, answer: str,
                 claims: Sequence[Claim], grounded: TokenScores | str | None) -> LayerInput:
    if not isinstance(grounded, TokenScores):
        return LayerInput.missing(CONTRASTIVE, grounded or "provider cannot score completions")
    bare = ProviderRequest(request.prompt.without_evidence(), request.max_sentences)
    prior = _score(provider, bare, answer)
    if not isinstance(prior, TokenScores):
        return LayerInput.missing(CONTRASTIVE, prior)
    return contrastive_layer(claims, answer, grounded, prior)


def _draws(provider: GuardedProvider, request: ProviderRequest,
           settings: ProviderSettings) -> tuple[str, ...] | str:
    """The stability draws, or why there are none."""
    if settings.stability_draws <= 0:
        return "no stability draws configured"
    try:
        return collect_draws(provider, request, settings.stability_draws,
                             draw_temperature(settings.temperature))
    except ProviderError as exc:
        return f"stability draws failed: {exc}"


def _representation(provider: GuardedProvider, claims: Sequence[Claim],
                    draws: tuple[str, ...] | str) -> LayerInput:
    if not provider.can_represent:
        return LayerInput.missing(L4_REPRESENTATION, NO_HIDDEN_STATES)
    if isinstance(draws, str):
        return LayerInput.missing(L4_REPRESENTATION, draws)
    try:
        return representation_layer(claims, draws, provider)
    except ProviderError as exc:
        return LayerInput.missing(L4_REPRESENTATION, f"hidden states failed: {exc}")
