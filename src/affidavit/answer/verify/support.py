"""L2 support checks of one claim against evidence text, as pure functions.

* atoms: every atom of the claim must be stated, normalized, in the evidence; a number or
  date whose controlling noun the evidence states with a *different* value (and not with
  the claimed one) is a contradiction;
* facts (:mod:`affidavit.answer.verify.facts`): a value tied to a name the evidence ties to another
  value, or a value with a unit that the evidence gives differently for the same noun (even
  when the claimed value occurs elsewhere), is a contradiction; a proper name the evidence
  replaces with another in a sentence that states the rest of the claim is missing;
* coverage: the share of the claim's content terms found in the evidence (number words are
  left to the atoms);
* polarity: a claim whose direction (increase vs decrease, with negation flipping it) is
  the opposite of every evidence sentence that best matches it, or a negated claim whose
  best-matching sentences negate nothing, is not supported however many words it shares.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from affidavit.answer.verify.facts import (
    AttachedFact,
    attached_facts,
    disputes,
    noun_conflict,
    place_conflict,
    proper_names,
)
from affidavit.llm.atoms import NUMBER_WORDS, Atom, extract_atoms
from affidavit.llm.claims import Claim
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.text import CJK_CLASS, _sentence_spans, content_terms, stem

POLARITY_SENTENCES = 3
"""How many best-matching evidence sentences a claim's polarity is compared with."""

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_NEGATIONS = frozenset((
    "not", "no", "never", "neither", "nor", "without", "cannot", "lack", "lacks", "lacking",
    "absence", "fail", "fails", "failed", "unaffected", "unchanged", "unrelated", "none",
))
_CJK_NEGATIONS = re.compile("不|没有|未|无|非|禁止")
_UP = frozenset(stem(w) for w in (
    "increase", "increased", "increasing", "higher", "high", "elevated", "elevate", "enhance",
    "enhanced", "promote", "promoted", "amplify", "amplifies", "more", "greater", "raise",
    "raised", "rise", "rises", "augment", "accelerate", "induce", "induced", "activate",
    "activated", "improve", "improved", "boost", "upregulate", "upregulated", "gain", "gains",
    "stimulate", "stimulated", "positively", "exceed", "exceeds", "above", "extend",
    "extended", "maximum",
))
_DOWN = frozenset(stem(w) for w in (
    "decrease", "decreased", "decreasing", "reduce", "reduced", "reduction", "lower", "low",
    "less", "fewer", "diminish", "diminished", "suppress", "suppressed", "impair", "impaired",
    "inhibit", "inhibited", "attenuate", "attenuated", "decline", "declines", "drop", "drops",
    "fall", "falls", "counteract", "prevent", "prevented", "block", "blocked", "abolish",
    "abolished", "downregulate", "downregulated", "loss", "delay", "delayed", "slow", "slows",
    "negatively", "below", "shorten", "shortened", "minimum",
))


NUMBER_WORD_TERMS = frozenset(stem(w) for w in (
    *NUMBER_WORDS, "and", "percent", "pound", "pounds", "sterling", "dollar", "dollars",
    "euro", "euros",
))


@dataclass(frozen=True)
class EvidenceSentence:
    """One sentence of an evidence item, read once."""

    text: str
    atoms: tuple[Atom, ...]
    terms: frozenset[str]
    facts: tuple[AttachedFact, ...] = ()


@dataclass(frozen=True)
class EvidenceSource:
    """One evidence item read once: its sentences with their atoms and terms."""

    sentences: tuple[EvidenceSentence, ...]
    terms: frozenset[str]
    words: frozenset[str] = frozenset()


@dataclass(frozen=True)
class AtomCheck:
    """The claim's atoms not found in the evidence, and the contradictions among them."""

    missing: tuple[Atom, ...]
    contradictions: tuple[str, ...]


def read_source(item: EvidenceItem) -> EvidenceSource:
    """Split an evidence item into sentences with their atoms and content terms."""
    sentences = tuple(
        EvidenceSentence(text, extract_atoms(text), frozenset(content_terms(text)),
                         attached_facts(text))
        for text in (item.text[s:e] for s, e in _sentence_spans(item.text))
    )
    words = frozenset(w.casefold() for w in _WORD.findall(item.text))
    return EvidenceSource(sentences, frozenset().union(*(s.terms for s in sentences)), words)


