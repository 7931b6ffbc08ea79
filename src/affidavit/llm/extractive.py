"""Question-aware extractive answers: the evidence that answers what was asked, and no more.

The evidence is read as *units*: prose sentences, table rows and list items. A table row is
said with its column headers ("Approver: Head of Department; Approval limit: up to GBP
50,000"), never as Markdown pipes, and a list item without its bullet. A sentence that
introduces a table or a list ("The nightly hotel limit ... is:") carries the rows it
introduces.

Each unit is scored by what the question asks:

* its key terms (content words without the words that only frame a question), each
  weighted by how rare it is among the evidence units, so that "hotel" in ten sentences
  counts for less than "nightly" in one; the words of a row's headers and introduction
  count for half, since they scope the row without being said by it;
* its numbers, in digits or words, with their currency: a unit that names the question's
  number, or states the narrowest range holding it ("up to GBP 250,000" for 60,000), is
  what a number in the question asks for.

Units scoring at least :data:`KEEP_RATIO` of the best, and sharing at least one key term
with the question, are the answer, in evidence order: a sentence that shares one word with
the question while the best share four is padding, not an answer. Pure and deterministic.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from affidavit.llm.citations import LOOSE_SRC_PATTERN
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.quantities import NUMBER_WORDS, fit, quantities
from affidavit.llm.relevance import QUESTION_FRAME_WORDS
from affidavit.llm.text import _sentence_spans, content_terms, normalize_space, stem

KEEP_RATIO = 0.7
"""A unit is kept when it scores at least this share of the best unit's score."""
CONTEXT_WEIGHT = 0.5
"""How much the words of a row's headers and introduction count for the row."""
PHRASE_WEIGHT = 0.5
"""How much two key terms count again when the unit says them side by side, as asked."""
MAX_ROWS = 12
"""Rows or list items one introduction may carry into an answer."""

# Currencies and units say what kind of number is wanted; the number itself is matched
# as a quantity (affidavit.llm.quantities).
_UNIT_WORDS = ("gbp", "eur", "usd", "cny", "rmb", "pound", "pounds", "pence", "euro",
               "euros", "dollar", "dollars")
_FRAME_STEMS = frozenset(stem(w) for w in (*QUESTION_FRAME_WORDS, *NUMBER_WORDS,
                                           *_UNIT_WORDS))
_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_SEPARATOR_CELL = re.compile(r"^:?-{3,}:?$")
_LIST_LINE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(?P<body>\S.*)$")
_HEADING_LINE = re.compile(r"^\s*#{1,6}\s")


@dataclass(frozen=True)
class Unit:
    """One answerable piece of one evidence item."""

    rank: int
    position: int
    text: str
    src: str
    context: str = ""
    group: int = -1  # the position of the introduction or header a row belongs to
    introduces: bool = False


# ---------------------------------------------------------------------- reading units


def evidence_units(evidence: Sequence[EvidenceItem]) -> list[Unit]:
    """Every unit of every evidence item, in evidence order."""
    units: list[Unit] = []
    for rank, item in enumerate(evidence):
        units.extend(_item_units(rank, item))
    return units


def _item_units(rank: int, item: EvidenceItem) -> list[Unit]:
    units: list[Unit] = []
    lines = LOOSE_SRC_PATTERN.sub("", item.text).split("\n")
    i = 0
    prose: list[str] = []

    def flush() -> None:
        units.extend(_sentences(rank, item.src, " ".join(prose), len(units)))
        prose.clear()

    while i < len(lines):
        line = lines[i]
        if _TABLE_LINE.match(line):
            flush()
            end = i
            while end < len(lines) and _TABLE_LINE.match(lines[end]):
                end += 1
            units.extend(_table(rank, item.src, lines[i:end], units))
            i = end
            continue
        listed = _LIST_LINE.match(line)
        if listed:
            flush()
            units.append(_member(rank, item.src, listed.group("body"), units))
        elif not line.strip() or _HEADING_LINE.match(line):
            flush()
        else:
            prose.append(line.strip())
        i += 1
    flush()
    return units


