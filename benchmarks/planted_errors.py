"""Planted errors: do verification and the gate catch one wrong fact in a supported answer?

Supported answers are built from the example corpus: each candidate claim is a sentence of
a document, citing the paragraph it comes from. Each case then changes one thing, chosen
and applied by a seeded generator (never by hand):

* ``number``: a number's amount (digits) becomes another amount;
* ``number_words``: a number is written in words with another value ("forty pounds");
* ``unit_currency``: a currency or unit becomes another one (GBP -> EUR, days -> weeks);
* ``date``: a date's year, month or day moves;
* ``negation``: "not" is inserted after the first modal or copula, or removed;
* ``entity_swap``: a proper name becomes another name found in the corpus;
* ``cross_source``: a second claim repeats the first with another value and cites a second
  source that says so (each claim is true of its own source);
* ``control``: the claim unchanged; ``control_words``: its number written in words with
  the same value. Any state but AUTHORIZED on a control is a false alarm.

A planted error is caught when the gate does not say AUTHORIZED for the answer.

    python benchmarks/planted_errors.py [--seed 12] [--per-kind 120]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from affidavit.answer import decide, verify_claims
from affidavit.answer.verify.facts import proper_names
from affidavit.llm.atoms import Atom, extract_atoms
from affidavit.llm.claims import extract_claims
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.text import _sentence_spans, content_terms, normalize_space

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
KINDS = ("number", "number_words", "unit_currency", "date", "negation", "entity_swap",
         "cross_source")
CONTROLS = ("control", "control_words")
_UNITS = {"GBP": ("EUR", "USD"), "EUR": ("GBP", "USD"), "USD": ("GBP", "EUR")}
_UNIT_WORDS = {"day": "weeks", "days": "weeks", "week": "months", "weeks": "months",
               "month": "years", "months": "years", "year": "months", "years": "months",
               "hour": "days", "hours": "days", "minutes": "hours", "minute": "hours",
               "night": "weeks", "nights": "weeks", "%": " days", "percent": "days"}
_CURRENCY_WORDS = {"GBP": "pounds", "EUR": "euros", "USD": "dollars"}
_ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
)
_TENS = ("_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_MODAL = re.compile(r"\b(must|may|shall|will|can|should|is|are)\b(?!\s+not\b)")
_NOT = re.compile(r"\s+not\b")


@dataclass(frozen=True)
class Sentence:
    """A candidate claim and the paragraph (evidence) it comes from."""

    text: str
    paragraph: str
    atoms: tuple[Atom, ...]


def words_for(n: int) -> str:
    """An integer below a million in English words."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("-" + _ONES[n % 10] if n % 10 else "")
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + (" and " + words_for(rest) if rest else "")
    rest = n % 1000
    return words_for(n // 1000) + " thousand" + (" " + words_for(rest) if rest else "")


def corpus_sentences(root: Path) -> list[Sentence]:
    """Sentences that state something checkable enough to be an answer's claim."""
    found: list[Sentence] = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".md", ".txt") or not path.is_file():
            continue
        for paragraph in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            if paragraph.lstrip().startswith(("#", "|", "---")):
                continue
            paragraph = normalize_space(paragraph)
            for start, end in _sentence_spans(paragraph):
                text = paragraph[start:end].strip()
                if 40 <= len(text) <= 320 and len(content_terms(text)) >= 4 and \
                        len(extract_claims(f"{text} [src:00000000]")) == 1:
                    found.append(Sentence(text, paragraph, extract_atoms(text)))
    return found


