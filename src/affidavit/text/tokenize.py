"""The lexical tokenizer: one function from text to index terms, shared by documents and queries.

Rules, in the order they apply:

1. Unicode NFKC, then ``str.casefold`` (full-width letters become ASCII, ``ß`` becomes ``ss``).
2. CJK runs (Han, Hiragana, Katakana, Hangul) are not segmented into words: a run
   ``c1 c2 c3`` emits every character, then every adjacent pair, in text order:
   ``c1, c2, c3, c1c2, c2c3``. The two granularities let BM25 work without a segmenter.
3. Everything else: a word is a run of letters and digits of any script, combining marks
   included (so Devanagari words are not cut at their vowel signs). Any other character
   separates words; apostrophes too, so ``don't`` gives ``don`` and ``t``. A CJK character
   ends a word, so ``Q3营收`` gives ``q3`` and the run ``营收``.
4. Words joined by a ``.`` with a digit on both sides stay one token, so clause identifiers
   (``cc6.1``, ``164.312``, ``v2.0.1``) are searchable as written; a sentence-ending dot is
   followed by a space and never joins.
5. Stop words (compared after step 1) are dropped, CJK grams included. An entry ``@name``
   stands for the built-in list ``name`` (:mod:`affidavit.text.stopwords`).
6. Words are stemmed with the Snowball stemmer of the configured language, except words
   holding a digit (identifiers stay exact), words longer than :data:`MAX_STEM_CHARS` and
   CJK grams.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Iterable
from operator import add
from typing import Any

import Stemmer

from affidavit.config.settings import LexicalSettings
from affidavit.errors import ConfigurationError
from affidavit.records import stable_hash
from affidavit.text import unicode_marks
from affidavit.text.forms import nfkc
from affidavit.text.stopwords import expand_stop_words

TOKENIZER_VERSION = "1"
"""Bumped whenever a change to these rules could change any token; part of the signature."""

MAX_STEM_CHARS = 64
"""Longer words (hashes, base64, URLs squashed by extraction) are kept verbatim, unstemmed."""

UNSTEMMED_LANGUAGES = frozenset({"chinese", "japanese", "korean", "thai", "vietnamese", "none"})
"""Languages that are valid settings but have no Snowball stemmer: tokens stay unstemmed."""

CJK_CLASS = (
    # Han: extension A, unified, compatibility, extensions B-G; iteration and numeral marks
    "\u3005\u3007\u3021-\u3029\u3038-\u303b\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U00020000-\U0003134f"
    # Hiragana and Katakana (without the middle dot and double hyphen, which are punctuation)
    "\u3041-\u3096\u3099-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff\uff66-\uff9f"
    # Hangul: jamo, compatibility jamo, syllables
    "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
)
"""Regex character-class body (without brackets) of the scripts emitted as character grams."""

_CACHE_SIZE = 1 << 17
_DIGIT = re.compile(r"\d")


def scan_mark_ranges(first: int, stop: int) -> list[tuple[int, int]]:
    """Inclusive runs of the combining marks (Mn, Mc, Me) in ``[first, stop)``, found by
    asking ``unicodedata`` about every code point."""
    ranges: list[tuple[int, int]] = []
    for code in range(first, stop):
        if unicodedata.category(chr(code))[0] != "M":
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return ranges


def mark_ranges(first: int, stop: int) -> list[tuple[int, int]]:
    """The runs of :func:`scan_mark_ranges`, from the written table of this Unicode version
    when the running Python has it (the same runs, cut to the span), else scanned."""
    if unicodedata.unidata_version != unicode_marks.UNICODE_VERSION:
        return scan_mark_ranges(first, stop)
    return [(max(lo, first), min(hi, stop - 1))
            for lo, hi in unicode_marks.MARK_RANGES if lo < stop and hi >= first]


def _mark_ranges(first: int, stop: int) -> str:
    """Character-class body of the combining marks (Mn, Mc, Me) in ``[first, stop)``."""
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in mark_ranges(first, stop)
    )


def _mark_pattern() -> str:
    """A regex matching one combining mark.

    Python's ``\\w`` excludes marks, which would cut Indic and other abugida words apart.
    The basic plane gets its own class because ``re`` tests a BMP-only class in constant
    time; the supplementary marks (planes 1 and 14) are tried only for astral characters.
    """
    basic = _mark_ranges(0, 0x10000)
    astral = _mark_ranges(0x10000, 0x20000) + _mark_ranges(0xE0000, 0xE1000)
    return f"(?:[{basic}]|(?=[\\U00010000-\\U0010ffff])[{astral}])"


@functools.cache
def _joined_word() -> str:
    """A word (letters, digits, combining marks; clause ids joined), as a regex."""
    word_char = f"[^\\W_{CJK_CLASS}]"
    word = f"{word_char}+(?:{_mark_pattern()}+{word_char}*)*"
    return f"{word}(?:(?<=\\d)\\.(?=\\d){word})*"


@functools.cache
def _token_pattern() -> re.Pattern[str]:
    """The one tokenizing regex: group 1 is a word (clause ids joined), group 2 a CJK run."""
    # Words first: they are the common case, and the classes are disjoint.
    return re.compile(f"({_joined_word()})|([{CJK_CLASS}]+)")


@functools.cache
def _word_pattern() -> re.Pattern[str]:
    """Group 1 of :func:`_token_pattern` alone: in a text with no CJK character it finds the
    same matches, as whole strings."""
    return re.compile(_joined_word())


@functools.cache
def _cjk_character() -> re.Pattern[str]:
    return re.compile(f"[{CJK_CLASS}]")


def _normalize(text: str) -> str:
    return nfkc(text).casefold()


class _ThreadStemmers(threading.local):
    """Snowball stemmer objects are not safe to share between threads: one per thread."""

    def __init__(self) -> None:
        self.by_language: dict[str, Any] = {}


_stemmers = _ThreadStemmers()


def _thread_stemmer(algorithm: str) -> Any:
    stemmer = _stemmers.by_language.get(algorithm)
    if stemmer is None:
        stemmer = Stemmer.Stemmer(algorithm)
        _stemmers.by_language[algorithm] = stemmer
    return stemmer


def _resolve_language(language: str) -> str:
    """The Snowball algorithm name for ``language``, "" when it has none; unknown -> error."""
    name = language.strip().lower()
    if name in Stemmer.algorithms():
        return name
    if name in UNSTEMMED_LANGUAGES:
        return ""
    known = ", ".join(sorted({*Stemmer.algorithms(), *UNSTEMMED_LANGUAGES}))
    raise ConfigurationError(
        f"unknown tokenizer language {language!r} (known: {known})", key="lexical.language"
    )


def word_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the words and CJK runs in ``text`` as the tokenizer cuts them (rules 3-4),
    for text that is already NFKC-folded; each span gives its terms through
    :meth:`Tokenizer.tokenize`."""
    return [match.span() for match in _token_pattern().finditer(text)]


