"""Checking an answer before it leaves: layered verification of its claims against the cited
evidence (:mod:`affidavit.answer.verify`), the Boundary Gate, and the FAQ short-circuit.
Prompt compilation, providers, the RESTRICTED guard and claim extraction are
:mod:`affidavit.llm`, beneath this; :mod:`affidavit.engine.answering` runs the flow.

The flow, each step a pure function except the provider calls::

    FaqCache.match (short-circuit) | compile_prompt -> GuardedProvider.generate
        -> strip_think_blocks -> strip_fabricated -> extract_claims
        -> evaluate_layers (L1, Δ, L3 through the guard) -> verify_claims -> decide
        (-> governed_refusal when BLOCKED)

The names below are imported on first use (PEP 562), so that importing one of them
does not load every sibling module and what they import.
"""

from typing import TYPE_CHECKING

from affidavit.util.lazy import lazy_exports

if TYPE_CHECKING:
    from affidavit.answer.faq import FaqCache, FaqEntry, FaqMatch, normalize_question
    from affidavit.answer.verify.claims_check import (
        ClaimVerdict,
        LayerResult,
        SentenceEncoder,
        verify_claims,
    )
    from affidavit.answer.verify.evaluate import evaluate_layers
    from affidavit.answer.verify.gate import (
        CLAIM_STATUSES,
        OUTPUT_STATES,
        GateDecision,
        decide,
        governed_refusal,
    )
    from affidavit.answer.verify.stability import stability_layer

_EXPORTS = {
    "FaqCache": "faq",
    "FaqEntry": "faq",
    "FaqMatch": "faq",
    "normalize_question": "faq",
    "ClaimVerdict": "verify.claims_check",
    "LayerResult": "verify.claims_check",
    "SentenceEncoder": "verify.claims_check",
    "verify_claims": "verify.claims_check",
    "evaluate_layers": "verify.evaluate",
    "CLAIM_STATUSES": "verify.gate",
    "OUTPUT_STATES": "verify.gate",
    "GateDecision": "verify.gate",
    "decide": "verify.gate",
    "governed_refusal": "verify.gate",
    "stability_layer": "verify.stability",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# Only the exported names stay public.
del TYPE_CHECKING, lazy_exports


__all__ = [
    "CLAIM_STATUSES",
    "OUTPUT_STATES",
    "ClaimVerdict",
    "FaqCache",
    "FaqEntry",
    "FaqMatch",
    "GateDecision",
    "LayerResult",
    "SentenceEncoder",
    "decide",
    "evaluate_layers",
    "governed_refusal",
    "normalize_question",
    "stability_layer",
    "verify_claims",
]
