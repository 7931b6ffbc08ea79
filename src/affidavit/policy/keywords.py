"""Keyword matching for classification: case-insensitive, word-bounded for Latin script.

Keywords are looked for in the paragraph as every matcher reads it
(:func:`affidavit.text.matching.normalize_for_matching`: NFKC case folding, invisible characters
removed, inline markup stripped, line-end hyphenation joined), with the keyword normalised
the same way; and, as before, in the text as written. Either finding counts, so normalising
can only add findings, never lose one.

A keyword end made of a Latin letter or digit must meet a word boundary in the text, so that
``pii`` does not fire inside ``piie``. CJK text has no spaces between words, so a CJK keyword
end matches anywhere (plain substring). Whitespace inside a keyword matches any run of
whitespace, because extraction may wrap a phrase across lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from affidavit.text.matching import normalize_for_matching

# Scripts written without spaces between words: Han, kana, Hangul and their punctuation.
_CJK_RANGES = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3190-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef"
)
_CJK = re.compile(f"[{_CJK_RANGES}]")
# A word character that is not CJK: what a bounded keyword end must not touch. The class
# is the same with or without IGNORECASE (CJK has no case; the fullwidth letters in the
# ranges fold among themselves), so it is compiled without: a case-insensitive class over
# these ranges takes re several times as long to compile, paid by every keyword of every
# process that classifies or computes the serving epoch (every search).
_BOUNDED_WORD_CHAR = f"(?-i:[^\\W{_CJK_RANGES}])"


def is_cjk(ch: str) -> bool:
    """True for a character of a script written without spaces (Han, kana, Hangul)."""
    return bool(_CJK.match(ch))


def _needs_boundary(ch: str) -> bool:
    return (ch.isalnum() or ch == "_") and not is_cjk(ch)


def keyword_pattern(keyword: str) -> re.Pattern[str] | None:
    """The compiled matcher of one keyword, or None for a blank keyword."""
    words = keyword.split()
    if not words:
        return None
    body = r"\s+".join(re.escape(word) for word in words)
    phrase = " ".join(words)
    before = f"(?<!{_BOUNDED_WORD_CHAR})" if _needs_boundary(phrase[0]) else ""
    after = f"(?!{_BOUNDED_WORD_CHAR})" if _needs_boundary(phrase[-1]) else ""
    return re.compile(before + body + after, re.IGNORECASE)


class KeywordSet:
    """A fixed list of keywords, compiled on first use; reports which ones occur in a text.

    Compiling waits for the first match: a policy is also built just to hash its settings
    (the serving epoch, on every search), and that needs the keywords, not their patterns.
    """

    __slots__ = ("_compiled", "_keywords")

    def __init__(self, keywords: Sequence[str]) -> None:
        # A keyword that is blank as written and once normalised (only markup, say) has no
        # pattern at all and is left out, as it always was.
        self._keywords = tuple(k for k in keywords
                               if k.split() or normalize_for_matching(k).split())
        self._compiled: tuple[tuple[str, re.Pattern[str] | None,
                                    re.Pattern[str] | None], ...] | None = None

    @property
    def _patterns(self) -> tuple[tuple[str, re.Pattern[str] | None,
                                       re.Pattern[str] | None], ...]:
        """(keyword as configured, pattern over the text as written, pattern over the
        normalised text); a keyword made only of markup has no normalised pattern."""
        if self._compiled is None:
            self._compiled = tuple(
                (keyword, keyword_pattern(keyword),
                 keyword_pattern(normalize_for_matching(keyword)))
                for keyword in self._keywords)
        return self._compiled

    @property
    def keywords(self) -> tuple[str, ...]:
        return self._keywords

    def found_in(self, text: str, *, normalized: str | None = None) -> list[str]:
        """The keywords (as configured) that occur in ``text``, in configured order.

        ``normalized`` is ``normalize_for_matching(text)`` when the caller already has it
        (one paragraph is matched against several keyword sets).
        """
        folded = normalize_for_matching(text) if normalized is None else normalized
        return [
            keyword
            for keyword, as_written, normalised in self._patterns
            if (normalised is not None and normalised.search(folded))
            or (as_written is not None and as_written.search(text))
        ]