# --------------------------------------------------------------------------- atoms


def check_atoms(claim: Claim, sources: Sequence[EvidenceSource]) -> AtomCheck:
    """Which of the claim's atoms the evidence lacks, and which it disputes."""
    sentences = [sentence for source in sources for sentence in source.sentences]
    evidence_atoms = [atom for sentence in sentences for atom in sentence.atoms]
    evidence_facts = [fact for sentence in sentences for fact in sentence.facts]
    missing: list[Atom] = []
    contradictions: list[str] = []
    claim_terms = frozenset(content_terms(claim.text))
    for fact in attached_facts(claim.text):
        conflict = place_conflict(fact, evidence_facts)
        # Bare counts are too common to tie to a noun ("1,000 genomes", "MEK 1/2"); a value
        # with a unit or a date is specific enough.
        if not conflict and fact.atom.noun and (fact.atom.unit or fact.atom.kind == "date"):
            other = noun_conflict(fact, fact.atom.noun, evidence_facts)
            if other and _stated_apart(fact.atom, other, claim_terms, sentences):
                other = ""
            conflict = (f"CONTRADICTED:{fact.atom.kind}:{fact.atom.value}!={other}"
                        f":noun={fact.atom.noun}") if other else ""
        if conflict and conflict not in contradictions:
            contradictions.append(conflict)
    for atom in claim.atoms:
        if any(same_fact(atom, other) for other in evidence_atoms):
            continue
        missing.append(atom)
        conflict = _conflicting_value(atom, sentences)
        if conflict and not any(c.startswith(f"CONTRADICTED:{atom.kind}:{atom.value}!=")
                                for c in contradictions):
            contradictions.append(
                f"CONTRADICTED:{atom.kind}:{atom.value}!={conflict}:noun={atom.noun}"
            )
    return AtomCheck(tuple(missing), tuple(contradictions))


def _stated_apart(claimed: Atom, other: str, claim_terms: frozenset[str],
                  sentences: Sequence[EvidenceSentence]) -> bool:
    """Whether an evidence sentence about the claim (sharing half its content terms or
    more) states the claimed value without the
    conflicting one: then the conflicting value near the same noun elsewhere ("breakfast up
    to GBP 15 per night" beside a table row's "GBP 185" for London per night) is another
    fact, not a dispute. A sentence holding both (a list of retention periods) still is."""
    needed = (len(claim_terms) + 1) // 2  # about the claim: half its terms or more
    return any(any(same_fact(claimed, atom) for atom in sentence.atoms)
               and not any(atom.value == other for atom in sentence.atoms)
               and len(sentence.terms & claim_terms) >= max(1, needed)
               for sentence in sentences)


def same_fact(claimed: Atom, found: Atom) -> bool:
    """Whether ``found`` states the fact ``claimed`` asserts (normalized comparison)."""
    if claimed.kind != found.kind:
        return False
    if claimed.kind == "number":
        return claimed.value == found.value or (
            not (claimed.unit and found.unit) and _amount(claimed) == _amount(found)
        )
    if claimed.kind in ("date", "regulatory_citation"):
        # A less specific claim is supported by a more specific source: "March 2026" by
        # "2026-03-31", "§ 164.312" by "§ 164.312(a)(1)".
        return claimed.value == found.value or (
            found.value.startswith(claimed.value) and found.value[len(claimed.value)] in "-.("
        )
    return claimed.value == found.value


def _amount(atom: Atom) -> str:
    return atom.value.split(" ")[0].rstrip("%")


def _conflicting_value(atom: Atom, sentences: Sequence[EvidenceSentence]) -> str:
    """A different value of the same kind and unit stated about the same noun, if any."""
    if atom.kind not in ("number", "date") or not atom.noun:
        return ""
    for sentence in sentences:
        if not _mentions(sentence, atom.noun):
            continue
        for other in sentence.atoms:
            if disputes(atom, other):
                return other.value
    return ""


# --------------------------------------------------------------------------- names


