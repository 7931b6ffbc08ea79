"""Facts compared as facts: a number or date together with what it is attached to.

A number means something only with its unit, its currency and the names beside it: "GBP
185 in London" and "GBP 185 in Manchester" are different facts, and "EUR 185" disputes
"GBP 185" about the same thing. Pure functions, no I/O.

* :func:`attached_facts`: each number and date of a text with the proper names of its
  *window* (the table row it sits in, else its clause; commas do not end a window, so
  "In London, the limit is GBP 185" ties London to the amount);
* :func:`disputes`: whether two values of one quantity disagree (same unit and a different
  value, or two different currencies);
* :func:`claim_conflicts`: pairs of claims of one answer that give different values for
  the same quantity, whichever sources each cites.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from affidavit.llm.atoms import Atom, extract_atoms
from affidavit.llm.text import STOP_WORDS, content_terms, stem

CURRENCIES = frozenset(("USD", "EUR", "GBP", "JPY", "CNY", "CNY/JPY", "CHF", "CAD", "AUD",
                        "INR", "HKD", "SGD"))
"""Canonical currency units (:mod:`affidavit.llm.atoms`): one dimension, money."""

DURATIONS = frozenset(("second", "minute", "hour", "day", "night", "business day", "week",
                       "working week", "month", "working month", "year"))
"""Canonical units of time: one dimension, a duration."""
_DAYS = {"day": Decimal(1), "week": Decimal(7), "night": Decimal(1)}

SAME_QUANTITY_MIN_OVERLAP = 0.6
"""Share of the smaller window's content terms the other window must hold for two values to
be read as values of the same quantity."""

_WINDOW_BREAK = re.compile(r"[;:；：()（）\n]|(?<![A-Za-z])(?:and|but|or|while|whereas)"
                           r"(?![A-Za-z])|\|\s*\|", re.IGNORECASE)
_ROW_BREAK = re.compile(r"\n|\|\s*\|")
_NAME = re.compile(r"(?<![A-Za-z0-9'\-])[A-Z][a-z]+(?:[A-Z][a-z]+)*(?![A-Za-z0-9'\-])")
_NOT_NAMES = frozenset((
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "section", "article", "clause", "annex", "policy", "table", "note",
    "maximum", "minimum", "location", "other", "each", "every", "all", "any", "no", "not",
    "yes", "if", "when", "where", "for", "from", "in", "on", "at", "by", "with", "without",
))


@dataclass(frozen=True)
class AttachedFact:
    """A number or date atom with the names and content terms of its window."""

    atom: Atom
    names: frozenset[str]
    terms: frozenset[str]


def proper_names(text: str) -> frozenset[str]:
    """Capitalized words that are not the first word of a sentence, casefolded: the names
    of places, people and organisations a fact can be attached to."""
    found: set[str] = set()
    for match in _NAME.finditer(text):
        before = text[: match.start()].rstrip(" \"'“‘*")
        if not before or before[-1] in ".!?|:\n":
            continue  # sentence-initial capitals say nothing about the word
        word = match.group().casefold()
        if word not in STOP_WORDS and word not in _NOT_NAMES:
            found.add(word)
    return frozenset(found)


def attached_facts(text: str) -> tuple[AttachedFact, ...]:
    """Every number and date of ``text`` with the names and terms of its window."""
    facts: list[AttachedFact] = []
    for atom in extract_atoms(text):
        if atom.kind not in ("number", "date"):
            continue
        lo, hi = _window(text, atom)
        window = text[lo:atom.start] + " " + text[atom.end:hi]
        facts.append(AttachedFact(atom, proper_names(text[lo:hi]),
                                  frozenset(content_terms(window))))
    return tuple(facts)


def _window(text: str, atom: Atom) -> tuple[int, int]:
    row_lo = max((m.end() for m in _ROW_BREAK.finditer(text, 0, atom.start)), default=0)
    row_end = _ROW_BREAK.search(text, atom.end)
    row_hi = row_end.start() if row_end else len(text)
    if "|" in text[row_lo:row_hi]:
        return row_lo, row_hi  # a table row: its cells name what the value is about
    lo = max((m.end() for m in _WINDOW_BREAK.finditer(text, 0, atom.start)), default=0)
    after = _WINDOW_BREAK.search(text, atom.end)
    return lo, after.start() if after else len(text)


def disputes(claimed: Atom, found: Atom) -> bool:
    """Whether ``found`` gives another value for the quantity ``claimed`` states: same kind,
    and either the same unit with a different value or two different currencies."""
    if claimed.kind != found.kind or claimed.value == found.value:
        return False
    if claimed.unit == found.unit:
        return True
    if claimed.unit in DURATIONS and found.unit in DURATIONS:
        # "14 days" and "2 weeks" agree; "5 working weeks" and "5 working days" do not.
        return _in_days(claimed) is None or _in_days(claimed) != _in_days(found)
    return claimed.unit in CURRENCIES and found.unit in CURRENCIES


def _in_days(atom: Atom) -> Decimal | None:
    per_day = _DAYS.get(atom.unit)
    if per_day is None:
        return None
    try:
        return Decimal(atom.value.split(" ")[0]) * per_day
    except InvalidOperation:
        return None


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    smaller = min(len(a), len(b))
    return len(a & b) / smaller if smaller else 0.0


def same_quantity(a: AttachedFact, b: AttachedFact) -> bool:
    """Whether two attached facts are about the same quantity: the same names and windows
    that mostly share their content terms."""
    return (a.names == b.names and bool(a.terms and b.terms)
            and _overlap(a.terms, b.terms) >= SAME_QUANTITY_MIN_OVERLAP)


def place_conflict(claimed: AttachedFact, evidence: Sequence[AttachedFact]) -> str:
    """A reason code when the claim ties its value to names the evidence ties to another
    value (or its value to other names), else ``""``."""
    if not claimed.names:
        return ""
    for fact in evidence:
        if fact.atom.value == claimed.atom.value and claimed.names <= fact.names:
            return ""  # the evidence states the value with the claimed names
    for fact in evidence:
        shared = claimed.names & fact.names
        if shared and disputes(claimed.atom, fact.atom):
            name = sorted(shared)[0]
            return (f"CONTRADICTED:place:{name}:{claimed.atom.value}"
                    f"!={fact.atom.value}")
    return ""


def noun_conflict(claimed: AttachedFact, noun: str,
                  evidence: Sequence[AttachedFact]) -> str:
    """The value the evidence ties to the claim's controlling noun, when it never ties the
    claimed value to it and does tie a disputing one (a claimed value that merely occurs
    somewhere else in the evidence does not make the claim true), else ``""``."""
    term = stem(noun.casefold())
    if not noun or term not in claimed.terms:
        return ""  # a noun outside the value's own row or clause is not what it is about
    about = [fact for fact in evidence if term in fact.terms]
    if any(same_value(claimed.atom, fact.atom) for fact in about):
        return ""
    for fact in about:
        if disputes(claimed.atom, fact.atom):
            return fact.atom.value
    return ""


def same_value(claimed: Atom, found: Atom) -> bool:
    """Same kind and value; a number without a unit matches the same amount with one."""
    if claimed.kind != found.kind:
        return False
    if claimed.value == found.value:
        return True
    return claimed.kind == "number" and not (claimed.unit and found.unit) and \
        claimed.value.split(" ")[0].rstrip("%") == found.value.split(" ")[0].rstrip("%")


@dataclass(frozen=True)
class ClaimConflict:
    """Two claims of one answer that give different values for the same quantity."""

    first: int
    second: int
    first_value: str
    second_value: str

    @property
    def reason(self) -> str:
        """Stable reason naming both claims by index. The values stay out: gate reasons are
        shown to ledger readers who may not see the evidence the claims came from."""
        return f"CONFLICTING_CLAIMS:{self.first}&{self.second}"


def claim_conflicts(claims: Sequence[tuple[int, str]]) -> tuple[ClaimConflict, ...]:
    """Pairs of claims ``(index, text)`` that state different values of one quantity."""
    facts = [(index, fact) for index, text in claims for fact in attached_facts(text)]
    found: list[ClaimConflict] = []
    seen: set[tuple[int, int]] = set()
    for i, (first, a) in enumerate(facts):
        for second, b in facts[i + 1:]:
            if first == second or (first, second) in seen:
                continue
            if disputes(a.atom, b.atom) and same_quantity(a, b):
                seen.add((first, second))
                found.append(ClaimConflict(first, second, a.atom.value, b.atom.value))
    return tuple(found)
