"""Deterministic sentence splitting for English and CJK text, by character offsets.

Shared by the chunker (oversized paragraphs) and claim extraction, so it must be stable:
the same text always gives the same spans. A sentence ends at ``. ! ? ;``, at the CJK
enders ``。！？；．`` or at an ellipsis, together with any closing quotes or brackets that
follow. An ASCII ender ends a sentence only before whitespace (or CJK text, or the end);
a CJK ender ends one wherever it stands. A period does not end a sentence after a common
abbreviation, an initial, a list number or a numbering word before a number
(``No. 5``, ``Art. 12``). Blank lines and new list items also start a sentence.
"""

from __future__ import annotations

import re

from affidavit.errors import InputRejected

_ASCII_ENDERS = ".!?;"
_CJK_ENDERS = "。！？；．…"
_CLOSERS = "\"')]}»”’」』）】〕〉》〗〙〛＂＇］｝"
_OPENERS = "\"'([{«“‘「『（【〔〈《〖〘〚＂＇［｛"
_ENDER_RUN = re.compile(f"[{re.escape(_ASCII_ENDERS + _CJK_ENDERS)}]+[{re.escape(_CLOSERS)}]*")
# A blank line, or a line break before a list item, always parts two sentences.
_HARD_BREAK = re.compile(r"\n[ \t]*(?:\n\s*|(?=(?:[-*•·]|\d{1,3}[.)])[ \t]))")

# Abbreviations after which a period never ends a sentence (compared without the period,
# case-insensitively).
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "mx", "dr", "prof", "sr", "jr", "st", "rev", "hon", "gen", "capt",
    "col", "lt", "sgt", "vs", "v", "cf", "e.g", "i.e", "viz", "approx", "ca", "esp",
    "incl", "excl", "resp", "dept", "est", "al", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "mt", "ft",
})  # fmt: skip
# Words that number something: the period is kept when a number follows ("No. 5").
_NUMBERING = frozenset({
    "no", "nos", "nr", "art", "arts", "sec", "secs", "fig", "figs", "p", "pp", "para",
    "paras", "ch", "chap", "vol", "vols", "ref", "cl", "tab", "eq", "ex",
})  # fmt: skip
# Abbreviations that may also end a sentence: they end one when a capital follows.
_SOFT_ABBREVIATIONS = frozenset({"etc", "inc", "ltd", "co", "corp", "bros"})
_DOTTED = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")  # e.g, i.e, U.S, a.m
_LIST_MARKER = re.compile(r"\d{1,3}|[A-Za-z]|[ivxlcdm]{1,6}|[IVXLCDM]{1,6}")
_MAX_TOKEN = 40  # longer tokens are never abbreviations; bounds the look-back


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Spans of the sentences in ``text[start:end]``, trimmed of surrounding whitespace.

    Spans are absolute offsets into ``text``, in order, non-overlapping, and together
    they cover every non-whitespace character of the range.
    """
    stop = len(text) if end is None else end
    if not 0 <= start <= stop <= len(text):
        raise InputRejected("BAD_SPAN", f"range {start}:{stop} is outside the text")
    spans: list[tuple[int, int]] = []
    previous = start
    for cut in [*_cuts(text, start, stop), stop]:
        span = _trimmed(text, previous, cut)
        if span is not None:
            spans.append(span)
        previous = cut
    return spans


def _cuts(text: str, start: int, stop: int) -> list[int]:
    """Offsets where one sentence ends and the next may begin, ascending."""
    cuts = {
        m.end()
        for m in _ENDER_RUN.finditer(text, start, stop)
        if _ends_sentence(text, m, start, stop)
    }
    cuts.update(m.start() for m in _HARD_BREAK.finditer(text, start, stop))
    return sorted(cut for cut in cuts if start < cut < stop)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _ends_sentence(text: str, run: re.Match[str], start: int, stop: int) -> bool:
    enders = run.group().rstrip(_CLOSERS)
    after = run.end()
    if any(ch in _CJK_ENDERS for ch in enders):
        return not _is_fullwidth_decimal(text, run, stop)
    if after < stop and not (text[after].isspace() or _is_cjk(text[after])):
        return False  # 3.5, CC6.1, e.g.x, "Yahoo!Inc" ...
    if enders != ".":
        return True  # "?!", "...": an emphatic or trailing ending
    following = _next_visible(text, after, stop)
    return not _period_is_abbreviation(text, start, run.start(), following)


def _is_fullwidth_decimal(text: str, run: re.Match[str], stop: int) -> bool:
    """A full-width period between digits (３．５) is a decimal point, not an ender."""
    if run.group() != "．" or run.start() == 0 or run.end() >= stop:
        return False
    return text[run.start() - 1].isdigit() and text[run.end()].isdigit()


def _next_visible(text: str, position: int, stop: int) -> str:
    while position < stop and text[position].isspace():
        position += 1
    return text[position] if position < stop else ""


def _period_is_abbreviation(text: str, start: int, period: int, following: str) -> bool:
    """Whether the single period at ``period`` closes an abbreviation, not a sentence."""
    token_start = _token_start(text, start, period)
    if token_start is None:
        return False
    token = text[token_start:period].lstrip(_OPENERS)
    folded = token.casefold()
    if folded in _ABBREVIATIONS or _DOTTED.fullmatch(token):
        return True
    if folded in _NUMBERING:
        return following.isdigit() or following in "(§#"
    if folded in _SOFT_ABBREVIATIONS:
        return not following.isupper()
    if len(token) == 1 and token.isupper():
        return True  # an initial: "J. K. Rowling"
    return _LIST_MARKER.fullmatch(token) is not None and _starts_line(text, start, token_start)


def _token_start(text: str, start: int, period: int) -> int | None:
    """Start of the whitespace-free token ending at ``period``; None when it is too long."""
    position = period
    floor = max(start, period - _MAX_TOKEN)
    while position > floor and not text[position - 1].isspace():
        position -= 1
    if position == floor and floor > start and not text[position - 1].isspace():
        return None
    return position if position < period else None


def _starts_line(text: str, start: int, position: int) -> bool:
    """Only blanks stand between ``position`` and the start of its line (or range)."""
    while position > start and text[position - 1] in " \t":
        position -= 1
    return position == start or text[position - 1] == "\n"


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
    )
