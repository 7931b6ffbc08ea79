"""How SIRE terms are compared with text and with a source's identity.

One folding for everything: Unicode NFKC, then ``casefold``. On top of it:

- :func:`term_tokens` splits a term (or a title, an oracle id, a framework name) into its
  identity tokens: runs of letters and digits, underscores and all other characters
  separating them; CJK runs become their characters plus adjacent pairs, because CJK text
  has no spaces to split on.
- :func:`term_pattern` finds a term in text as a whole phrase, case-insensitively. A term
  edge that is a letter or digit must not touch another letter or digit of a non-CJK
  script (so ``hipaa`` matches ``HIPAA-covered`` and ``(HIPAA)`` but not ``hipaaa``); a
  CJK character counts as a boundary for a Latin word, and a CJK edge is matched as a
  plain substring. The words of a multi-word term match across any run of whitespace or
  hyphens (``pci dss`` matches ``PCI-DSS`` and ``PCI\\n DSS``).

The two agree where it matters: whenever a term's pattern matches a text, every token of
the term is a token of that text. That is what lets Algorithm 1 guarantee, with a token
test, that an Excluded term never matches its own source's identity.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

from affidavit.text.forms import nfkc
from affidavit.text.tokenize import CJK_CLASS, cjk_grams

_WORD_CHAR = f"[^\\W_{CJK_CLASS}]"
_IDENTITY_TOKEN = re.compile(f"({_WORD_CHAR}+)|([{CJK_CLASS}]+)")
_EDGE_WORD_CHAR = re.compile(_WORD_CHAR)
_SEPARATOR = r"[\s\-\u2010\u2011]+"
_SEPARATOR_RE = re.compile(_SEPARATOR)
_WHITESPACE = re.compile(r"\s+")


def fold(text: str) -> str:
    """NFKC then casefold: the form in which terms and texts are compared."""
    return nfkc(text).casefold()


def display_term(term: str) -> str:
    """The stored form of a term: folded, whitespace collapsed to single spaces, trimmed."""
    return _WHITESPACE.sub(" ", fold(term)).strip()


def term_tokens(text: str) -> frozenset[str]:
    """Identity tokens of ``text`` (see the module docstring)."""
    return _folded_tokens(fold(text))


def _folded_tokens(folded: str) -> frozenset[str]:
    tokens: set[str] = set()
    for word, cjk_run in _IDENTITY_TOKEN.findall(folded):
        if word:
            tokens.add(word)
        else:
            tokens.update(cjk_grams(cjk_run))
    return frozenset(tokens)


def identity_tokens(parts: Iterable[str]) -> frozenset[str]:
    """Union of the identity tokens of several strings."""
    tokens: set[str] = set()
    for part in parts:
        tokens |= term_tokens(part)
    return frozenset(tokens)


class TermPattern:
    """Finds one term in folded text: its words as literals joined by separators, each
    letter-or-digit edge checked against the character beside it.

    The edges are checked here rather than written into the regex as lookarounds: a
    lookaround on "a letter or digit of a non-CJK script" carries the CJK ranges, and
    ``re`` spends milliseconds optimising that character set in every pattern it compiles
    (a query met a new source's terms, and compiled them, on every ask). Each candidate
    start is tried in order, as the regex engine would, so the matches are the same.
    """

    __slots__ = ("_core", "_lead", "_trail")

    def __init__(self, core: str, *, lead: bool, trail: bool):
        self._core = re.compile(core)
        self._lead = lead
        self._trail = trail

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """The first match at or after ``pos``."""
        while (match := self._core.search(text, pos)) is not None:
            if self._edges_hold(text, match.start(), match.end()):
                return match
            pos = match.start() + 1
        return None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Every match, left to right, none overlapping."""
        pos = 0
        while (match := self.search(text, pos)) is not None:
            yield match
            pos = match.end() if match.end() > match.start() else match.start() + 1

    def _edges_hold(self, text: str, start: int, end: int) -> bool:
        if self._lead and start > 0 and _EDGE_WORD_CHAR.fullmatch(text[start - 1]):
            return False
        return not (self._trail and end < len(text)
                    and _EDGE_WORD_CHAR.fullmatch(text[end]))


@functools.lru_cache(maxsize=65536)
def term_pattern(term: str) -> TermPattern | None:
    """The finder of ``term`` in folded text; ``None`` when the term has no letter or digit."""
    words = [w for w in _SEPARATOR_RE.split(fold(term)) if w]
    if not words or not term_tokens(term):
        return None
    core = _SEPARATOR.join(re.escape(w) for w in words)
    return TermPattern(core, lead=bool(_EDGE_WORD_CHAR.fullmatch(words[0][0])),
                       trail=bool(_EDGE_WORD_CHAR.fullmatch(words[-1][-1])))


def occurrences(folded_text: str, term: str) -> list[int]:
    """Start offsets of every match of ``term`` in already-folded text."""
    pattern = term_pattern(term)
    if pattern is None:
        return []
    return [match.start() for match in pattern.finditer(folded_text)]


def exclusion_hits(text: str, excluded: Iterable[str]) -> tuple[str, ...]:
    """The excluded terms (as given, first-seen order, no repeats) that occur in ``text``.

    A term whose pattern matches has all its tokens among the text's tokens (module
    docstring), so a set lookup rules out almost every term; only a term that passes it is
    matched with its pattern. Compiling a pattern for every term of every source made a
    query on a large corpus spend its time in ``re.compile``.
    """
    folded = fold(text)
    present: frozenset[str] | None = None
    hits: list[str] = []
    for term in excluded:
        if term in hits:
            continue
        needed = _term_tokens_cached(term)
        if not needed:
            continue
        if present is None:
            present = _folded_tokens(folded)
        if not needed <= present:
            continue
        pattern = term_pattern(term)
        if pattern is not None and pattern.search(folded):
            hits.append(term)
    return tuple(hits)


@functools.lru_cache(maxsize=65536)
def _term_tokens_cached(term: str) -> frozenset[str]:
    return term_tokens(term)


def split_by_identity(terms: Iterable[str], identity: frozenset[str]
                      ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``terms`` in stored form (first occurrence order, empties dropped), split into those
    outside ``identity`` and those whose tokens all fall inside it: an exclusion may not
    name the source it would exclude (spec 003 §7, identity rule 5). Algorithm 1 step 6
    proposes the first; the SIRE gate applies the configured list the same way."""
    outside: list[str] = []
    own: list[str] = []
    for term in dict.fromkeys(display_term(t) for t in terms):
        if term:
            (own if term_tokens(term) <= identity else outside).append(term)
    return tuple(outside), tuple(own)
