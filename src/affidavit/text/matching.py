"""The one text normaliser every matcher reads through.

Keyword rules and restricted filename patterns (:mod:`affidavit.classify`), the
out-of-scope gate (:mod:`affidavit.retrieval.scope`) and citation parsing
(:mod:`affidavit.llm.citations`) all look for their strings in
:func:`normalize_for_matching` of the text, and normalise what they look for the same way,
so that a disguise that leaves a word readable to a person or a model cannot hide it from a
matcher. The rules, in the order they apply:

1. HTML character references are decoded (``&shy;``, ``&#x200B;``, ``&nbsp;``).
2. A soft hyphen at a line end is a hyphenation point: it and the line break are removed.
3. Default-ignorable code points (soft hyphen, zero-width space and joiners, bidi controls,
   variation selectors, Hangul fillers, tag characters) are removed.
4. NFKC case folding: NFKC, ``str.casefold``, NFKC again (full-width letters become ASCII,
   ``ﬂ`` becomes ``fl``, ``ß`` becomes ``ss``); ``æ`` and ``œ``, which NFKC keeps, are
   expanded to ``ae`` and ``oe`` as well. Before case folding, in a word that mixes ASCII
   letters with Cyrillic, Greek or IPA letters drawn like Latin ones (``Lighthоuse`` with a
   Cyrillic ``о``), those letters are read as the Latin ones they imitate.
5. Inline markup is stripped: HTML tags (a block tag such as ``<br>`` or ``<p>`` leaves a
   space, an inline one such as ``<b>`` leaves nothing), and the Markdown emphasis and code
   marks ``*``, ``~`` and backticks; ``_`` too, except between two letters or digits, where
   it is part of a name (``snake_case``).
6. A word hyphenated across a line end is joined: ``light-`` at a line end followed by
   ``house`` on the next line reads ``lighthouse``. Steps 5 and 6 repeat until the text
   stops changing, so that removing one mark cannot leave another one formed behind it.

The identifier detectors (e-mail, phone, national ids, IBAN, cards) read the text as
written and :func:`normalize_for_detectors` of it, which keeps letter case (they tell an
IBAN's ``GB`` from ``gb``) but removes the same disguises.

:func:`normalize_for_matching` is the fast form for whole paragraphs;
:func:`mapped_for_matching` gives the same text with, for every character, the span of the
original it came from (for masking or rewriting what was found). Both are pure and
deterministic (they depend only on the text and the Unicode version of the interpreter).
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from affidavit.text.forms import nfkc

__all__ = [
    "MappedText",
    "fold_literal",
    "mapped_for_matching",
    "normalize_for_detectors",
    "normalize_for_matching",
]

# Unicode's Default_Ignorable_Code_Point set (DerivedCoreProperties.txt): characters that
# render as nothing, so they can sit inside a word without a reader noticing.
_IGNORABLE_CLASS = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_LINE_BREAK = "(?:\r\n|[\n\r\u0085\u2028\u2029])"
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_SOFT_HYPHEN_AT_LINE_END = re.compile(
    f"\u00ad[ \t{_IGNORABLE_CLASS}]*{_LINE_BREAK}[ \t{_IGNORABLE_CLASS}]*")
_IGNORABLE = re.compile(f"[{_IGNORABLE_CLASS}]+")
_LIGATURES = {"æ": "ae", "œ": "oe"}
# Cyrillic, Greek and IPA letters drawn like a Latin letter (Unicode's confusables, the
# unambiguous ones). Only a word that also holds an ASCII letter is rewritten: such a word
# is a spoof ("Lighthоuse" with a Cyrillic o); a word wholly in another script is left alone.
_LOOKALIKE_FROM = (
    "АВЕКМНОРСТХЅІЈҮаеорсухѕіјһԁԛԝӏү"     # Cyrillic
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοαικνρυχ"              # Greek
    "ɑɡıȷ"                                # Latin letters of other alphabets (IPA, Turkish)
)
_LOOKALIKE_TO = (
    "ABEKMHOPCTXSIJYaeopcyxsijhdqwly"
    "ABEZHIKMNOPTYXoaiknpux"
    "agij"
)
_LOOKALIKE_TABLE = str.maketrans(_LOOKALIKE_FROM, _LOOKALIKE_TO)
_LOOKALIKE = re.compile(f"[{_LOOKALIKE_FROM}]")
_WORD = re.compile(r"[^\W_]+")
_HTML_TAG = re.compile(r"</?([a-z][a-z0-9]{0,15})(?:[\s/][^<>]{0,256})?>")
_BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
    "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main",
    "nav", "ol", "p", "pre", "section", "table", "tbody", "td", "tfoot", "th", "thead", "tr",
    "ul",
})
_EMPHASIS_MARKS = re.compile(r"[*~`]+")
_UNDERSCORES = re.compile(r"_+")
# The letter before a line-end hyphen is checked in _joined: a lookbehind here would be
# tried at every position of every paragraph.
_HYPHEN_AT_LINE_END = re.compile(
    f"[-\u2010][ \t]*{_LINE_BREAK}[ \t]*(?=[^\\W\\d_])")


def _underscore_replacement(match: re.Match[str]) -> str:
    """``_`` between two letters or digits belongs to a name (``snake_case``); elsewhere it
    is emphasis."""
    text, start, end = match.string, match.start(), match.end()
    inside_name = start > 0 and end < len(text) and (
        text[start - 1].isalnum() and text[end].isalnum())
    return match.group() if inside_name else ""


def _joined(match: re.Match[str]) -> str:
    start = match.start()
    after_letter = start > 0 and match.string[start - 1].isalpha()
    return "" if after_letter else match.group()


def _decoded(match: re.Match[str]) -> str:
    return html.unescape(match.group())


def _tag_replacement(match: re.Match[str]) -> str:
    return " " if match.group(1) in _BLOCK_TAGS else ""


def _nothing(_: re.Match[str]) -> str:
    return ""


def _casefold(text: str) -> str:
    """Step 4 after NFKC, for one piece of text (a paragraph or one cluster)."""
    folded = nfkc(text.casefold())
    if "æ" in folded or "œ" in folded:
        folded = "".join(_LIGATURES.get(ch, ch) for ch in folded)
    return folded


def _latinised(match: re.Match[str]) -> str:
    word = match.group()
    if any("a" <= char <= "z" or "A" <= char <= "Z" for char in word):
        return word.translate(_LOOKALIKE_TABLE)
    return word


def _fold(text: str) -> str:
    """Step 4 (NFKC, look-alike letters in mixed-script words, case folding)."""
    text = nfkc(text)
    if _LOOKALIKE.search(text):
        text = _WORD.sub(_latinised, text)
    return _casefold(text)


_Step = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]
_BEFORE_FOLD: tuple[_Step, ...] = (
    (_ENTITY, _decoded),
    (_SOFT_HYPHEN_AT_LINE_END, _nothing),
    (_IGNORABLE, _nothing),
)
_AFTER_FOLD: tuple[_Step, ...] = (
    (_EMPHASIS_MARKS, _nothing),
    (_UNDERSCORES, _underscore_replacement),
    (_HTML_TAG, _tag_replacement),
    (_HYPHEN_AT_LINE_END, _joined),
)
# Removing one mark can form another (``<`a>`` becomes a tag, ``a-*`` then a line end
# becomes a hyphenated word), so these steps repeat until nothing changes; each change
# shortens the text, so this ends.


def normalize_for_matching(text: str) -> str:
    """``text`` as every matcher reads it (see the module docstring for the rules)."""
    text = _ENTITY.sub(_decoded, text)
    if text.isascii():  # the common case: nothing to remove, folding is lower-casing
        text = text.lower()
    else:
        for pattern, replacement in _BEFORE_FOLD[1:]:
            text = pattern.sub(replacement, text)
        # NFKC maps a few characters (U+FFA0) onto ignorables: remove those too.
        text = _IGNORABLE.sub("", _fold(text))
    previous = None
    while text != previous:
        previous = text
        for pattern, replacement in _AFTER_FOLD:
            text = pattern.sub(replacement, text)
    return text


def fold_literal(text: str) -> str:
    """Rules 1 to 4 only: for strings whose punctuation is syntax, such as glob patterns,
    where ``*`` and ``_`` must survive."""
    for pattern, replacement in _BEFORE_FOLD:
        text = pattern.sub(replacement, text)
    return _IGNORABLE.sub("", _fold(text))


_DETECTOR_MARKUP = frozenset("&*`~<")


def normalize_for_detectors(text: str) -> str:
    """What the identifier detectors (e-mail, phone, national id, IBAN, card) read besides
    the text as written: rules 1 to 3, NFKC without case folding (full-width digits and
    ``＠`` become ASCII; detectors tell ``GB`` from ``gb``), and emphasis marks and HTML
    tags removed, so that ``4111\u200b1111...`` or ``１２３-４５-６７８９`` is still seen."""
    if text.isascii() and _DETECTOR_MARKUP.isdisjoint(text):
        return text
    text = _ENTITY.sub(_decoded, text)
    for pattern, replacement in _BEFORE_FOLD[1:]:
        text = pattern.sub(replacement, text)
    text = _IGNORABLE.sub("", nfkc(text))
    return _HTML_TAG.sub(_tag_replacement, _EMPHASIS_MARKS.sub("", text))


@dataclass(frozen=True)
class MappedText:
    """Normalised text plus, per character, the ``[start, end)`` of the original it came from."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``text[start:end]`` (non-empty) came from."""
        return self.starts[start], self.ends[end - 1]


