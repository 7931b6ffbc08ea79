"""The one door to a language model: CFPO prompt compilation, the evidence block, providers
(the offline extractive default, a local GGUF model, any OpenAI-compatible server) and the
RESTRICTED guard every call passes through. Classification, reranking and answering all reach
a model from here, so it sits below them.

The names below are imported on first use (PEP 562), so that importing one of them
does not load every sibling module and what they import.
"""

from typing import TYPE_CHECKING

from affidavit.util.lazy import lazy_exports

if TYPE_CHECKING:
    from affidavit.llm.atoms import ATOM_KINDS, Atom, extract_atoms
    from affidavit.llm.attribution import (
        SpanScore,
        TokenScores,
        claim_segments,
        confidence_layer,
        contrastive_layer,
        span_score,
    )
    from affidavit.llm.citations import SRC_PATTERN, cited_ids, strip_fabricated
    from affidavit.llm.claims import Claim, extract_claims
    from affidavit.llm.compiler import (
        ROLES,
        ZONES,
        CompiledPrompt,
        PromptTemplate,
        classify_zone,
        compile_prompt,
        load_template,
    )
    from affidavit.llm.evidence import EvidenceItem, evidence_from_chunk
    from affidavit.llm.guard import GuardedProvider, RestrictedGuard
    from affidavit.llm.layers import MODEL_LAYERS, LayerInput
    from affidavit.llm.openai import OpenAIProvider
    from affidavit.llm.providers import (
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
    "EvidenceItem": "evidence",
    "evidence_from_chunk": "evidence",
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
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# Only the exported names stay public.
del TYPE_CHECKING, lazy_exports


__all__ = [
    "ATOM_KINDS",
    "MODEL_LAYERS",
    "ROLES",
    "SRC_PATTERN",
    "ZONES",
    "Atom",
    "Claim",
    "CompiledPrompt",
    "EvidenceItem",
    "ExtractiveProvider",
    "GuardedProvider",
    "LLMProvider",
    "LayerInput",
    "OpenAIProvider",
    "PromptTemplate",
    "ProviderRequest",
    "ProviderResponse",
    "RestrictedGuard",
    "ScoringProvider",
    "ScriptedProvider",
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
    "evidence_from_chunk",
    "extract_atoms",
    "extract_claims",
    "load_template",
    "span_score",
    "strip_fabricated",
    "strip_think_blocks",
]
