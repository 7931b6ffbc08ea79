"""Whether the evidence addresses the question at all, decided before any claim counts.

Every claim of an answer can be true of its evidence while the evidence is about something
else: "What is the policy on space travel reimbursement?" retrieves the travel policy, and
sentences about travel reimbursement verify, yet nothing the asker may read says anything
about space travel. So the question's *key terms* (its content words, stemmed by the index
tokenizer, without stop words and without the words that only frame a question: "policy",
"rule", "much") must each occur in an evidence item that holds more than half of them
(a stray word in an item about something else does not count). For CJK questions, which have no
word boundaries, at least half of the question's character bigrams must occur.

A boundary compliance score of ``0.0`` for subjects the question itself (or an explicit
scope) named means no evidence is about, or linked to, what was asked: that too leaves the
question unaddressed. A score computed from the ranking alone is not used: it names what
was retrieved, not what was asked.

Pure functions; the same question and evidence give the same decision.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.quantities import spelled_out
from affidavit.llm.text import STOP_WORDS
from affidavit.text.tokenize import Tokenizer

QUESTION_FRAME_WORDS = frozenset((
    "policy", "policies", "rule", "rules", "procedure", "procedures", "process", "guidance",
    "requirement", "requirements", "required", "require", "much", "many", "long", "often",
    "soon", "allowed", "allow", "permitted", "need", "needs", "needed", "get", "happens",
    "happen",
    "apply", "applies", "anything", "something", "someone", "anyone", "there", "way",
    "know", "find", "give", "show", "list", "state", "stated", "mean", "means", "exist",
    "exists", "regarding", "concerning", "related", "relating", "current", "currently",
    "also", "else", "like", "kind", "type", "types", "one", "ones", "thing", "things",
    "decide", "decided", "decides", "decision", "cover", "covers", "covered", "include",
    "includes", "included", "handle", "handled", "handles", "work", "works", "done", "make",
    "made", "say", "says", "said", "tell", "told", "involve", "involves", "expected",
    "fast", "quickly", "quick", "late", "early", "far", "big", "large", "high", "low",
    # words that name the kind of answer wanted, not what it is about
    "rate", "rates", "amount", "amounts", "value", "number", "total", "level", "figure",
    "largest", "biggest", "greatest", "highest", "lowest", "smallest", "maximum", "minimum",
    "least", "longest", "shortest",
))
"""Words that frame a question rather than name what it is about."""

CJK_MIN_BIGRAM_COVERAGE = 0.5
"""Share of a CJK question's character bigrams the evidence must contain."""

NO_SUBJECT_IN_SCOPE = "BOUNDARY_NON_COMPLIANT"

_CJK_GRAM = re.compile(r"^[^\x00-\u2fff]{2}$")
_TOKENIZER = Tokenizer("english", True, ("@english", *STOP_WORDS, *QUESTION_FRAME_WORDS))
_SURFACE_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class QuestionCoverage:
    """Which key terms of the question the evidence covers; ``words`` maps a key term to
    the question's own word for it (what a reason may show)."""

    key_terms: tuple[str, ...]
    uncovered: tuple[str, ...]
    words: tuple[str, ...]
    compliance: str = ""

    @property
    def addressed(self) -> bool:
        """Whether the evidence addresses the question."""
        return not self.uncovered and not self.compliance

    @property
    def reasons(self) -> tuple[str, ...]:
        """Stable reason codes when the question is not addressed, else ``()``. They carry
        no words: gate reasons outlive the question in ledger views that withhold it (the
        uncovered words are in :meth:`to_dict`, which such views withhold)."""
        found = ["QUESTION_NOT_ADDRESSED"] if self.uncovered else []
        if self.compliance:
            found.append(self.compliance)
        return tuple(found)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"key_terms": list(self.key_terms), "uncovered": list(self.uncovered),
                "words": list(self.words), "compliance": self.compliance,
                "addressed": self.addressed}


def evidence_texts(items: Sequence[EvidenceItem]) -> list[str]:
    """What each evidence item says, its title and headings included: a question may name
    the document ("what does the handbook say...")."""
    return [" ".join((item.title, *item.heading_path, item.text)) for item in items]


def question_coverage(question: str, evidence: Sequence[str], *,
                      compliance: dict[str, Any] | None = None) -> QuestionCoverage:
    """How far ``evidence`` (texts) covers the key terms of ``question``.

    ``compliance`` is the query's boundary compliance as recorded in the ledger
    (:mod:`affidavit.retrieval.compliance`), when there is one.
    """
    key_terms = tuple(dict.fromkeys(_TOKENIZER.tokenize(spelled_out(question))))
    latin = _without_numbers([t for t in key_terms if not _is_cjk(t)])
    grams = [t for t in key_terms if _CJK_GRAM.match(t)]
    found = _addressing_terms(latin, [frozenset(_TOKENIZER.tokenize(t)) for t in evidence])
    uncovered = [t for t in latin if not _covered(t, found)]
    found |= frozenset(t for text in evidence for t in _TOKENIZER.tokenize(text))
    if grams and sum(1 for g in grams if g in found) < CJK_MIN_BIGRAM_COVERAGE * len(grams):
        uncovered.extend(g for g in grams if g not in found)
    return QuestionCoverage(key_terms, tuple(uncovered), _surface(question, uncovered),
                            _compliance_gap(compliance))


def _without_numbers(terms: list[str]) -> list[str]:
    """A number in a question is a constraint the answer must meet ("Who approves GBP
    60,000?" is answered by "up to GBP 250,000"), not a word the evidence must repeat;
    unless the question names nothing but numbers."""
    words = [t for t in terms if not any(ch.isdigit() for ch in t)]
    return words or terms


def _addressing_terms(key_terms: Sequence[str],
                      items: Sequence[frozenset[str]]) -> frozenset[str]:
    """Terms of the evidence items that hold more than half of the key terms together.

    A key term met only in an item about something else ("parking spaces" for a question
    on space travel) does not count: an item addresses the question, a stray word does not.
    """
    needed = len(key_terms) // 2 + 1
    addressing = [terms for terms in items
                  if sum(1 for t in key_terms if _covered(t, terms)) >= needed]
    return frozenset().union(*addressing) if addressing else frozenset()


def _is_cjk(term: str) -> bool:
    return bool(term) and all(ord(ch) > 0x2FFF for ch in term)


def _covered(term: str, found: frozenset[str]) -> bool:
    # Stems of one word family can differ in their last letters ("authoris", "author").
    if term in found or any(ch.isdigit() for ch in term):
        return term in found
    return len(term) >= 5 and any(
        len(other) >= 5 and (other.startswith(term) or term.startswith(other))
        for other in found)


def _surface(question: str, uncovered: Sequence[str]) -> tuple[str, ...]:
    """The question's own words for the uncovered terms, in question order."""
    wanted = set(uncovered)
    words: list[str] = []
    for word in _SURFACE_WORD.findall(question):
        for term in _TOKENIZER.tokenize(word):
            if term in wanted and term not in words:
                words.append(term if _is_cjk(term) else word.casefold())
                wanted.discard(term)
    return tuple(words)


def _compliance_gap(compliance: dict[str, Any] | None) -> str:
    if not compliance or compliance.get("expected_from") not in ("scope", "question"):
        return ""
    if compliance.get("status") == "NON_COMPLIANT" and compliance.get("score") == 0.0:
        return NO_SUBJECT_IN_SCOPE
    return ""
