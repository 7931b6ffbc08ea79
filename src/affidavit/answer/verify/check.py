"""Checking any text against evidence: one claim, a list of evidence sentences, the same
layers the answer path runs (:func:`affidavit.answer.verify.claims_check.verify_claims`).

This is the groundedness check behind ``affidavit verify-claims``: the claim may come from
any source, so it cites every evidence sentence it is given. Pure; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from affidavit.answer.verify.claims_check import ClaimVerdict, verify_claims
from affidavit.answer.verify.nli import nli_input, nli_inputs
from affidavit.errors import InputRejected
from affidavit.llm.atoms import extract_atoms
from affidavit.llm.claims import Claim
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.layers import NLI, LayerInput
from affidavit.llm.text import normalize_space

INTERNAL_LABEL = "INTERNAL"


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one free-standing claim, as one output line."""

    claim_id: str
    verdict: ClaimVerdict

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "status", "contradicted", "layers", "reasons"}``."""
        return {"id": self.claim_id, "status": self.verdict.status,
                "contradicted": self.verdict.contradicted,
                "layers": {name: layer.to_dict()
                           for name, layer in sorted(self.verdict.layers.items())},
                "reasons": list(self.verdict.reasons)}


def evidence_items(sentences: Sequence[str]) -> dict[str, EvidenceItem]:
    """One evidence item per sentence, keyed by a stable tag (``00000000``, ``00000001``...)."""
    items: dict[str, EvidenceItem] = {}
    for position, sentence in enumerate(sentences):
        src = f"{position:08x}"
        items[src] = EvidenceItem(src=src, chunk_id=src, node_id=src, title="", locator="",
                                  text=sentence, label=INTERNAL_LABEL)
    return items


def claim_subject(claim: str, evidence: Sequence[str]) -> tuple[Claim, dict[str, EvidenceItem]]:
    """The claim as one cited claim of an answer, and its evidence items."""
    text = normalize_space(claim)
    if not text:
        raise InputRejected("EMPTY_CLAIM", "the claim is empty")
    items = evidence_items([s for s in evidence if s.strip()])
    return Claim(index=0, text=text, start=0, end=len(text), citations=tuple(items),
                 atoms=extract_atoms(text)), items


def check_claims(requests: Sequence[tuple[str, str, Sequence[str]]], *,
                 threshold: float = 0.6) -> list[ClaimCheck]:
    """:func:`check_claim` of each (id, claim, evidence); the ``nli`` layer scores them
    all side by side first (the same bytes as one by one)."""
    subjects = [claim_subject(claim, evidence) for _, claim, evidence in requests]
    layers = nli_inputs([([subject], items) for subject, items in subjects])
    return [check_claim(claim_id, claim, evidence, threshold=threshold, layer_inputs=(layer,))
            for (claim_id, claim, evidence), layer in zip(requests, layers, strict=True)]


def check_claim(claim_id: str, claim: str, evidence: Sequence[str], *,
                threshold: float = 0.6,
                layer_inputs: Sequence[LayerInput] = ()) -> ClaimCheck:
    """Verify ``claim`` against ``evidence`` sentences with the answer path's layers.

    The trained ``nli`` layer runs unless ``layer_inputs`` already carry one (recorded
    unavailable without the nli extra)."""
    subject, items = claim_subject(claim, evidence)
    inputs = tuple(layer_inputs)
    if all(layer.name != NLI for layer in inputs):
        inputs = (*inputs, nli_input([subject], items))
    verdict = verify_claims([subject], items, threshold=threshold, layer_inputs=inputs)[0]
    return ClaimCheck(claim_id, verdict)


def parse_claim_line(line: str, number: int) -> tuple[str, str, list[str]]:
    """``(id, claim, evidence)`` of one JSON line; :class:`InputRejected` names the line."""
    try:
        record: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputRejected("BAD_CLAIM_LINE", f"line {number}: not JSON ({exc.msg})") from None
    if not isinstance(record, Mapping):
        raise InputRejected("BAD_CLAIM_LINE", f"line {number}: expected a JSON object")
    claim_id, claim, evidence = record.get("id"), record.get("claim"), record.get("evidence")
    if not isinstance(claim_id, (str, int)) or isinstance(claim_id, bool):
        raise InputRejected("BAD_CLAIM_LINE", f"line {number}: \"id\" must be a string")
    if not isinstance(claim, str) or not claim.strip():
        raise InputRejected("BAD_CLAIM_LINE", f"line {number}: \"claim\" must be a non-empty "
                                              "string")
    if not isinstance(evidence, list) or not all(isinstance(s, str) for s in evidence):
        raise InputRejected("BAD_CLAIM_LINE", f"line {number}: \"evidence\" must be a list "
                                              "of strings")
    return str(claim_id), claim, list(evidence)
