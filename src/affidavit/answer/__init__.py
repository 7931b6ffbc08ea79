"""Answering: CFPO prompt compilation, providers behind the RESTRICTED guard, claim
extraction, L2 verification and the Boundary Gate.

The flow, each step a pure function except the provider call::

    compile_prompt -> GuardedProvider.generate -> strip_think_blocks -> strip_fabricated
        -> extract_claims -> verify_claims -> decide (-> governed_refusal when BLOCKED)
"""

from affidavit.answer.atoms import ATOM_KINDS, Atom, extract_atoms
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
from affidavit.answer.evidence import EvidenceItem, evidence_from_chunk
from affidavit.answer.gate import (
    CLAIM_STATUSES,
    OUTPUT_STATES,
    GateDecision,
    decide,
    governed_refusal,
)
from affidavit.answer.guard import GuardedProvider, RestrictedGuard
from affidavit.answer.providers import (
    ExtractiveProvider,
    LLMProvider,
    ProviderRequest,
    ProviderResponse,
    ScriptedProvider,
    strip_think_blocks,
)
from affidavit.answer.verify import ClaimVerdict, LayerResult, verify_claims

__all__ = [
    "ATOM_KINDS",
    "CLAIM_STATUSES",
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
    "GateDecision",
    "GuardedProvider",
    "LLMProvider",
    "LayerResult",
    "PromptTemplate",
    "ProviderRequest",
    "ProviderResponse",
    "RestrictedGuard",
    "ScriptedProvider",
    "cited_ids",
    "classify_zone",
    "compile_prompt",
    "decide",
    "evidence_from_chunk",
    "extract_atoms",
    "extract_claims",
    "governed_refusal",
    "load_template",
    "strip_fabricated",
    "strip_think_blocks",
    "verify_claims",
]
