"""L1 token confidence and contrastive attribution, as pure functions over log-probabilities.

A provider that offers log-probabilities returns them per token; :class:`TokenScores`
holds them with each token's character offset in the scored text. A claim is a set of
character segments of the answer (its span without citation tags), so its score is taken
over the tokens that overlap those segments:

* **L1 confidence** is the mean token probability ``mean(exp(logprob))`` over the claim's
  tokens (the minimum is kept in the detail): a claim the model wrote while guessing has
  low-probability tokens.
* **Contrastive attribution** ``Δ = log P(claim | prompt) - log P(claim | prompt without
  evidence)``, each term the sum of the claim's token log-probabilities when the same
  answer text is scored after the full prompt and after the prompt with no evidence. A
  positive Δ says the evidence made the claim more likely; ``Δ <= 0`` says it did not.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from affidavit.errors import InputRejected
from affidavit.llm.citations import LOOSE_SRC_PATTERN
from affidavit.llm.claims import Claim
from affidavit.llm.layers import CONTRASTIVE, L1_CONFIDENCE, LayerInput

_Segment = tuple[int, int]
_THINK_OPEN = re.compile(r"<think\b[^>]*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class TokenScores:
    """Per-token log-probabilities of a text; ``offsets[i]`` is where token ``i`` starts.

    A ``None`` log-probability is a token the server did not score (the first token of an
    echoed prompt). Offsets may be negative for a token that began before the text (a token
    spanning the boundary between a prompt and the scored completion).
    """

    tokens: tuple[str, ...]
    logprobs: tuple[float | None, ...]
    offsets: tuple[int, ...]

    def __post_init__(self) -> None:
        if not len(self.tokens) == len(self.logprobs) == len(self.offsets):
            raise InputRejected("MALFORMED_LOGPROBS",
                                "tokens, log-probabilities and offsets differ in length")
        if any(b < a for a, b in zip(self.offsets, self.offsets[1:], strict=False)):
            raise InputRejected("MALFORMED_LOGPROBS", "token offsets go backwards")

    @classmethod
    def from_tokens(cls, tokens: Sequence[str], logprobs: Sequence[float | None]) -> TokenScores:
        """Scores whose tokens concatenate to the scored text (offsets are cumulative)."""
        offsets: list[int] = []
        position = 0
        for token in tokens:
            offsets.append(position)
            position += len(token)
        return cls(tuple(tokens), tuple(logprobs), tuple(offsets))

    def token_spans(self) -> list[_Segment]:
        """``(start, end)`` of each token: a token ends where the next begins, and is at
        least one character wide (byte-level tokens of one character share an offset)."""
        spans: list[_Segment] = []
        for i, (start, token) in enumerate(zip(self.offsets, self.tokens, strict=True)):
            end = self.offsets[i + 1] if i + 1 < len(self.offsets) else start + len(token)
            spans.append((start, max(end, start + 1)))
        return spans

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"tokens": list(self.tokens), "logprobs": list(self.logprobs),
                "offsets": list(self.offsets)}


@dataclass(frozen=True)
class SpanScore:
    """The log-probabilities of the tokens of one claim."""

    token_count: int
    logprob_sum: float
    mean_prob: float
    min_prob: float


def claim_segments(answer: str, claim: Claim) -> tuple[_Segment, ...]:
    """The claim's span in ``answer`` without its citation tags and edge whitespace."""
    segments: list[_Segment] = []
    cursor = claim.start
    for tag in LOOSE_SRC_PATTERN.finditer(answer, claim.start, claim.end):
        segments.append((cursor, tag.start()))
        cursor = tag.end()
    segments.append((cursor, claim.end))
    return tuple(_trimmed(answer, s, e) for s, e in segments if answer[s:e].strip())


