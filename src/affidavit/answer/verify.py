"""L2 support: each claim checked against the evidence it cites, layer by layer.

Every layer is an independent signal and is recorded whether or not it could run:

* ``citation``: the claim cites at least one evidence item that was in the prompt;
* ``l2_atoms``: every atom of the claim appears, normalized, in the cited evidence; a number
  or date whose controlling noun appears in the evidence with a *different* number or date
  (and not with the claimed one) is a contradiction;
* ``l2_coverage``: the share of the claim's content terms found in the cited evidence;
* ``l1_confidence``, ``contrastive``, ``l3_stability``, ``embedding``, ``nli``: not computed
  here; recorded as unavailable with the reason.

An uncited claim is checked for contradictions against all the evidence it could have
cited, so that an unsupported number that the evidence disputes is still caught.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from affidavit.answer.atoms import Atom, extract_atoms
from affidavit.answer.claims import Claim
from affidavit.answer.evidence import EvidenceItem
from affidavit.answer.text import CJK_CLASS, _sentence_spans, content_terms, stem
from affidavit.errors import InputRejected

VERIFIED = "VERIFIED"
PARTIALLY_VERIFIED = "PARTIALLY_VERIFIED"
UNVERIFIED = "UNVERIFIED"
REFUSED = "REFUSED"

UNAVAILABLE_LAYERS = ("l1_confidence", "contrastive", "l3_stability", "embedding", "nli")

_REFUSAL = re.compile(
    r"\b(?:the|this|that|provided|available|supplied)\s+(?:evidence|sources?|context|documents?)"
    r"\s+(?:does|do|did)\s*(?:not|n't)\s+"
    r"|\bnot\s+(?:stated|specified|covered|mentioned|addressed)\s+in\s+the\s+"
    r"(?:evidence|sources?|context|documents?)"
    r"|\b(?:insufficient|no)\s+evidence\b|\bcannot\s+(?:be\s+)?(?:answered|determined)\b"
    r"|证据(?:中)?(?:未|没有)|没有(?:相关)?证据|无法(?:回答|确定)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class LayerResult:
    """One verification layer's signal for one claim."""

    name: str
    available: bool
    score: float | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"name": self.name, "available": self.available, "score": self.score,
                "detail": self.detail}


@dataclass(frozen=True)
class ClaimVerdict:
    """The composite status of one claim, with every layer's signal."""

    claim: Claim
    status: str
    support: float
    contradicted: bool
    reasons: tuple[str, ...]
    layers: Mapping[str, LayerResult] = field(hash=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"claim": self.claim.to_dict(), "status": self.status, "support": self.support,
                "contradicted": self.contradicted, "reasons": list(self.reasons),
                "layers": {name: layer.to_dict() for name, layer in self.layers.items()}}


@dataclass(frozen=True)
class _Sentence:
    text: str
    atoms: tuple[Atom, ...]
    terms: frozenset[str]


@dataclass(frozen=True)
class _Source:
    """One evidence item read once: its sentences with their atoms and terms."""

    sentences: tuple[_Sentence, ...]
    terms: frozenset[str]


def _read_source(item: EvidenceItem) -> _Source:
    sentences = tuple(
        _Sentence(text, extract_atoms(text), frozenset(content_terms(text)))
        for text in (item.text[s:e] for s, e in _sentence_spans(item.text))
    )
    return _Source(sentences, frozenset().union(*(s.terms for s in sentences)))


@dataclass(frozen=True)
class _AtomCheck:
    missing: tuple[Atom, ...]
    contradictions: tuple[str, ...]


def is_refusal(text: str) -> bool:
    """Whether a claim says what the evidence does not cover instead of asserting a fact."""
    return bool(_REFUSAL.search(text))


def verify_claims(
    claims: Sequence[Claim],
    evidence: Mapping[str, EvidenceItem],
    *,
    threshold: float = 0.6,
    token_logprobs: Sequence[float] | None = None,
) -> tuple[ClaimVerdict, ...]:
    """Verify each claim against the evidence items (keyed by src tag) it cites."""
    if not 0.0 < threshold <= 1.0:
        raise InputRejected("INVALID_THRESHOLD", f"threshold must be in (0, 1]: {threshold}")
    sources = {src.lower(): _read_source(item) for src, item in sorted(evidence.items())}
    return tuple(_verify(claim, sources, threshold, token_logprobs) for claim in claims)


def _verify(
    claim: Claim,
    sources: Mapping[str, _Source],
    threshold: float,
    token_logprobs: Sequence[float] | None,
) -> ClaimVerdict:
    cited = [c for c in claim.citations if c in sources]
    cited_sources = [sources[c] for c in cited]
    check = _check_atoms(claim, cited_sources or list(sources.values()))
    layers: dict[str, LayerResult] = {
        "citation": _citation_layer(claim, cited),
        "l2_atoms": _atoms_layer(claim, cited_sources, check),
        "l2_coverage": _coverage_layer(claim, cited_sources),
    }
    layers.update(_unavailable_layers(token_logprobs))
    coverage = layers["l2_coverage"].score or 0.0
    status, reasons = _status(claim, bool(cited), check, coverage, threshold)
    return ClaimVerdict(
        claim=claim,
        status=status,
        support=round(coverage, 6),
        contradicted=bool(check.contradictions) and status != REFUSED,
        reasons=reasons,
        layers=MappingProxyType(layers),
    )


