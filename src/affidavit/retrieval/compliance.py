"""Subject grouping and the boundary compliance score of one query (spec 003 §6.1).

Pure functions over the SIRE identities of the evidence that reached the prompt. The score
informs (it goes to the ledger); it never gates, because only Excluded enforces.

*Expected subjects* are the SIRE Subjects the query is about, taken from the first of:

1. an explicit scope (the API's subject scope override);
2. the question: the subjects of the candidate sources that the question names best (all
   tokens of the Subject in the question outranks any number of Included terms in it;
   among equals, more Included terms found wins; ties keep every subject tied);
3. the ranking: the subject group with the best mean score.

Each evidence chunk is then *in scope* (its source's Subject is expected), *linked* (a
Relevant term of its source names an expected subject, or the other way round: one hop
of the Relevant graph) or *outside*. With ``n`` chunks, ``e`` in scope, ``r`` linked and
``u`` outside:

* ``1.0`` COMPLIANT: every chunk is in scope (``e == n > 0``);
* ``0.5 + 0.49 * e / n`` DEGRADED: cross-subject evidence, all of it linked (``u == 0``);
* ``0.49 * (e + r / 2) / n`` NON_COMPLIANT: some evidence is outside, or there is none
  (``0.0``): coverage is insufficient and the gate may refuse.

The bands never overlap, so the status can be read off the score alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from affidavit.identity import exclusion_hits, term_tokens
from affidavit.records import SireTuple

COMPLIANT, DEGRADED, NON_COMPLIANT = "COMPLIANT", "DEGRADED", "NON_COMPLIANT"
FROM_SCOPE, FROM_QUESTION, FROM_RANKING, FROM_NOTHING = "scope", "question", "ranking", "none"


@dataclass(frozen=True)
class EvidenceSubject:
    """One evidence chunk with its source's SIRE Subject and Relevant terms."""

    chunk_id: str
    subject: str
    relevant: tuple[str, ...]
    score: float


@dataclass(frozen=True)
class SubjectGroup:
    """Evidence of one Subject, in evidence order, with its mean retrieval score."""

    subject: str
    chunk_ids: tuple[str, ...]
    mean_score: float

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "chunk_ids": list(self.chunk_ids),
                "mean_score": self.mean_score}


@dataclass(frozen=True)
class ComplianceScore:
    """The boundary compliance of one query, as recorded in the ledger."""

    score: float
    status: str
    expected: tuple[str, ...]
    expected_from: str
    groups: tuple[SubjectGroup, ...]
    in_scope: tuple[str, ...]
    linked: tuple[str, ...]
    outside: tuple[str, ...]
    uncovered: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score, "status": self.status, "expected": list(self.expected),
            "expected_from": self.expected_from,
            "groups": [g.to_dict() for g in self.groups], "in_scope": list(self.in_scope),
            "linked": list(self.linked), "outside": list(self.outside),
            "uncovered": list(self.uncovered),
        }


def group_by_subject(evidence: Sequence[EvidenceSubject]) -> tuple[SubjectGroup, ...]:
    """Algorithm 2 step 2: groups by Subject, best mean score first (ties: Subject A-Z)."""
    members: dict[str, list[EvidenceSubject]] = {}
    for item in evidence:
        members.setdefault(item.subject, []).append(item)
    groups = [SubjectGroup(subject, tuple(i.chunk_id for i in items),
                           sum(i.score for i in items) / len(items))
              for subject, items in members.items()]
    return tuple(sorted(groups, key=lambda g: (-g.mean_score, g.subject)))


def subject_tokens(subject: str) -> frozenset[str]:
    """Identity tokens of a Subject (underscores separate words)."""
    return term_tokens(subject.replace("_", " "))


def names_subject(term: str, subject: str) -> bool:
    """Whether a Relevant term and a Subject name the same thing (one's tokens hold the other's)."""
    term_set, subject_set = term_tokens(term), subject_tokens(subject)
    return bool(term_set) and bool(subject_set) and (
        term_set <= subject_set or subject_set <= term_set)


def expected_from_question(question: str, sires: Iterable[SireTuple]) -> frozenset[str]:
    """The candidate subjects the question names best; empty when it names none."""
    asked = term_tokens(question)
    strength: dict[str, tuple[bool, int]] = {}
    for sire in sires:
        named = bool(subject_tokens(sire.subject)) and subject_tokens(sire.subject) <= asked
        found = len(exclusion_hits(question, sire.included))
        best = strength.get(sire.subject, (False, 0))
        strength[sire.subject] = max(best, (named, found))
    top = max(strength.values(), default=(False, 0))
    if top == (False, 0):
        return frozenset()
    return frozenset(s for s, value in strength.items() if value == top)


def _linked(item: EvidenceSubject, expected: Collection[str],
            relevant_of: Mapping[str, Collection[str]]) -> bool:
    if any(names_subject(term, x) for term in item.relevant for x in expected):
        return True
    return any(names_subject(term, item.subject)
               for x in expected for term in relevant_of.get(x, ()))


def boundary_compliance(evidence: Sequence[EvidenceSubject], expected: Collection[str], *,
                        relevant_of: Mapping[str, Collection[str]] | None = None,
                        expected_from: str = FROM_SCOPE) -> ComplianceScore:
    """Score ``evidence`` against the ``expected`` subjects (see the module docstring)."""
    links = relevant_of or {}
    in_scope = tuple(i.chunk_id for i in evidence if i.subject in expected)
    linked = tuple(i.chunk_id for i in evidence
                   if i.subject not in expected and _linked(i, expected, links))
    outside = tuple(i.chunk_id for i in evidence
                    if i.subject not in expected and i.chunk_id not in linked)
    n, e, r = len(evidence), len(in_scope), len(linked)
    if n and e == n:
        score, status = 1.0, COMPLIANT
    elif n and not outside:
        score, status = 0.5 + 0.49 * e / n, DEGRADED
    else:
        score, status = (0.49 * (e + r / 2) / n if n else 0.0), NON_COMPLIANT
    covered = {i.subject for i in evidence}
    return ComplianceScore(
        score=round(score, 4), status=status, expected=tuple(sorted(expected)),
        expected_from=expected_from, groups=group_by_subject(evidence), in_scope=in_scope,
        linked=linked, outside=outside,
        uncovered=tuple(sorted(set(expected) - covered)))


def score_query(question: str, evidence: Sequence[EvidenceSubject],
                candidates: Iterable[SireTuple], *,
                scope: Collection[str] | None = None) -> ComplianceScore:
    """The compliance of one query: expected subjects decided as the module says, then
    :func:`boundary_compliance`. ``candidates`` are the ACTIVE SIRE of every candidate."""
    sires = list(candidates)
    relevant_of: dict[str, set[str]] = {}
    for sire in sires:
        relevant_of.setdefault(sire.subject, set()).update(sire.relevant)
    if scope:
        expected, source = frozenset(scope), FROM_SCOPE
    elif named := expected_from_question(question, sires):
        expected, source = named, FROM_QUESTION
    elif groups := group_by_subject(evidence):
        expected, source = frozenset({groups[0].subject}), FROM_RANKING
    else:
        expected, source = frozenset(), FROM_NOTHING
    return boundary_compliance(evidence, expected, relevant_of=relevant_of,
                               expected_from=source)
