"""Text primitives of the answering stage: sentence spans, content terms, normalization.

Everything here is pure and deterministic.
"""

from __future__ import annotations

import re
import threading
import unicodedata

import Stemmer

from affidavit.text.sentences import split_sentences

CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_WORD_OR_CJK = re.compile(f"[{CJK_CLASS}]+|[^\\W_{CJK_CLASS}]+")

STOP_WORDS = frozenset(
    (
        "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and",
        "any", "are", "as", "at", "be", "because", "been", "before", "being", "below",
        "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down",
        "during", "each", "few", "for", "from", "further", "had", "has", "have", "having",
        "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it",
        "its", "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of",
        "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own",
        "same", "she", "should", "so", "some", "such", "than", "that", "the", "their",
        "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "to",
        "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
        "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your",
        "yours", "please", "tell", "explain", "describe", "say", "says", "said", "according",
        "us",
    )
)

# Snowball stemmers keep state, so each thread gets its own.
_STEMMERS = threading.local()


def normalize_space(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def clean_control_chars(text: str) -> str:
    """Unify line endings and drop control and format characters other than tab and newline.

    Format characters (zero-width spaces, bidi overrides) are dropped because they let two
    strings that look the same compare different, which delimiters and guards must not allow.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(
        ch for ch in text
        if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co")
    )


def stem(word: str) -> str:
    """The English Snowball stem of a casefolded word."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = Stemmer.Stemmer("english")
        _STEMMERS.english = stemmer
    return str(stemmer.stemWord(word))


def content_terms(text: str) -> list[str]:
    """Content terms in order: stemmed casefolded words without stop words or bare numbers,
    and character bigrams for CJK runs (a lone CJK character stands for itself)."""
    terms: list[str] = []
    for match in _WORD_OR_CJK.finditer(text.casefold()):
        token = match.group()
        if _CJK_RUN.fullmatch(token):
            terms.extend(cjk_bigrams(token))
        elif token not in STOP_WORDS and not token.isdigit() and len(token) > 1:
            terms.append(stem(token))
    return terms


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of one CJK run; a one-character run is its own term."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of ``text``, trimmed of surrounding whitespace.

    The one place answering decides sentence bounds (extractive selection, claims, the
    guard's fragments); it delegates to the splitter the chunker uses, so that a sentence
    means the same thing at ingestion and at answer time.
    """
    return split_sentences(text)
