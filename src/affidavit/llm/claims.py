"""Pass 2: deterministic decomposition of an answer into claims with exact offsets.

A claim is a sentence of the answer (or the part of a sentence up to a citation tag that
is followed by more text), together with the citation tags that belong to it:

* tags inside the sentence belong to it ("Revenue grew 15% [src:a1b2c3d4].");
* tags right after it, before the next sentence, belong to it ("Revenue grew 15%.
  [src:a1b2c3d4]");
* a tag followed by more text in the same sentence closes a claim there, so "A [src:1] and
  B [src:2]." is two claims ("A" and "B."), each with its own citation;
* tags before the first sentence belong to the first sentence; a claim with no tag of its
  own inherits none from its neighbours.

``answer[claim.start:claim.end]`` is the claim's span including its tags; ``claim.text`` is
that span with the tags (and the spaces before them) removed and whitespace collapsed.
Atom offsets index into the answer too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from affidavit.llm.atoms import Atom, extract_atoms
from affidavit.llm.citations import LOOSE_SRC_PATTERN, cited_ids
from affidavit.llm.text import _sentence_spans, normalize_space

_Span = tuple[int, int]
# Between two tags of one run, and after a tag before the rest of its sentence.
_SEPARATORS = " \t\n,;:，；："
_CONJUNCTION = re.compile(
    r"(?:(?:and|but|or|while|whereas)(?![A-Za-z])\s*|并且|而且|但是|而)(?=\w)", re.IGNORECASE
)


@dataclass(frozen=True)
class Claim:
    """One atomic claim of an answer; ``citations`` are normalized tag ids in order."""

    index: int
    text: str
    start: int
    end: int
    citations: tuple[str, ...]
    atoms: tuple[Atom, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"index": self.index, "text": self.text, "start": self.start, "end": self.end,
                "citations": list(self.citations), "atoms": [a.to_dict() for a in self.atoms]}


def extract_claims(answer: str) -> tuple[Claim, ...]:
    """Decompose ``answer`` into claims; identical input gives identical claims."""
    runs = _tag_runs(answer)
    masked = _masked(answer, runs)
    pieces = _split_after_inner_runs(masked, _sentence_spans(masked), runs)
    spans = _attach_outer_runs([p for p in pieces if _has_alnum(masked, p)], runs)
    return tuple(_claim(i, answer, masked, span) for i, span in enumerate(spans))


def _tag_runs(answer: str) -> list[_Span]:
    """Spans of consecutive tags (separated only by spaces or commas) in the answer."""
    runs: list[_Span] = []
    for match in LOOSE_SRC_PATTERN.finditer(answer):
        start, end = match.span()
        if runs and not answer[runs[-1][1] : start].strip(_SEPARATORS):
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    return runs


def _masked(answer: str, runs: list[_Span]) -> str:
    """The answer with every tag run blanked to spaces (same length, same offsets), so that
    hex ids are never read as numbers and never split a sentence."""
    chars = list(answer)
    for start, end in runs:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _split_after_inner_runs(masked: str, sentences: list[_Span], runs: list[_Span]) -> list[_Span]:
    pieces: list[_Span] = []
    for start, end in sentences:
        cut = start
        for run_start, run_end in runs:
            if cut <= run_start and run_end <= end and _has_alnum(masked, (run_end, end)):
                pieces.append((cut, run_end))
                cut = _start_of_rest(masked, run_end, end)
        pieces.append((cut, end))
    return pieces


def _start_of_rest(masked: str, position: int, end: int) -> int:
    """Where the rest of a sentence starts after a closing tag: past separators and a
    joining conjunction ("..., and revenue grew" -> "revenue grew")."""
    while position < end and masked[position] in _SEPARATORS:
        position += 1
    joined = _CONJUNCTION.match(masked, position, end)
    return joined.end() if joined and joined.end() < end else position


def _attach_outer_runs(pieces: list[_Span], runs: list[_Span]) -> list[_Span]:
    spans = list(pieces)
    for run_start, run_end in runs:
        if any(s <= run_start and run_end <= e for s, e in spans):
            continue
        before = [i for i, (_, e) in enumerate(spans) if e <= run_start]
        if before:
            i = before[-1]
            spans[i] = (spans[i][0], run_end)
        elif spans:
            spans[0] = (run_start, spans[0][1])
    return spans


def _has_alnum(text: str, span: _Span) -> bool:
    return any(ch.isalnum() for ch in text[span[0] : span[1]])


def _claim(index: int, answer: str, masked: str, span: _Span) -> Claim:
    start, end = span
    raw = answer[start:end]
    text = normalize_space(LOOSE_SRC_PATTERN.sub("", _drop_space_before_tags(raw)))
    return Claim(
        index=index,
        text=text,
        start=start,
        end=end,
        citations=cited_ids(raw),
        atoms=extract_atoms(masked, start, end),
    )


def _drop_space_before_tags(raw: str) -> str:
    """Remove horizontal space directly before a tag so "15% [src:x]." reads "15%."."""
    out = raw
    for match in reversed(list(LOOSE_SRC_PATTERN.finditer(raw))):
        left = match.start()
        while left > 0 and out[left - 1] in " \t":
            left -= 1
        out = out[:left] + out[match.start() :]
    return out
