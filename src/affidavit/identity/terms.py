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
import unicodedata
from collections.abc import Iterable

from affidavit.index.tokenize import CJK_CLASS, cjk_grams

_WORD_CHAR = f"[^\\W_{CJK_CLASS}]"
_IDENTITY_TOKEN = re.compile(f"({_WORD_CHAR}+)|([{CJK_CLASS}]+)")
_EDGE_WORD_CHAR = re.compile(_WORD_CHAR)
_SEPARATOR = r"[\s\-\u2010\u2011]+"
_SEPARATOR_RE = re.compile(_SEPARATOR)
_WHITESPACE = re.compile(r"\s+")


def fold(text: str) -> str:
    """NFKC then casefold: the form in which terms and texts are compared."""
    return unicodedata.normalize("NFKC", text).casefold()


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


@functools.lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern[str] | None:
    """Regex finding ``term`` in folded text; ``None`` when the term has no letter or digit."""
    words = [w for w in _SEPARATOR_RE.split(fold(term)) if w]
    if not words or not term_tokens(term):
        return None
    first = words[0][0]
    rest = _SEPARATOR.join([re.escape(words[0][1:]), *(re.escape(w) for w in words[1:])])
    lead = re.escape(first)
    if _EDGE_WORD_CHAR.fullmatch(first):
        # The boundary test sits after the first character, not before it, so that the
        # pattern starts with a literal and ``re`` can skip ahead to candidate positions.
        lead += f"(?<!{_WORD_CHAR}[\\s\\S])"
    trail = f"(?!{_WORD_CHAR})" if _EDGE_WORD_CHAR.fullmatch(words[-1][-1]) else ""
    return re.compile(lead + rest + trail)


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
