"""Retrieval: governed lexical and hybrid search, fusion, rewrite, rerank, and the gates
between retrieval and the prompt."""

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
