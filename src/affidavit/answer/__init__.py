"""Answering: CFPO prompt compilation, providers behind the RESTRICTED guard, claim
extraction, layered verification, the Boundary Gate and the FAQ short-circuit.

The flow, each step a pure function except the provider calls::

    FaqCache.match (short-circuit) | compile_prompt -> GuardedProvider.generate
        -> strip_think_blocks -> strip_fabricated -> extract_claims
        -> evaluate_layers (L1, Δ, L3 through the guard) -> verify_claims -> decide
        (-> governed_refusal when BLOCKED)

The names below are imported on first use (PEP 562), so that importing one of them
does not load every sibling module and what they import.
"""

from typing import TYPE_CHECKING

from affidavit.lazy import lazy_exports

if TYPE_CHECKING:
    from affidavit.answer.atoms import ATOM_KINDS, Atom, extract_atoms
    from affidavit.answer.attribution import (
        SpanScore,
        TokenScores,
        claim_segments,
        confidence_layer,
        contrastive_layer,
        span_score,
    )
    from affidavit.answer.citations import SRC_PATTERN, cited_ids, strip_fabricated
    from affidavit.answer.claims import Claim, extract_claims
    from affidavit.answer.compiler import (
        ROLES,
        ZONES,
        CompiledPrompt,
        PromptTemplate,
        classify_zone,
        compile_prompt,
        load_template,
    )
    from affidavit.answer.evaluate import evaluate_layers
    from affidavit.answer.evidence import EvidenceItem, evidence_from_chunk
    from affidavit.answer.faq import FaqCache, FaqEntry, FaqMatch, normalize_question
    from affidavit.answer.gate import (
        CLAIM_STATUSES,
        OUTPUT_STATES,
        GateDecision,
        decide,
        governed_refusal,
    )
    from affidavit.answer.guard import GuardedProvider, RestrictedGuard
    from affidavit.answer.layers import MODEL_LAYERS, LayerInput
    from affidavit.answer.openai import OpenAIProvider
    from affidavit.answer.providers import (
        ExtractiveProvider,
        LLMProvider,
        ProviderRequest,
        ProviderResponse,
        ScoringProvider,
        ScriptedProvider,
        StreamingProvider,
        ThinkStreamFilter,
        strip_think_blocks,
    )
    from affidavit.answer.stability import stability_layer
    from affidavit.answer.verify import ClaimVerdict, LayerResult, SentenceEncoder, verify_claims

_EXPORTS = {
    "ATOM_KINDS": "atoms",
    "Atom": "atoms",
    "extract_atoms": "atoms",
    "SpanScore": "attribution",
    "TokenScores": "attribution",
    "claim_segments": "attribution",
    "confidence_layer": "attribution",
    "contrastive_layer": "attribution",
    "span_score": "attribution",
    "SRC_PATTERN": "citations",
    "cited_ids": "citations",
    "strip_fabricated": "citations",
    "Claim": "claims",
    "extract_claims": "claims",
    "ROLES": "compiler",
    "ZONES": "compiler",
    "CompiledPrompt": "compiler",
    "PromptTemplate": "compiler",
    "classify_zone": "compiler",
    "compile_prompt": "compiler",
    "load_template": "compiler",
    "evaluate_layers": "evaluate",
    "EvidenceItem": "evidence",
    "evidence_from_chunk": "evidence",
    "FaqCache": "faq",
    "FaqEntry": "faq",
    "FaqMatch": "faq",
    "normalize_question": "faq",
    "CLAIM_STATUSES": "gate",
    "OUTPUT_STATES": "gate",
    "GateDecision": "gate",
    "decide": "gate",
    "governed_refusal": "gate",
    "GuardedProvider": "guard",
    "RestrictedGuard": "guard",
    "MODEL_LAYERS": "layers",
    "LayerInput": "layers",
    "OpenAIProvider": "openai",
    "ExtractiveProvider": "providers",
    "LLMProvider": "providers",
    "ProviderRequest": "providers",
    "ProviderResponse": "providers",
    "ScoringProvider": "providers",
    "ScriptedProvider": "providers",
    "StreamingProvider": "providers",
    "ThinkStreamFilter": "providers",
    "strip_think_blocks": "providers",
    "stability_layer": "stability",
    "ClaimVerdict": "verify",
    "LayerResult": "verify",
    "SentenceEncoder": "verify",
    "verify_claims": "verify",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# Only the exported names stay public.
del TYPE_CHECKING, lazy_exports


__all__ = [
    "ATOM_KINDS",
    "CLAIM_STATUSES",
    "MODEL_LAYERS",
    "OUTPUT_STATES",
    "ROLES",
    "SRC_PATTERN",
    "ZONES",
    "Atom",
    "Claim",
    "ClaimVerdict",
    "CompiledPrompt",
    "EvidenceItem",
    "ExtractiveProvider",
    "FaqCache",
    "FaqEntry",
    "FaqMatch",
    "GateDecision",
    "GuardedProvider",
    "LLMProvider",
    "LayerInput",
    "LayerResult",
    "OpenAIProvider",
    "PromptTemplate",
    "ProviderRequest",
    "ProviderResponse",
    "RestrictedGuard",
    "ScoringProvider",
    "ScriptedProvider",
    "SentenceEncoder",
    "SpanScore",
    "StreamingProvider",
    "ThinkStreamFilter",
    "TokenScores",
    "cited_ids",
    "claim_segments",
    "classify_zone",
    "compile_prompt",
    "confidence_layer",
    "contrastive_layer",
    "decide",
    "evaluate_layers",
    "evidence_from_chunk",
    "extract_atoms",
    "extract_claims",
    "governed_refusal",
    "load_template",
    "normalize_question",
    "span_score",
    "stability_layer",
    "strip_fabricated",
    "strip_think_blocks",
    "verify_claims",
]
