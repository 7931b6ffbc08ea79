"""Atoms: the checkable facts inside a claim (regulatory citations, numbers, dates, temporal
triggers), found by rules alone, with exact offsets and a normalized value.

Normalized values make two spellings of one fact compare equal: ``$4M`` and
``USD 4,000,000`` are both ``4000000 USD``; ``31 March 2026`` and ``2026-03-31`` are both
``2026-03-31``; ``within`` and ``no later than`` are both ``upper_bound``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from affidavit.llm.text import CJK_CLASS, STOP_WORDS

ATOM_KINDS = ("regulatory_citation", "number", "date", "temporal")


@dataclass(frozen=True)
class Atom:
    """One atomic fact: ``source[start:end] == text``.

    ``unit`` is the canonical unit of a number (``USD``, ``%``, ``day``); ``noun`` is the
    word the number or date is about (its controlling noun), when one was found.
    """

    kind: str
    text: str
    start: int
    end: int
    value: str
    unit: str = ""
    noun: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"kind": self.kind, "text": self.text, "start": self.start, "end": self.end,
                "value": self.value, "unit": self.unit, "noun": self.noun}


# --------------------------------------------------------------------------- patterns

_NOT_WORD_BEFORE = r"(?<![A-Za-z0-9_])"
_NOT_WORD_AFTER = r"(?![A-Za-z0-9_])"

CLAUSE_ID_PATTERN = re.compile(
    "|".join(
        (
            rf"{_NOT_WORD_BEFORE}[A-Z]{{1,4}}\d{{1,2}}(?:\.\d{{1,3}})+(?![0-9])",
            r"§{1,2}\s*\d+(?:\.\d+)*(?:\([A-Za-z0-9]{1,4}\))*",
            rf"{_NOT_WORD_BEFORE}(?i:article|art\.)\s*\d+[a-z]?(?:\(\d+\))*(?:\([a-z]\))*",
            rf"{_NOT_WORD_BEFORE}(?i:section|sec\.|clause)\s*\d+(?:\.\d+)*(?:\([A-Za-z0-9]{{1,4}}\))*",
            rf"{_NOT_WORD_BEFORE}ISO(?:/IEC)?\s*\d{{4,5}}(?:-\d+)?(?::\d{{4}})?"
            r"(?:,?\s*(?:Annex\s+)?A\.\d+(?:\.\d+)*)?",
            r"(?<![A-Za-z0-9.])A\.\d+(?:\.\d+)+",
            r"第\s*[0-9一二三四五六七八九十百零〇]+\s*[条款章节]",
        )
    )
)
"""Regulatory citations and clause ids: CC6.1, § 164.312(a), Article 32, Section 4.2,
ISO 27001 A.9.2, 第32条."""

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=lambda m: (-len(m), m))) + r")\.?"
_DATE_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"(?<![\d\-/])(?P<year>\d{4})[-/](?P<mon>\d{1,2})[-/](?P<day>\d{1,2})(?![\d\-/])",
        rf"(?<![A-Za-z0-9])(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\s*,?\s+"
        r"(?P<year>\d{4})(?!\d)",
        rf"(?<![A-Za-z]){_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s+(?P<year>\d{{4}})(?!\d)",
        rf"(?<![A-Za-z]){_MONTH}\s+(?:of\s+)?(?P<year>\d{{4}})(?!\d)",
        r"(?<!\d)(?P<year>\d{4})\s*年(?:\s*(?P<mon>\d{1,2})\s*月(?:\s*(?P<day>\d{1,2})\s*[日号])?)?",
        r"(?<![A-Za-z0-9])Q(?P<quarter>[1-4])\s*(?:FY\s*)?(?P<year>\d{4})(?!\d)",
        r"(?<![A-Za-z])(?:in|since|by|from|until|during|of|before|after|through|year|fy)\s+"
        r"(?P<year>(?:19|20)\d{2})(?![\d.,]*\d)(?!\s*(?:%|percent))",
    )
)

_AMOUNT = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_CURRENCY_CODES = "USD|EUR|GBP|JPY|CNY|RMB|CHF|CAD|AUD|INR|HKD|SGD"
_UNITS = (
    r"%|％|percent\b|per\s?cent\b|(?:business|working|calendar)\s+(?:days?|weeks?|months?)\b"
    r"|days?\b|hours?\b"
    r"|hrs?\b|minutes?\b|mins?\b|seconds?\b|secs?\b|weeks?\b|months?\b|years?\b|yrs?\b"
    r"|nights?\b|kilomet(?:er|re)s?\b|km\b|miles?\b|kilograms?\b|kg\b"
    rf"|(?:{_CURRENCY_CODES})\b|dollars?\b|euros?\b|pounds?(?:\s+sterling)?\b|sterling\b"
    r"|个工作日|工作日|个月|小时|分钟|美元|欧元|英镑|日元|人民币|元|天|日|周|年"
)
_NUMBER = re.compile(
    r"(?<![0-9A-Za-z.,_])"
    rf"(?P<cur>US\$|[$€£¥￥]|(?:{_CURRENCY_CODES})\s?)?"
    rf"(?P<amount>{_AMOUNT})"
    r"(?P<scale>\s?(?:thousand|million|billion|trillion)\b|\s?[万亿]"
    r"|(?(cur)\s?(?:bn|mn|k|m|b)(?![A-Za-z])))?"
    rf"(?:\s?(?P<unit>{_UNITS}))?"
    r"(?![0-9]|(?<![%％])[A-Za-z])",
    re.IGNORECASE,
)
_SCALES = {
    "thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6, "mn": 10**6,
    "billion": 10**9, "b": 10**9, "bn": 10**9, "trillion": 10**12, "万": 10**4, "亿": 10**8,
}
_UNIT_NAMES = {
    "%": "%", "％": "%", "percent": "%", "per cent": "%", "percent ": "%",
    "usd": "USD", "$": "USD", "us$": "USD", "dollar": "USD", "美元": "USD",
    "eur": "EUR", "€": "EUR", "euro": "EUR", "欧元": "EUR", "gbp": "GBP", "£": "GBP",
    "pound": "GBP", "pound sterling": "GBP", "pounds sterling": "GBP", "sterling": "GBP",
    "calendar week": "week", "calendar month": "month", "business week": "working week",
    "business month": "working month",
    "night": "night", "km": "km", "kilometer": "km", "kilometre": "km", "mile": "mile",
    "kg": "kg", "kilogram": "kg",
    "英镑": "GBP", "jpy": "JPY", "日元": "JPY", "cny": "CNY", "rmb": "CNY", "元": "CNY",
    "人民币": "CNY", "¥": "CNY/JPY", "￥": "CNY/JPY", "chf": "CHF", "cad": "CAD", "aud": "AUD",
    "inr": "INR", "hkd": "HKD", "sgd": "SGD",
    "day": "day", "calendar day": "day", "天": "day", "日": "day",
    "business day": "business day", "working day": "business day", "工作日": "business day",
    "个工作日": "business day", "hour": "hour", "hr": "hour", "小时": "hour",
    "minute": "minute", "min": "minute", "分钟": "minute", "second": "second", "sec": "second",
    "week": "week", "周": "week", "month": "month", "个月": "month", "year": "year",
    "yr": "year", "年": "year",
}

_SMALL_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}
_WORD_SCALES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9}
NUMBER_WORDS = frozenset((*_SMALL_NUMBER_WORDS, *_WORD_SCALES))
"""English number words the atoms read ("two", "hundred", "million")."""
_NUMBER_WORD = "|".join(sorted((*_SMALL_NUMBER_WORDS, *_WORD_SCALES), key=lambda w: (-len(w), w)))
_WORDED_NUMBER = re.compile(
    rf"(?<![A-Za-z\-])(?P<words>(?:{_NUMBER_WORD})(?:(?:\s+and\s+|\s+|-)(?:{_NUMBER_WORD}))*)"
    rf"(?:\s(?P<unit>{_UNITS}))?(?![A-Za-z\-])",
    re.IGNORECASE,
)
"""Numbers written in words: "two hundred and fifty pounds" is ``250 GBP``."""

_WITHIN_SPAN = (
    r"\d|(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty"
    r"|thirty|forty|fifty|sixty|ninety|a\s+few|several|hundred)\b"
    r"|(?:business|working|calendar)\b|(?:hours?|days?|weeks?|months?|years?|minutes?"
    r"|seconds?|quarters?|periods?|deadlines?|time\s*limits?|timeframes?|time\s+frames?"
    r"|same\s+(?:day|week|month|year)|next|following)\b"
)
"""What follows "within" when it bounds a time: a number or a span of time."""

_TEMPORAL_PATTERNS = tuple(
    (re.compile(p, re.IGNORECASE), value)
    for p, value in (
        (r"(?<![A-Za-z])not?\s+later\s+than(?![A-Za-z])", "upper_bound"),
        (r"(?<![A-Za-z])not?\s+earlier\s+than(?![A-Za-z])", "lower_bound"),
        (r"(?<![A-Za-z])prior\s+to(?![A-Za-z])", "upper_bound"),
        (r"(?<![A-Za-z])(?:before|until)(?![A-Za-z])", "upper_bound"),
        # "within" bounds a time only when a span follows ("within 30 days", "within two
        # weeks", "within the deadline"); "within the organisation" is not a bound.
        (rf"(?<![A-Za-z])within(?=\s+(?:the\s+|a\s+|an\s+)?(?:{_WITHIN_SPAN}))", "upper_bound"),
        (r"(?<![A-Za-z])after(?![A-Za-z])", "lower_bound"),
        # "by" + a number is a deadline ("by 2025", "by 31 March"), not a change ("fell by
        # 10%", "by 3 points", "by half").
        (r"(?<![A-Za-z])by(?=\s+(?:the\s+)?(?:end|close|start|q[1-4]\b|jan|feb|mar|apr|may"
         r"|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun"
         r"|\d{4}(?!\d|[.,]\d|\s?%)|\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep"
         r"|oct|nov|dec)))", "upper_bound"),
        (r"以内|之内|之前|以前", "upper_bound"),
        (r"之后|以后", "lower_bound"),
    )
)

# Words that open a clause or sit near a number without being what the number is about.
_NOT_NOUNS = STOP_WORDS | frozenset(
    (
        "is", "are", "was", "were", "be", "been", "being", "grew", "grow", "grows",
        "increased", "increase", "increases", "decreased", "decrease", "decreases", "rose",
        "rise", "rises", "fell", "fall", "falls", "reached", "reach", "reaches", "totalled",
        "totaled", "totals", "amounted", "amounts", "must", "shall", "should", "may", "might",
        "will", "can", "within", "before", "after", "than", "approximately", "about", "around",
        "roughly", "nearly", "over", "under", "least", "most", "only", "just", "exactly",
        "set", "fixed", "capped", "limited", "equal", "equals", "stands", "stood", "up",
        "down", "per", "each", "every", "since", "via", "total", "overall", "new", "current",
    )
)
_CJK_FUNCTION_CHARS = "为是在于达约共了的以至到需须应必将仅自从起该这此本其"
_CLAUSE_BREAK = re.compile(
    r"[,;:，；：()（）\n]|(?<![A-Za-z])(?:and|but|or|while|whereas)(?![A-Za-z])|而|但|并且",
    re.IGNORECASE,
)
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z\-]+")
_CJK_RUN_BEFORE = re.compile(f"[{CJK_CLASS}]+$")
_CJK_RUN_AFTER = re.compile(f"^\\s*[{CJK_CLASS}]+")

# --------------------------------------------------------------------------- extraction

_Found = tuple[int, int, str, str, str]  # start, end, kind, value, unit


def extract_atoms(text: str, start: int = 0, end: int | None = None) -> tuple[Atom, ...]:
    """Atoms of ``text[start:end]`` in order of position; offsets index into ``text``."""
    stop = len(text) if end is None else end
    taken: list[_Found] = []
    for finder in (_regulatory, _dates, _numbers, _worded_numbers, _temporals):
        for found in finder(text, start, stop):
            if not any(found[0] < t[1] and t[0] < found[1] for t in taken):
                taken.append(found)
    taken.sort()
    return tuple(
        Atom(kind=kind, text=text[s:e], start=s, end=e, value=value, unit=unit,
             noun=_controlling_noun(text, s, e, start, stop, taken) if kind in ("number", "date")
             else "")
        for s, e, kind, value, unit in taken
    )


def _regulatory(text: str, start: int, end: int) -> Iterator[_Found]:
    for m in CLAUSE_ID_PATTERN.finditer(text, start, end):
        yield m.start(), m.end(), "regulatory_citation", regulatory_value(m.group()), ""


def regulatory_value(raw: str) -> str:
    """Canonical form of a regulatory citation (``Art. 32`` and ``article 32`` agree)."""
    value = raw.casefold().replace("iso/iec", "iso").replace("annex", "")
    value = re.sub(r"\bart\.", "article", value)
    value = re.sub(r"\bsec\.", "section", value)
    return re.sub(r"[\s,]+", "", value)


def _dates(text: str, start: int, end: int) -> Iterator[_Found]:
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text, start, end):
            value = _date_value(m)
            if value:
                span_start = m.start("year") if _is_bare_year(m) else m.start()
                yield span_start, m.end(), "date", value, ""


def _is_bare_year(m: re.Match[str]) -> bool:
    groups = m.groupdict()
    present = {k for k, v in groups.items() if v is not None}
    return present == {"year"} and "年" not in m.group()


def _date_value(m: re.Match[str]) -> str:
    groups = m.groupdict()
    year = int(groups["year"])
    if groups.get("quarter"):
        return f"{year:04d}-Q{groups['quarter']}"
    month_name = groups.get("month")
    month = _MONTHS[month_name.casefold()] if month_name else _int_or_none(groups.get("mon"))
    day = _int_or_none(groups.get("day"))
    if month is None:
        return f"{year:04d}"
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return ""
    return f"{year:04d}-{month:02d}" + (f"-{day:02d}" if day is not None else "")


def _int_or_none(raw: str | None) -> int | None:
    return int(raw) if raw else None


def _numbers(text: str, start: int, end: int) -> Iterator[_Found]:
    for m in _NUMBER.finditer(text, start, end):
        value, unit = _number_value(m)
        if value:
            yield m.start(), m.end(), "number", value, unit


def _number_value(m: re.Match[str]) -> tuple[str, str]:
    try:
        amount = Decimal(m.group("amount").replace(",", ""))
    except InvalidOperation:
        return "", ""
    scale = (m.group("scale") or "").strip().casefold()
    amount *= _SCALES.get(scale, 1)
    unit = _canonical_unit(m.group("cur")) or _canonical_unit(m.group("unit"))
    number = canonical_amount(amount)
    if unit == "%":
        return f"{number}%", unit
    return (f"{number} {unit}" if unit else number), unit


def _worded_numbers(text: str, start: int, end: int) -> Iterator[_Found]:
    for m in _WORDED_NUMBER.finditer(text, start, end):
        words = re.split(r"[\s\-]+", m.group("words").casefold())
        unit = _canonical_unit(m.group("unit"))
        # A lone "one" or "zero" is mostly a pronoun or an idiom ("no one", "one of"), not a
        # quantity; it counts only with a unit.
        if len(words) == 1 and words[0] in ("one", "zero") and not unit:
            continue
        amount = worded_amount([w for w in words if w != "and"])
        if amount is None:
            continue
        number = canonical_amount(Decimal(amount))
        value = f"{number}%" if unit == "%" else (f"{number} {unit}" if unit else number)
        yield m.start(), m.end(), "number", value, unit


def worded_amount(words: list[str]) -> int | None:
    """The integer an English number in words names (``["two", "hundred", "fifty"]`` ->
    250), or ``None`` when the words do not form one number ("five six")."""
    total, group, last = 0, 0, 10**13
    for word in words:
        if word in _SMALL_NUMBER_WORDS:
            small = _SMALL_NUMBER_WORDS[word]
            # "twenty five" adds; "five six" or "fifty twenty" is two numbers, not one.
            if group % 100 and not (group % 100 >= 20 and group % 10 == 0 and small < 10):
                return None
            group += small
        elif word == "hundred":
            if group % 100 == 0 or group >= 100:
                return None
            group *= 100
        else:
            scale = _WORD_SCALES[word]
            if scale >= last or group == 0:
                return None
            total, group, last = total + group * scale, 0, scale
    return total + group


def canonical_amount(amount: Decimal) -> str:
    """Decimal without exponent or trailing zeros (``4E+6`` -> ``4000000``, ``1.50`` -> ``1.5``)."""
    text = format(amount.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _canonical_unit(raw: str | None) -> str:
    if not raw:
        return ""
    key = " ".join(raw.casefold().split())
    if key not in _UNIT_NAMES and key.endswith("s"):
        key = key[:-1]
    return _UNIT_NAMES.get(key, key)


def _temporals(text: str, start: int, end: int) -> Iterator[_Found]:
    for pattern, value in _TEMPORAL_PATTERNS:
        for m in pattern.finditer(text, start, end):
            yield m.start(), m.end(), "temporal", value, ""


# --------------------------------------------------------------------------- controlling noun


def _controlling_noun(
    text: str, atom_start: int, atom_end: int, lo: int, hi: int, taken: list[_Found]
) -> str:
    """The noun a number or date is about.

    Without a parser, the subject of the atom's clause is the best deterministic proxy: the
    first content word of the clause before the atom, else the first one after it. Clauses
    end at punctuation and at conjunctions, so "revenue grew 15% and costs fell 3%" ties 3%
    to costs. For CJK text it is the run of characters before (else after) the atom,
    without function characters, at most four characters long.
    """
    free = _outside_atoms(taken)
    clause_lo, clause_hi = _clause(text, atom_start, atom_end, lo, hi, free)
    before = _CJK_RUN_BEFORE.search(text[clause_lo:atom_start].rstrip())
    if before:
        return before.group().strip(_CJK_FUNCTION_CHARS)[-4:]
    for word in _LATIN_WORD.finditer(text, clause_lo, atom_start):
        if free(word) and word.group().casefold() not in _NOT_NOUNS:
            return word.group().casefold()
    after = _CJK_RUN_AFTER.search(text[atom_end:clause_hi])
    if after:
        return after.group().strip().strip(_CJK_FUNCTION_CHARS)[:4]
    for word in _LATIN_WORD.finditer(text, atom_end, clause_hi):
        if free(word) and word.group().casefold() not in _NOT_NOUNS:
            return word.group().casefold()
    return ""


def _clause(
    text: str, atom_start: int, atom_end: int, lo: int, hi: int,
    free: Callable[[re.Match[str]], bool],
) -> tuple[int, int]:
    """Bounds of the clause around an atom; a comma inside another atom ("1,200") is no break."""
    clause_lo = lo
    for match in _CLAUSE_BREAK.finditer(text, lo, atom_start):
        if free(match):
            clause_lo = match.end()
    following = [m.start() for m in _CLAUSE_BREAK.finditer(text, atom_end, hi) if free(m)]
    return clause_lo, following[0] if following else hi


def _outside_atoms(taken: list[_Found]) -> Callable[[re.Match[str]], bool]:
    def free(word: re.Match[str]) -> bool:
        return not any(word.start() < t[1] and t[0] < word.end() for t in taken)

    return free