def other_amount(rng: random.Random, amount: int) -> int:
    """A different, plausible amount."""
    step = rng.choice((1, 2, 5, 10, max(1, amount // 4)))
    return amount + step if amount - step < 1 or rng.random() < 0.5 else amount - step


def _numbers(s: Sentence) -> list[Atom]:
    """Number atoms written with digits that are quantities, not parts of identifiers or
    times ("HM-FIN-01", "B-2", "21:00")."""
    return [a for a in s.atoms if a.kind == "number" and re.search(r"\d", a.text)
            and s.text[max(0, a.start - 1):a.start] not in ("-", ":")
            and s.text[a.end:a.end + 1] not in ("-", ":")]


def _replace(text: str, atom: Atom, new: str) -> str:
    return text[:atom.start] + new + text[atom.end:]


def plant_number(rng: random.Random, s: Sentence) -> str | None:
    atoms = _numbers(s)
    if not atoms:
        return None
    atom = rng.choice(atoms)
    digits = re.search(r"\d[\d,]*(?:\.\d+)?", atom.text)
    assert digits is not None
    amount = int(float(digits.group().replace(",", "")))
    new = atom.text[:digits.start()] + str(other_amount(rng, amount)) + atom.text[digits.end():]
    return _replace(s.text, atom, new)


def _in_words(rng: random.Random, s: Sentence, change: bool) -> str | None:
    atoms = [a for a in _numbers(s)
             if re.fullmatch(r"(?:(?:GBP|EUR|USD)\s?)?\d{1,3}(?:\s[a-z]+)?", a.text)]
    if not atoms:
        return None
    atom = rng.choice(atoms)
    amount = int(re.search(r"\d+", atom.text).group())  # type: ignore[union-attr]
    value = other_amount(rng, amount) if change else amount
    tail = re.sub(r"^(?:(?:GBP|EUR|USD)\s?)?\d+", "", atom.text)
    currency = _CURRENCY_WORDS.get(atom.unit, "")
    # Currency after the amount and its scale: "GBP 90 million" is "ninety million pounds".
    return _replace(s.text, atom, words_for(value) + tail + (f" {currency}" if currency else ""))


def plant_number_words(rng: random.Random, s: Sentence) -> str | None:
    return _in_words(rng, s, change=True)


def control_words(rng: random.Random, s: Sentence) -> str | None:
    return _in_words(rng, s, change=False)


def plant_unit(rng: random.Random, s: Sentence) -> str | None:
    atoms = [a for a in _numbers(s) if a.unit in _UNITS or re.search(
        r"(?:days?|weeks?|months?|years?|hours?|minutes?|nights?|%)$", a.text)]
    if not atoms:
        return None
    atom = rng.choice(atoms)
    if atom.unit in _UNITS:
        code = re.search(r"GBP|EUR|USD|£|€|\$", atom.text)
        if code is None:
            return None
        return _replace(s.text, atom, atom.text.replace(code.group(),
                                                         rng.choice(_UNITS[atom.unit]), 1))
    word = re.search(r"(days?|weeks?|months?|years?|hours?|minutes?|nights?|%)$", atom.text)
    assert word is not None
    return _replace(s.text, atom, atom.text[:word.start()].rstrip() + " " +
                    _UNIT_WORDS[word.group()].strip())


def plant_date(rng: random.Random, s: Sentence) -> str | None:
    atoms = [a for a in s.atoms if a.kind == "date"]
    if not atoms:
        return None
    atom = rng.choice(atoms)
    years = list(re.finditer(r"(?:19|20)\d{2}", atom.text))
    days = list(re.finditer(r"(?<!\d)\d{1,2}(?!\d)", atom.text))
    if days and rng.random() < 0.5:
        day = days[0]
        new_day = (int(day.group()) % 27) + 1 + rng.choice((0, 1))
        new = atom.text[:day.start()] + str(new_day) + atom.text[day.end():]
        if new != atom.text:
            return _replace(s.text, atom, new)
    if not years:
        return None
    year = years[-1]
    new_year = str(int(year.group()) + rng.choice((-2, -1, 1, 2)))
    return _replace(s.text, atom, atom.text[:year.start()] + new_year + atom.text[year.end():])


def plant_negation(rng: random.Random, s: Sentence) -> str | None:
    negated = _NOT.search(s.text)
    if negated and rng.random() < 0.5:
        return s.text[:negated.start()] + s.text[negated.end():]
    modal = _MODAL.search(s.text)
    if modal is None:
        return None
    return s.text[:modal.end()] + " not" + s.text[modal.end():]


def make_entity_swap(names: Sequence[str]) -> Callable[[random.Random, Sentence], str | None]:
    def plant(rng: random.Random, s: Sentence) -> str | None:
        own = sorted(proper_names(s.text))
        if not own:
            return None
        name = rng.choice(own)
        others = [n for n in names if n not in s.paragraph.casefold()]
        match = re.search(rf"\b{re.escape(name)}\b", s.text, re.IGNORECASE)
        if not others or match is None:
            return None
        return s.text[:match.start()] + rng.choice(others).title() + s.text[match.end():]
    return plant


def gate_state(claims: Sequence[tuple[str, str]], sources: dict[str, str]) -> str:
    """The Boundary Gate's state for an answer of ``(claim, src)`` pairs."""
    answer = " ".join(f"{claim} [src:{src}]" for claim, src in claims)
    evidence = {src: EvidenceItem(src, src * 8, src, "", "", text, "INTERNAL")
                for src, text in sources.items()}
    verdicts = verify_claims(extract_claims(answer), evidence)
    return decide(verdicts, role="authoritative", evidence_count=len(evidence),
                  stripped_citations=()).output_state


def run_case(kind: str, rng: random.Random, s: Sentence,
             plant: Callable[[random.Random, Sentence], str | None]) -> str | None:
    """The gate state for one planted case, or ``None`` when the sentence does not fit."""
    if kind == "control":
        return gate_state([(s.text, "0000000a")], {"0000000a": s.paragraph})
    changed = plant(rng, s)
    if changed is None or changed == s.text:
        return None
    if kind == "cross_source":
        conflicting = s.paragraph.replace(s.text, changed)
        return gate_state([(s.text, "0000000a"), (changed, "0000000b")],
                          {"0000000a": s.paragraph, "0000000b": conflicting})
    return gate_state([(changed, "0000000a")], {"0000000a": s.paragraph})


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--per-kind", type=int, default=120)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv[1:])
    rng = random.Random(args.seed)
    sentences = corpus_sentences(args.corpus)
    names = sorted({n for s in sentences for n in proper_names(s.text)})
    planters: dict[str, Callable[[random.Random, Sentence], str | None]] = {
        "number": plant_number, "number_words": plant_number_words, "unit_currency": plant_unit,
        "date": plant_date, "negation": plant_negation, "entity_swap": make_entity_swap(names),
        "cross_source": plant_number, "control": plant_number, "control_words": control_words,
    }
    print(f"{len(sentences)} candidate claims from {args.corpus}; seed {args.seed}")
    print(f"{'kind':<15}{'cases':>7}{'caught':>8}{'rate':>8}   states")
    for kind in (*KINDS, *CONTROLS):
        states: Counter[str] = Counter()
        for s in rng.sample(sentences, len(sentences)):
            if sum(states.values()) >= args.per_kind:
                break
            state = run_case(kind, rng, s, planters[kind])
            if state is not None:
                states[state] += 1
        total = sum(states.values())
        flagged = total - states["AUTHORIZED"]
        label = "false alarms" if kind in CONTROLS else "caught"
        rate = flagged / total if total else 0.0
        print(f"{kind:<15}{total:>7}{flagged:>8}{rate:>8.1%}   {dict(sorted(states.items()))}"
              + (f"  ({label})" if kind in CONTROLS else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
