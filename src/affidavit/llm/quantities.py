"""Quantities in questions and evidence: numbers in digits or words, their currency or unit,
and the ranges evidence states ("up to GBP 50,000", "from GBP 25,000 to GBP 150,000",
"above GBP 5,000,000", "under 6 hours").

A question's number is usually a constraint, not a word to find: "Who approves GBP
60,000?" is answered by the row whose range holds 60,000 ("up to GBP 250,000"), and "under
six hours" by the sentence that says "under 6 hours". Pure functions over text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
          "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
          "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
          "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
          "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000,
           "billion": 1_000_000_000}
NUMBER_WORDS = frozenset((*_UNITS, *_SCALES))
"""Words that spell (part of) a number."""

_CURRENCY = r"(?:gbp|eur|usd|cny|rmb|chf|jpy|£|€|\$)"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_QUANTITY = re.compile(rf"(?P<cur>{_CURRENCY})?\s*(?P<num>{_NUM})(?:\s*(?P<unit>[a-z]+))?")
_WORD_RUN = re.compile(r"\b(?:(?:" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
                       + r")(?:[\s-]+|\b))+", re.IGNORECASE)
_SPELLED = {"£": "gbp", "€": "eur", "$": "usd", "rmb": "cny"}


@dataclass(frozen=True)
class Quantity:
    value: float
    currency: str = ""


@dataclass(frozen=True)
class Range:
    """``low < value <= high`` (or ``<`` / ``>=`` as the wording says), in one currency."""

    low: float
    high: float
    currency: str = ""
    low_inclusive: bool = False
    high_inclusive: bool = True

    def holds(self, quantity: Quantity) -> bool:
        # An amount of money and a count of hours are never compared.
        if self.currency != quantity.currency:
            return False
        v = quantity.value
        above = v >= self.low if self.low_inclusive else v > self.low
        below = v <= self.high if self.high_inclusive else v < self.high
        return above and below

    @property
    def width(self) -> float:
        return self.high - max(self.low, 0.0)


def _value(text: str) -> float:
    return float(text.replace(",", ""))


def _currency(text: str | None) -> str:
    folded = (text or "").casefold()
    return _SPELLED.get(folded, folded)


def spelled_out(text: str) -> str:
    """``text`` with number words written as digits ("six hours" → "6 hours",
    "sixty thousand" → "60000")."""
    def digits(match: re.Match[str]) -> str:
        words = [w for w in re.split(r"[\s-]+", match.group().casefold()) if w]
        total, current = 0, 0
        for word in words:
            if word in _UNITS:
                current += _UNITS[word]
            elif word == "hundred":
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * _SCALES[word]
                current = 0
        trailing = " " if match.group()[-1:].isspace() else ""
        return f"{total + current}{trailing}"

    return _WORD_RUN.sub(digits, text)


def quantities(text: str) -> list[Quantity]:
    """Every number in ``text`` (digits or words), with the currency before it."""
    found = []
    for match in _QUANTITY.finditer(spelled_out(text).casefold()):
        found.append(Quantity(_value(match.group("num")), _currency(match.group("cur"))))
    return found


_BOUND = rf"(?P<cur>{_CURRENCY})?\s*(?P<num>{_NUM})"
_RANGES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern.replace("BOUND", _BOUND)), kind) for pattern, kind in (
        (r"\bfrom\s+BOUND\s+(?:to|up to|and)\s+" + _BOUND.replace("cur", "cur2")
         .replace("num", "num2"), "between"),
        (r"\bbetween\s+BOUND\s+and\s+" + _BOUND.replace("cur", "cur2").replace("num", "num2"),
         "between"),
        (r"\b(?:up to|not more than|no more than|at most|maximum of|limit of)\s+BOUND",
         "at_most"),
        (r"\b(?:above|over|more than|exceeding|exceeds?|greater than)\s+BOUND", "above"),
        (r"\b(?:under|below|less than|fewer than)\s+BOUND", "below"),
        (r"BOUND\s*(?:[a-z]+\s+)?or more\b", "at_least"),
    ))


def ranges(text: str) -> list[Range]:
    """The ranges ``text`` states, in the order of the wording patterns."""
    folded = spelled_out(text).casefold()
    found: list[Range] = []
    for pattern, kind in _RANGES:
        for m in pattern.finditer(folded):
            value, cur = _value(m.group("num")), _currency(m.group("cur"))
            if kind == "between":
                high = _value(m.group("num2"))
                found.append(Range(value, high, cur or _currency(m.group("cur2")), True, True))
            elif kind == "at_most":
                found.append(Range(-math.inf, value, cur))
            elif kind == "above":
                found.append(Range(value, math.inf, cur, False, False))
            elif kind == "below":
                found.append(Range(-math.inf, value, cur, False, False))
            else:
                found.append(Range(value, math.inf, cur, True, False))
    return found


def fit(question: list[Quantity], text: str) -> tuple[bool, float]:
    """Whether ``text`` names one of the question's quantities or states a range holding it,
    and the narrowest such range's width (0 for an exact match, infinity for none)."""
    if not question:
        return False, math.inf
    stated = quantities(text)
    for q in question:
        if any(s.value == q.value and s.currency == q.currency for s in stated):
            return True, 0.0
    widths = [r.width for r in ranges(text) for q in question if r.holds(q)]
    return (True, min(widths)) if widths else (False, math.inf)
