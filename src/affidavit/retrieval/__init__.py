"""Retrieval: governed lexical and hybrid search, fusion, rewrite, rerank, and the gates
between retrieval and the prompt.

The names below are imported on first use (PEP 562), so that importing one of them
does not load every sibling module and what they import.
"""

from typing import TYPE_CHECKING

from affidavit.util.lazy import lazy_exports

if TYPE_CHECKING:
    from affidavit.retrieval.fusion import DEFAULT_RRF_K, FusedItem, rrf_fuse, rrf_scores
    from affidavit.retrieval.gates import (
        GateDrop,
        GateResult,
        is_restricted,
        restricted_exit,
        sire_gate,
    )
    from affidavit.retrieval.hybrid import ChannelRankings, HybridHit, HybridRetriever
    from affidavit.retrieval.lexical import LexicalRetriever
    from affidavit.retrieval.rerank import (
        ListwiseJudge,
        ProviderListwiseJudge,
        RerankResult,
        build_listwise_prompt,
        listwise_rerank,
        parse_listwise_response,
        rerank,
    )
    from affidavit.retrieval.rewrite import GlossaryQueryRewriter

# ``rerank`` names a function and its module: imported here, the function keeps the name
# whichever of the two is imported first.
from affidavit.retrieval.rerank import rerank

_EXPORTS = {
    "DEFAULT_RRF_K": "fusion",
    "FusedItem": "fusion",
    "rrf_fuse": "fusion",
    "rrf_scores": "fusion",
    "GateDrop": "gates",
    "GateResult": "gates",
    "is_restricted": "gates",
    "restricted_exit": "gates",
    "sire_gate": "gates",
    "ChannelRankings": "hybrid",
    "HybridHit": "hybrid",
    "HybridRetriever": "hybrid",
    "LexicalRetriever": "lexical",
    "ListwiseJudge": "rerank",
    "ProviderListwiseJudge": "rerank",
    "RerankResult": "rerank",
    "build_listwise_prompt": "rerank",
    "listwise_rerank": "rerank",
    "parse_listwise_response": "rerank",
    "GlossaryQueryRewriter": "rewrite",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# Only the exported names stay public.
del TYPE_CHECKING, lazy_exports


__all__ = [
    "DEFAULT_RRF_K",
    "ChannelRankings",
    "FusedItem",
    "GateDrop",
    "GateResult",
    "GlossaryQueryRewriter",
    "HybridHit",
    "HybridRetriever",
    "LexicalRetriever",
    "ListwiseJudge",
    "ProviderListwiseJudge",
    "RerankResult",
    "build_listwise_prompt",
    "is_restricted",
    "listwise_rerank",
    "parse_listwise_response",
    "rerank",
    "restricted_exit",
    "rrf_fuse",
    "rrf_scores",
    "sire_gate",
]