def _status(
    claim: Claim, cited: bool, check: _AtomCheck, coverage: float, threshold: float
) -> tuple[str, tuple[str, ...]]:
    if is_refusal(claim.text):
        return REFUSED, ("REFUSAL",)
    reasons: list[str] = []
    if not cited:
        reasons.append("NO_VALID_CITATION")
    reasons.extend(check.contradictions)
    reasons.extend(f"ATOM_NOT_IN_EVIDENCE:{a.kind}:{a.value}" for a in check.missing)
    if coverage < threshold:
        reasons.append(f"LOW_COVERAGE:{coverage:.3f}")
    if check.contradictions or not cited:
        return UNVERIFIED, tuple(reasons)
    if not check.missing and coverage >= threshold:
        return VERIFIED, tuple(reasons)
    if coverage >= threshold / 2:
        return PARTIALLY_VERIFIED, tuple(reasons)
    return UNVERIFIED, tuple(reasons)


# --------------------------------------------------------------------------- layers


def _citation_layer(claim: Claim, cited: list[str]) -> LayerResult:
    unknown = [c for c in claim.citations if c not in cited]
    detail = f"cited: {', '.join(cited) or '-'}; not in prompt: {', '.join(unknown) or '-'}"
    return LayerResult("citation", True, 1.0 if cited else 0.0, detail)


def _atoms_layer(claim: Claim, cited: list[_Source], check: _AtomCheck) -> LayerResult:
    if not cited:
        return LayerResult("l2_atoms", False, None, "claim cites no evidence from the prompt")
    if not claim.atoms:
        return LayerResult("l2_atoms", True, 1.0, "claim has no atoms")
    found = len(claim.atoms) - len(check.missing)
    detail = f"{found}/{len(claim.atoms)} atoms in cited evidence"
    if check.contradictions:
        detail += "; " + "; ".join(check.contradictions)
    return LayerResult("l2_atoms", True, round(found / len(claim.atoms), 6), detail)


def _coverage_layer(claim: Claim, cited: list[_Source]) -> LayerResult:
    if not cited:
        return LayerResult("l2_coverage", False, None, "claim cites no evidence from the prompt")
    terms = sorted(set(content_terms(claim.text)))
    if not terms:
        return LayerResult("l2_coverage", True, 0.0, "claim has no content terms")
    evidence_terms = frozenset().union(*(source.terms for source in cited))
    missing = [t for t in terms if t not in evidence_terms]
    score = (len(terms) - len(missing)) / len(terms)
    detail = f"{len(terms) - len(missing)}/{len(terms)} content terms in cited evidence"
    if missing:
        detail += f"; missing: {', '.join(missing[:12])}"
    return LayerResult("l2_coverage", True, round(score, 6), detail)


def _unavailable_layers(token_logprobs: Sequence[float] | None) -> dict[str, LayerResult]:
    logprob_reason = (
        "provider returned no log-probabilities" if token_logprobs is None
        else "log-probability scoring not configured"
    )
    reasons = {"l1_confidence": logprob_reason, "contrastive": logprob_reason}
    return {
        name: LayerResult(name, False, None, reasons.get(name, "not configured"))
        for name in UNAVAILABLE_LAYERS
    }


# --------------------------------------------------------------------------- atoms


def _check_atoms(claim: Claim, sources: list[_Source]) -> _AtomCheck:
    sentences = [sentence for source in sources for sentence in source.sentences]
    evidence_atoms = [atom for sentence in sentences for atom in sentence.atoms]
    missing: list[Atom] = []
    contradictions: list[str] = []
    for atom in claim.atoms:
        if any(_same_fact(atom, other) for other in evidence_atoms):
            continue
        missing.append(atom)
        conflict = _conflicting_value(atom, sentences)
        if conflict:
            contradictions.append(
                f"CONTRADICTED:{atom.kind}:{atom.value}!={conflict}:noun={atom.noun}"
            )
    return _AtomCheck(tuple(missing), tuple(contradictions))


def _same_fact(claimed: Atom, found: Atom) -> bool:
    if claimed.kind != found.kind:
        return False
    if claimed.kind == "number":
        return claimed.value == found.value or (
            not (claimed.unit and found.unit) and _amount(claimed) == _amount(found)
        )
    if claimed.kind in ("date", "regulatory_citation"):
        # A less specific claim is supported by a more specific source: "March 2026" by
        # "2026-03-31", "§ 164.312" by "§ 164.312(a)(1)".
        return claimed.value == found.value or (
            found.value.startswith(claimed.value) and found.value[len(claimed.value)] in "-.("
        )
    return claimed.value == found.value


def _amount(atom: Atom) -> str:
    return atom.value.split(" ")[0].rstrip("%")


def _conflicting_value(atom: Atom, sentences: list[_Sentence]) -> str:
    """A different value of the same kind and unit stated about the same noun, if any."""
    if atom.kind not in ("number", "date") or not atom.noun:
        return ""
    for sentence in sentences:
        if not _mentions(sentence, atom.noun):
            continue
        for other in sentence.atoms:
            if other.kind == atom.kind and other.unit == atom.unit and other.value != atom.value:
                return other.value
    return ""


def _mentions(sentence: _Sentence, noun: str) -> bool:
    if re.fullmatch(f"[{CJK_CLASS}]+", noun):
        return noun in sentence.text
    return stem(noun.casefold()) in sentence.terms
