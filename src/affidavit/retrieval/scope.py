"""The out-of-scope entity gate (spec 000): runs on the raw question before anything else.

It is deliberately not pluggable: it re-derives scope from the raw question text, whatever
intent parsing happens later, so that swapping the parser cannot switch it off. Matched
aliases are masked with spaces of equal length, so that offsets stay valid and a shorter
alias inside a longer one is not counted twice.

Aliases are looked for in the question as retrieval will read it: each character folded by
NFKC where it stays one character (full-width ``Ｎｏｒｔｈｗｉｎｄ`` is ``Northwind``), and
invisible format characters (soft hyphen, zero-width space and joiners) skipped, so that
they cannot hide a name from the gate while the tokenizer still finds it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ScopeVerdict:
    refused: bool
    entities: tuple[str, ...]
    masked_question: str


def _pattern(alias: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in alias.split()]
    body = r"\s+".join(words)
    if alias.isascii():
        return re.compile(rf"(?<![0-9A-Za-z]){body}(?![0-9A-Za-z])", re.IGNORECASE)
    return re.compile(body, re.IGNORECASE)


def _as_read(question: str) -> tuple[str, list[int]]:
    """The question with format characters skipped and characters folded where they stay
    one character, and for each of its characters the offset it came from."""
    kept: list[str] = []
    origin: list[int] = []
    for offset, char in enumerate(question):
        if unicodedata.category(char) == "Cf":
            continue
        folded = unicodedata.normalize("NFKC", char)
        kept.append(folded if len(folded) == 1 else char)
        origin.append(offset)
    return "".join(kept), origin


def check_scope(question: str, entities: Mapping[str, Sequence[str]]) -> ScopeVerdict:
    """Refuse when the raw question names any configured out-of-scope entity or alias."""
    readable, origin = _as_read(question)
    masked = list(question)
    found: set[str] = set()
    names = [(unicodedata.normalize("NFKC", alias), canonical)
             for canonical, aliases in entities.items()
             for alias in (canonical, *aliases) if alias.strip()]
    # Longest alias first, so "Northwind Assurance" is masked before "Northwind".
    for alias, canonical in sorted(names, key=lambda pair: (-len(pair[0]), pair[0])):
        pattern = _pattern(alias)
        for match in pattern.finditer(readable):
            found.add(canonical)
            first, last = origin[match.start()], origin[match.end() - 1]
            masked[first:last + 1] = " " * (last + 1 - first)
        readable = pattern.sub(lambda m: " " * len(m.group(0)), readable)
    return ScopeVerdict(bool(found), tuple(sorted(found)), "".join(masked))