def missing_names(claim_text: str, sources: Sequence[EvidenceSource]) -> tuple[str, ...]:
    """Proper names of the claim (places, people, organisations) that its evidence never
    uses *where it says everything else the claim says*: a sentence stating all of the
    claim but another name is evidence about someone or somewhere else. A name merely
    absent (a paraphrase, another spelling) is left to coverage."""
    words = frozenset().union(*(source.words for source in sources))
    absent = sorted(name for name in proper_names(claim_text) if name not in words)
    if not absent:
        return ()
    rest = frozenset(content_terms(claim_text)) - {stem(name) for name in absent}
    for source in sources:
        for sentence in source.sentences:
            if rest <= sentence.terms and proper_names(sentence.text) - proper_names(claim_text):
                return tuple(absent)
    return ()


def _mentions(sentence: EvidenceSentence, noun: str) -> bool:
    if re.fullmatch(f"[{CJK_CLASS}]+", noun):
        return noun in sentence.text
    return stem(noun.casefold()) in sentence.terms


# --------------------------------------------------------------------------- coverage


def coverage(claim_text: str, sources: Sequence[EvidenceSource]) -> tuple[float, list[str], int]:
    """Share of the claim's content terms in the evidence, the missing terms, term count."""
    # Numbers in words and currency names are the atoms' business: "two hundred pounds"
    # is checked as 200 GBP, not as the words "hundred" and "pound".
    evidence_terms = frozenset().union(*(source.terms for source in sources))
    terms = sorted(t for t in set(content_terms(claim_text))
                   if t in evidence_terms or t not in NUMBER_WORD_TERMS)
    if not terms:
        return 0.0, [], 0
    missing = [t for t in terms if t not in evidence_terms]
    return (len(terms) - len(missing)) / len(terms), missing, len(terms)


# --------------------------------------------------------------------------- polarity


def polarity_conflict(claim_text: str, sources: Sequence[EvidenceSource]) -> str:
    """A reason code when the claim's polarity disagrees with its best evidence, else ``""``."""
    wanted = frozenset(content_terms(claim_text))
    sentences = [s for source in sources for s in source.sentences]
    if not wanted or not sentences:
        return ""
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(wanted & sentences[i].terms), i))
    best = [sentences[i].text for i in ranked[:POLARITY_SENTENCES]]
    direction, negated = _polarity(claim_text)
    others = [_polarity(text) for text in best]
    if direction and all(d and d != direction for d, _ in others):
        return "POLARITY_MISMATCH:direction"
    if negated and not direction and not any(n for _, n in others):
        return "POLARITY_MISMATCH:negation"
    stating = [s.text for s in sentences if wanted <= s.terms]
    negated_claim = _plain_negations(claim_text) > 0
    if stating and all((_plain_negations(text) > 0) != negated_claim for text in stating):
        # Every sentence that states all the claim says does so with the opposite sense.
        return "POLARITY_MISMATCH:negation_flipped"
    return ""


_PLAIN_NEGATION = re.compile(
    r"(?<![A-Za-z])(?:not|never|cannot|neither|nor|none|no(?!\s+(?:later|earlier|more|less"
    r"|fewer|longer|sooner)\b))(?![A-Za-z])|n't(?![A-Za-z])", re.IGNORECASE)


def _plain_negations(text: str) -> int:
    """Negations that reverse a statement ("not", "never", "no"), without bounds such as
    "no later than" that only phrase a limit."""
    return len(_PLAIN_NEGATION.findall(text)) + len(_CJK_NEGATIONS.findall(text))


def _polarity(text: str) -> tuple[int, bool]:
    """Direction of a sentence (+1 up, -1 down, 0 none or mixed), negation applied, and
    whether it is negated at all."""
    words = [w.casefold() for w in _WORD.findall(text)]
    negations = sum(1 for w in words if w in _NEGATIONS or w.endswith("n't"))
    negations += len(_CJK_NEGATIONS.findall(text))
    stems = {stem(w) for w in words}
    up, down = bool(stems & _UP), bool(stems & _DOWN)
    direction = 1 if up and not down else -1 if down and not up else 0
    if negations % 2:
        direction = -direction
    return direction, negations > 0