def _sentences(rank: int, src: str, text: str, start: int) -> list[Unit]:
    out = []
    for offset, (a, b) in enumerate(_sentence_spans(text)):
        sentence = normalize_space(text[a:b])
        if content_terms(sentence):
            out.append(Unit(rank, start + offset, sentence, src,
                            introduces=sentence.endswith((":", "："))))
    return out


def _intro(units: list[Unit]) -> Unit | None:
    """The unit just before, when it introduces what follows."""
    if units and units[-1].introduces:
        return units[-1]
    if units and units[-1].group >= 0:  # another member of the same list or table
        owner = [u for u in units if u.position == units[-1].group]
        return owner[0] if owner else None
    return None


def _cells(line: str) -> list[str]:
    return [normalize_space(c) for c in line.strip().strip("|").split("|")]


def _table(rank: int, src: str, lines: list[str], before: list[Unit]) -> list[Unit]:
    rows = [_cells(line) for line in lines]
    rows = [r for r in rows if not all(_SEPARATOR_CELL.match(c) or not c for c in r)]
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    intro = _intro(before)
    position = len(before)
    group = intro.position if intro is not None else position
    context = " ".join(filter(None, (intro.text if intro else "", *header)))
    out = []
    for offset, cells in enumerate(body):
        # Commas, not semicolons: a claim ends at a semicolon, and a row is one statement.
        said = ", ".join(f"{h}: {c}" if h else c
                         for h, c in zip(header, cells, strict=False) if c)
        if said:
            out.append(Unit(rank, position + offset, said.rstrip(".") + ".", src,
                            context=context, group=group))
    return out


def _member(rank: int, src: str, body: str, before: list[Unit]) -> Unit:
    intro = _intro(before)
    text = normalize_space(body)
    if not text.endswith((".", "!", "?", ":", ";")):
        text += "."
    return Unit(rank, len(before), text, src, context=intro.text if intro else "",
                group=intro.position if intro else -1)


# ---------------------------------------------------------------------- scoring


def key_terms(question: str) -> tuple[str, ...]:
    """The question's content terms without the words that frame it or spell a number."""
    return tuple(dict.fromkeys(t for t in content_terms(question) if t not in _FRAME_STEMS))


def _weights(keys: Sequence[str], units: Sequence[Unit]) -> dict[str, float]:
    """Each key term's weight: rarer among the units, heavier (smoothed idf)."""
    n = len(units) or 1
    bags = [set(content_terms(u.text)) for u in units]
    return {k: math.log(1 + n / (1 + sum(k in bag for bag in bags))) for k in keys}


@dataclass(frozen=True)
class Scored:
    unit: Unit
    score: float
    own_terms: int
    number_width: float


def score_units(question: str, units: Sequence[Unit]) -> list[Scored]:
    keys = key_terms(question)
    weights = _weights(keys, units)
    asked = quantities(question)
    bonus = max(weights.values(), default=1.0)
    phrases = _pairs([t for t in content_terms(question) if t in weights])
    scored = []
    for unit in units:
        said = content_terms(unit.text)
        own = set(said)
        scope = set(content_terms(unit.context)) - own
        terms = sum(weights[k] for k in keys if k in own)
        terms += CONTEXT_WEIGHT * sum(weights[k] for k in keys if k in scope)
        # "first class" said as a phrase asks for the unit that says it as one
        terms += PHRASE_WEIGHT * sum(weights[a] + weights[b]
                                     for a, b in phrases & _pairs(said))
        matched, width = fit(asked, unit.text)
        # The question's number is part of what it asks: meeting it counts as a term.
        scored.append(Scored(unit, terms + (bonus * 0.5 if matched else 0.0),
                             sum(k in own for k in keys) + sum(k in scope for k in keys)
                             + int(matched), width if matched else math.inf))
    return _narrowest_fit_bonus(scored, bonus)


def _pairs(terms: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(terms))