class _Builder:
    """Characters with their source spans, rewritten step by step."""

    def __init__(self, chars: list[str], starts: list[int], ends: list[int]) -> None:
        self.chars, self.starts, self.ends = chars, starts, ends

    def substitute(self, pattern: re.Pattern[str],
                   replacement: Callable[[re.Match[str]], str]) -> None:
        text = "".join(self.chars)
        chars: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        done = 0
        for match in pattern.finditer(text):
            first, stop = match.span()
            chars.extend(self.chars[done:first])
            starts.extend(self.starts[done:first])
            ends.extend(self.ends[done:first])
            new = replacement(match)
            chars.extend(new)
            if len(new) == stop - first:  # one for one: each keeps its own origin
                starts.extend(self.starts[first:stop])
                ends.extend(self.ends[first:stop])
            else:
                starts.extend([self.starts[first]] * len(new))
                ends.extend([self.ends[stop - 1]] * len(new))
            done = stop
        chars.extend(self.chars[done:])
        starts.extend(self.starts[done:])
        ends.extend(self.ends[done:])
        self.chars, self.starts, self.ends = chars, starts, ends

    def fold(self) -> None:
        """Step 4 as :func:`_fold` does it, cluster by cluster where NFKC applies."""
        self.map_clusters(nfkc)
        self.substitute(_WORD, _latinised)
        self.map_clusters(_casefold)

    def map_clusters(self, fold: Callable[[str], str]) -> None:
        """``fold`` applied to each cluster: a character and the marks that compose with it."""
        chars: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        position = 0
        while position < len(self.chars):
            stop = position + 1
            while stop < len(self.chars) and _continues_cluster(self.chars[stop]):
                stop += 1
            folded = fold("".join(self.chars[position:stop]))
            chars.extend(folded)
            starts.extend([self.starts[position]] * len(folded))
            ends.extend([self.ends[stop - 1]] * len(folded))
            position = stop
        self.chars, self.starts, self.ends = chars, starts, ends


@functools.lru_cache(maxsize=4096)
def _continues_cluster(char: str) -> bool:
    """Whether NFKC may compose ``char`` with what precedes it."""
    if unicodedata.category(char).startswith("M") or unicodedata.combining(char):
        return True
    if "\u1160" <= char <= "\u11ff" or "\ud7b0" <= char <= "\ud7ff":  # Hangul V and T jamo
        return True
    decomposed = unicodedata.normalize("NFKD", char)
    return bool(decomposed) and unicodedata.combining(decomposed[0]) != 0


def mapped_for_matching(text: str) -> MappedText:
    """:func:`normalize_for_matching` of ``text`` with the source span of every character."""
    builder = _Builder(list(text), list(range(len(text))), list(range(1, len(text) + 1)))
    for pattern, replacement in _BEFORE_FOLD:
        builder.substitute(pattern, replacement)
    builder.fold()
    builder.substitute(_IGNORABLE, _nothing)
    previous = None
    while builder.chars != previous:
        previous = builder.chars
        for pattern, replacement in _AFTER_FOLD:
            builder.substitute(pattern, replacement)
    return MappedText("".join(builder.chars), tuple(builder.starts), tuple(builder.ends))
