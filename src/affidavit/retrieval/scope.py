"""The out-of-scope entity gate (spec 000): runs on the raw question before anything else.

It is deliberately not pluggable: it re-derives scope from the raw question text, whatever
intent parsing happens later, so that swapping the parser cannot switch it off. Matched
aliases are masked with spaces of equal length, so that offsets stay valid and a shorter
alias inside a longer one is not counted twice.
"""

from __future__ import annotations

import re
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


def check_scope(question: str, entities: Mapping[str, Sequence[str]]) -> ScopeVerdict:
    """Refuse when the raw question names any configured out-of-scope entity or alias."""
    masked = question
    found: set[str] = set()
    names = [(alias, canonical) for canonical, aliases in entities.items()
             for alias in (canonical, *aliases) if alias.strip()]
    # Longest alias first, so "Northwind Assurance" is masked before "Northwind".
    for alias, canonical in sorted(names, key=lambda pair: (-len(pair[0]), pair[0])):
        pattern = _pattern(alias)
        if pattern.search(masked):
            found.add(canonical)
            masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    return ScopeVerdict(bool(found), tuple(sorted(found)), masked)