def cjk_grams(run: str) -> list[str]:
    """Unigrams then adjacent bigrams of one CJK run, in text order."""
    return [*run, *map(add, run, run[1:])]


class Tokenizer:
    """Text to index terms; the same instance rules documents and queries alike."""

    def __init__(
        self, language: str = "english", stem: bool = True, stop_words: Iterable[str] = ()
    ) -> None:
        self._language = language.strip().lower()
        self._stem = stem
        algorithm = _resolve_language(language)
        self._algorithm = algorithm if stem else ""
        # "@english" names a built-in list (index/stopwords.py); other entries are words.
        words = expand_stop_words(stop_words)
        self._stop_words = frozenset(w for w in (_normalize(s).strip() for s in words) if w)
        # A CJK gram is CJK characters only, so only a stop word holding one can match it.
        self._cjk_stop_words = frozenset(w for w in self._stop_words
                                         if _cjk_character().search(w))
        self._stems: dict[str, str] = {}

    @classmethod
    def from_settings(cls, settings: LexicalSettings) -> Tokenizer:
        """The tokenizer the ``[lexical]`` settings describe."""
        return cls(settings.language, settings.stem, settings.stop_words)

    @property
    def language(self) -> str:
        return self._language

    @property
    def stems(self) -> bool:
        """True when words are actually stemmed (stemming asked for and available)."""
        return bool(self._algorithm)

    @property
    def signature(self) -> str:
        """Short stable identity of these rules and options; it goes into index witnesses."""
        stop = stable_hash(*sorted(self._stop_words))[:12] if self._stop_words else "none"
        stemming = f"stem-{Stemmer.version()}" if self._stem else "nostem"
        return (
            f"tok{TOKENIZER_VERSION}:{self._language}:{stemming}:sw-{stop}"
            f":ucd-{unicodedata.unidata_version}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The options, as plain data (stop words sorted)."""
        return {
            "language": self._language,
            "stem": self._stem,
            "stop_words": sorted(self._stop_words),
        }

    def tokenize(self, text: str) -> list[str]:
        """Index terms of ``text``, in text order, repeats kept (they are term frequencies)."""
        normalized = _normalize(text)
        stop = self._stop_words
        if _cjk_character().search(normalized) is None:
            # Every match is a word: one list built in C, then stemmed through the cache.
            words = _word_pattern().findall(normalized)
            if stop:
                words = [word for word in words if word not in stop]
            if not self._algorithm:
                return words
            stems, stem_word = self._stems, self._stem_word
            return [cached if (cached := stems.get(word)) is not None else stem_word(word)
                    for word in words]
        tokens: list[str] = []
        cjk_stop = self._cjk_stop_words
        stem = self._stem_word if self._algorithm else None
        for word, cjk_run in _token_pattern().findall(normalized):
            if cjk_run:
                grams = cjk_grams(cjk_run)
                tokens.extend([g for g in grams if g not in cjk_stop] if cjk_stop else grams)
            elif word not in stop:
                tokens.append(stem(word) if stem else word)
        return tokens

    def _stem_word(self, word: str) -> str:
        cached = self._stems.get(word)
        if cached is not None:
            return cached
        if len(word) > MAX_STEM_CHARS:
            return word
        stemmed: str = (
            word if _DIGIT.search(word) else _thread_stemmer(self._algorithm).stemWord(word)
        )
        if len(self._stems) >= _CACHE_SIZE:
            # A bounded cache; clearing it only costs speed, never changes a token.
            self._stems.clear()
        self._stems[word] = stemmed
        return stemmed

    def __repr__(self) -> str:
        return f"Tokenizer({self.signature!r})"
