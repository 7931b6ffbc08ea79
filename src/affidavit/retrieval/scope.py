"""The out-of-scope entity gate (spec 000): runs on the raw question before anything else.

It is deliberately not pluggable: it re-derives scope from the raw question text, whatever
intent parsing happens later, so that swapping the parser cannot switch it off. Matched
aliases are masked with spaces of equal length, so that offsets stay valid and a shorter
alias inside a longer one is not counted twice.

Aliases are looked for in the question as every matcher reads it
(:func:`affidavit.text.matching.mapped_for_matching`: full-width ``Ｎｏｒｔｈｗｉｎｄ`` is
``northwind``, soft hyphens, zero-width characters and inline markup are gone), twice:

- as written, character by character (which also finds a name inside a run of CJK text);
- as retrieval reads it, term by term through the lexical tokenizer, so that an inflected
  form (``Northwinds``, ``Northwind's``) that retrieval would stem onto the alias is refused
  too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from affidavit.config.settings import LexicalSettings
from affidavit.text.matching import MappedText, mapped_for_matching, normalize_for_matching
from affidavit.text.tokenize import Tokenizer, word_spans


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


@functools.lru_cache(maxsize=16)
def _tokenizer(lexical: LexicalSettings) -> Tokenizer:
    return Tokenizer.from_settings(lexical)


def check_scope(question: str, entities: Mapping[str, Sequence[str]], *,
                lexical: LexicalSettings | None = None) -> ScopeVerdict:
    """Refuse when the raw question names any configured out-of-scope entity or alias.

    ``lexical`` is the retrieval tokenizer's settings (language, stemming, stop words);
    English stemming when not given.
    """
    tokenizer = _tokenizer(lexical or LexicalSettings())
    names = [(normalize_for_matching(alias), canonical)
             for canonical, aliases in entities.items()
             for alias in (canonical, *aliases) if alias.strip()]
    scan = _Scan(mapped_for_matching(question), tokenizer)
    # Longest alias first, so "Northwind Assurance" is masked before "Northwind".
    for alias, canonical in sorted((pair for pair in names if pair[0].strip()),
                                   key=lambda pair: (-len(pair[0]), pair[0])):
        scan.as_written(alias, canonical)
        scan.as_retrieved(alias, canonical)
    masked = list(question)
    for _, start, end in scan.found:
        first, last = scan.mapped.source_span(start, end)
        masked[first:last] = " " * (last - first)
    entities_found = tuple(sorted({canonical for canonical, _, _ in scan.found}))
    return ScopeVerdict(bool(entities_found), entities_found, "".join(masked))


class _Scan:
    """The normalised question, its terms, and the alias spans found so far (normalised
    offsets); a stretch of the question counts for one alias only, the longest."""

    def __init__(self, mapped: MappedText, tokenizer: Tokenizer) -> None:
        self.mapped = mapped
        self.tokenizer = tokenizer
        self.readable = mapped.text
        self.found: list[tuple[str, int, int]] = []
        # (term, start, end) in normalised offsets, in text order
        self.terms = [(term, start, end) for start, end in word_spans(mapped.text)
                      for term in tokenizer.tokenize(mapped.text[start:end])]

    def _taken(self, start: int, end: int) -> bool:
        return any(start < stop and first < end for _, first, stop in self.found)

    def _record(self, canonical: str, start: int, end: int) -> None:
        self.found.append((canonical, start, end))
        self.readable = self.readable[:start] + " " * (end - start) + self.readable[end:]

    def as_written(self, alias: str, canonical: str) -> None:
        for match in list(_pattern(alias).finditer(self.readable)):
            self._record(canonical, *match.span())

    def as_retrieved(self, alias: str, canonical: str) -> None:
        """The alias's terms, in order, among the question's; a plural ``s`` left on by the
        stemmer (``NWAs``) still counts."""
        wanted = self.tokenizer.tokenize(alias)
        size = len(wanted)
        for at in range(len(self.terms) - size + 1 if wanted else 0):
            window = self.terms[at:at + size]
            if all(term in (want, want + "s") for (term, _, _), want in zip(window, wanted,
                                                                            strict=True)):
                start, end = window[0][1], window[-1][2]
                if not self._taken(start, end):
                    self._record(canonical, start, end)