def _trimmed(text: str, start: int, end: int) -> _Segment:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def span_score(scores: TokenScores, segments: Sequence[_Segment]) -> SpanScore | None:
    """Score of the tokens overlapping any segment; ``None`` when no scored token does."""
    chosen = [
        logprob for (tok_start, tok_end), logprob in zip(scores.token_spans(), scores.logprobs,
                                                         strict=True)
        if logprob is not None and any(tok_start < e and s < tok_end for s, e in segments)
    ]
    values = [float(v) for v in chosen]
    if not values:
        return None
    probs = [math.exp(v) for v in values]
    return SpanScore(len(values), math.fsum(values), math.fsum(probs) / len(probs), min(probs))


def derived_offsets(source: str, derived: str) -> list[int]:
    """For each character of ``derived`` (``source`` with parts removed), its index in
    ``source``, or -1 when it has no counterpart.

    Only the part of ``source`` where a visible answer can be is aligned: after the last
    closing think tag and before an unterminated opening one, so a sentence repeated inside
    a reasoning block never captures the answer's copy of it.
    """
    lo, hi = _visible_region(source)
    mapping = [-1] * len(derived)
    matcher = difflib.SequenceMatcher(None, source[lo:hi], derived, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mapping[block.b + k] = lo + block.a + k
    return mapping


def _visible_region(raw: str) -> _Segment:
    closes = list(_THINK_CLOSE.finditer(raw))
    lo = closes[-1].end() if closes else 0
    opening = _THINK_OPEN.search(raw, lo)
    return lo, opening.start() if opening else len(raw)


def map_segments(segments: Sequence[_Segment], mapping: Sequence[int]) -> tuple[_Segment, ...]:
    """Segments of the derived text as segments of the source, one per mapped run."""
    mapped: list[_Segment] = []
    for start, end in segments:
        for position in (mapping[i] for i in range(start, end) if mapping[i] >= 0):
            if mapped and mapped[-1][1] == position:
                mapped[-1] = (mapped[-1][0], position + 1)
            else:
                mapped.append((position, position + 1))
    return tuple(mapped)


def confidence_layer(claims: Sequence[Claim], answer: str, scores: TokenScores,
                     source_text: str | None = None) -> LayerInput:
    """L1 confidence per claim from scores of ``source_text`` (the raw response the answer
    was cleaned from) or, when it is ``None``, of the answer itself."""
    mapping = derived_offsets(source_text, answer) if source_text is not None else None
    values: dict[int, float] = {}
    details: dict[int, str] = {}
    for claim in claims:
        segments = claim_segments(answer, claim)
        if mapping is not None:
            segments = map_segments(segments, mapping)
        score = span_score(scores, segments)
        if score is None:
            continue
        values[claim.index] = round(score.mean_prob, 6)
        details[claim.index] = (f"{score.token_count} tokens; mean p {score.mean_prob:.3f}; "
                                f"min p {score.min_prob:.3f}")
    return LayerInput(L1_CONFIDENCE, values, details)


def contrastive_layer(claims: Sequence[Claim], answer: str, with_evidence: TokenScores,
                      without_evidence: TokenScores) -> LayerInput:
    """Δ per claim from the answer scored after the prompt with and without its evidence."""
    values: dict[int, float] = {}
    details: dict[int, str] = {}
    for claim in claims:
        segments = claim_segments(answer, claim)
        grounded = span_score(with_evidence, segments)
        prior = span_score(without_evidence, segments)
        if grounded is None or prior is None:
            continue
        delta = grounded.logprob_sum - prior.logprob_sum
        values[claim.index] = round(delta, 6)
        details[claim.index] = (f"log P with evidence {grounded.logprob_sum:.3f} "
                                f"({grounded.token_count} tokens) - without "
                                f"{prior.logprob_sum:.3f} ({prior.token_count} tokens)")
    return LayerInput(CONTRASTIVE, values, details)


def scores_from_dict(data: Mapping[str, Any]) -> TokenScores:
    """The value :meth:`TokenScores.to_dict` recorded."""
    return TokenScores(tuple(str(t) for t in data["tokens"]),
                       tuple(None if v is None else float(v) for v in data["logprobs"]),
                       tuple(int(o) for o in data["offsets"]))
