"""Retrieval: governed lexical search, the gates between retrieval and the prompt."""

from affidavit.retrieval.gates import (
    GateDrop,
    GateResult,
    is_restricted,
    restricted_exit,
    sire_gate,
)
from affidavit.retrieval.lexical import LexicalRetriever

__all__ = [
    "GateDrop",
    "GateResult",
    "LexicalRetriever",
    "is_restricted",
    "restricted_exit",
    "sire_gate",
]