def _narrowest_fit_bonus(scored: list[Scored], bonus: float) -> list[Scored]:
    """Within each evidence item, the unit with the narrowest range holding the question's
    number (or naming it) is what the number asks for."""
    best: dict[int, float] = {}
    for s in scored:
        if s.number_width < math.inf:
            best[s.unit.rank] = min(best.get(s.unit.rank, math.inf), s.number_width)
    return [Scored(s.unit, s.score + (bonus if s.number_width == best.get(s.unit.rank)
                                      else 0.0), s.own_terms, s.number_width)
            for s in scored]


# ---------------------------------------------------------------------- choosing


def choose(question: str, evidence: Sequence[EvidenceItem], limit: int) -> list[Unit]:
    """The units that answer ``question``, at most ``limit`` statements (a table's or a
    list's rows under one introduction count as one), in evidence order.

    A unit is kept when it scores :data:`KEEP_RATIO` of the best *and* matches nearly as
    many of the question's key terms as the best does (all of them when the best matches
    two or fewer, all but one above that): one rare word in common is not an answer."""
    units = evidence_units(evidence)
    keys = frozenset(key_terms(question))
    scored = [s for s in score_units(question, units) if s.own_terms > 0 and s.score > 0]
    if not scored:
        return []
    top = max(s.score for s in scored)
    most = max(s.own_terms for s in scored)
    needed = most if most <= 2 else most - 1
    kept = sorted((s for s in scored if s.score >= KEEP_RATIO * top and s.own_terms >= needed),
                  key=lambda s: (-s.score, s.unit.rank, s.unit.position))
    chosen: list[Unit] = []
    groups: set[tuple[int, int]] = set()
    for s in kept:
        if len(groups) + sum(u.group < 0 and not u.introduces for u in chosen) >= limit:
            break
        group = _group_of(s.unit, units)
        if group is None:
            if s.unit not in chosen:
                chosen.append(s.unit)
        elif group not in groups:
            groups.add(group)
            chosen.extend(_group_answer(group, units, scored, keys))
    return sorted(set(chosen), key=lambda u: (u.rank, u.position))


def _group_of(unit: Unit, units: Sequence[Unit]) -> tuple[int, int] | None:
    """The (item, introduction) of the table or list ``unit`` belongs to or introduces."""
    if unit.group >= 0:
        return unit.rank, unit.group
    if unit.introduces and any(u.rank == unit.rank and u.group == unit.position
                               for u in units):
        return unit.rank, unit.position
    return None


def _group_answer(group: tuple[int, int], units: Sequence[Unit], scored: Sequence[Scored],
                  keys: frozenset[str]) -> list[Unit]:
    """A table's or list's introduction with the rows that answer: the rows holding the
    question's number most narrowly, else those naming a key term their headers do not,
    else all of them (up to :data:`MAX_ROWS`)."""
    rank, position = group
    owner = [u for u in units if u.rank == rank and u.position == position and u.introduces]
    members = [s for s in scored if s.unit.rank == rank and s.unit.group == position]
    all_members = [u for u in units if u.rank == rank and u.group == position]
    fitting = [s for s in members if s.number_width < math.inf]
    if fitting:
        narrowest = min(s.number_width for s in fitting)
        picked = [s.unit for s in fitting if s.number_width == narrowest]
    else:
        picked = [s.unit for s in members if _own_words(s.unit) & keys] or all_members
    return [*owner, *picked[:MAX_ROWS]]


def _own_words(unit: Unit) -> set[str]:
    """The terms a row or item says that its headers and introduction do not."""
    return set(content_terms(unit.text)) - set(content_terms(unit.context))


def render(units: Sequence[Unit]) -> str:
    """The answer: each unit cited; an introduction and its first row or item are one
    statement, since the introduction means nothing alone."""
    parts: list[str] = []
    pending = ""
    for unit in units:
        if unit.introduces and any(u.group == unit.position and u.rank == unit.rank
                                   for u in units):
            pending = unit.text + " "
            continue
        parts.append(f"{pending}{unit.text} [src:{unit.src}]")
        pending = ""
    return " ".join(parts)
