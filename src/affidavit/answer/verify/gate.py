"""The Boundary Gate: decides an answer's output state from its claim verdicts.

Rules, first match wins:

1. an unknown role or claim status -> BLOCKED (fail closed);
2. any contradicted claim -> BLOCKED;
3. no evidence -> REQUIRES_SPEC; evidence that does not address the question (its key
   terms, :mod:`affidavit.llm.relevance`) -> REQUIRES_SPEC; no claims, or refusals
   only -> REQUIRES_SPEC;
4. every non-refusal claim VERIFIED -> AUTHORIZED, lowered to PARTIAL when fabricated
   citations had to be stripped (the generation ignored its citation constraint) or when
   two claims give different values for one quantity (each may be true of its own source,
   but the answer cannot vouch for both; the reason names both claims);
5. no claim VERIFIED -> REQUIRES_SPEC;
6. otherwise PARTIAL.

An asserted claim that bears on nothing the question asks (:mod:`affidavit.answer.verify.bearing`)
lowers AUTHORIZED to PARTIAL (``CLAIM_BESIDE_THE_QUESTION:<index>``): each claim may be
true, but the answer as a whole is not what was asked.

A layer the deployment requires (``[gate] required_layers``) that did not run over every
asserted claim then lowers AUTHORIZED to PARTIAL (``REQUIRED_LAYER_NOT_RUN:<layer>``): the
claims may be true, but not proven as deeply as this deployment demands. PARTIAL rather
than REQUIRES_SPEC, because no narrower question would make the layer run: the gap is in
the proof, not in the evidence.

The advisory role then caps AUTHORIZED and PARTIAL at NARRATIVE_ONLY: an advisory answer
can never be authoritative, whatever its evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from affidavit.answer.verify.claims_check import (
    PARTIALLY_VERIFIED,
    REFUSED,
    UNVERIFIED,
    VERIFIED,
    ClaimVerdict,
)
from affidavit.answer.verify.facts import claim_conflicts
from affidavit.answer.verify.proof import proof_depth
from affidavit.llm.compiler import ROLES
from affidavit.llm.relevance import QuestionCoverage

AUTHORIZED = "AUTHORIZED"
PARTIAL = "PARTIAL"
REQUIRES_SPEC = "REQUIRES_SPEC"
NARRATIVE_ONLY = "NARRATIVE_ONLY"
BLOCKED = "BLOCKED"

OUTPUT_STATES = (AUTHORIZED, PARTIAL, REQUIRES_SPEC, NARRATIVE_ONLY, BLOCKED)
CLAIM_STATUSES = (VERIFIED, PARTIALLY_VERIFIED, UNVERIFIED, REFUSED)

# Governed refusal texts by reason prefix, most specific first. They name the kind of
# failure only: never the evidence, and never whether withheld content exists.
_REFUSALS = (
    ("CONTRADICTED_CLAIM", "This answer was withheld: at least one of its statements "
                           "conflicts with the evidence it relied on."),
    ("OUT_OF_SCOPE_ENTITY", "This question concerns an entity outside the scope this "
                            "service answers for, so it is not answered."),
    ("AUTHORIZATION_FAILED", "The request could not be authorized, so nothing was retrieved "
                             "or answered."),
    ("NO_EVIDENCE", "No evidence available to you answers this question, so no answer is "
                    "given."),
    ("AWAITING_SIRE_APPROVAL", "{count} document(s) you may read match this question, but none is "
                               "approved for answers yet (its SIRE identity is still "
                               "PROPOSED), so no answer is given. An approver can review them "
                               "with `affidavit sire list` and approve them with `affidavit "
                               "sire approve`."),
    ("QUESTION_NOT_ADDRESSED", "The evidence available to you does not address this "
                               "question, so no answer is given."),
    ("BOUNDARY_NON_COMPLIANT", "The evidence available to you does not address this "
                               "question, so no answer is given."),
)
_GOVERNANCE_REFUSAL = (
    "This answer was withheld because a governance check did not pass or could not be "
    "completed."
)
_UNVERIFIED_REFUSAL = (
    "No answer could be verified against the evidence available to you; the question may "
    "need a more specific scope."
)


@dataclass(frozen=True)
class GateDecision:
    """The output state of one answer and the stable reasons that led to it."""

    output_state: str
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"output_state": self.output_state, "reasons": list(self.reasons)}


def decide(
    verdicts: Sequence[ClaimVerdict],
    *,
    role: str,
    evidence_count: int,
    stripped_citations: Sequence[str],
    relevance: QuestionCoverage | None = None,
    required_layers: Sequence[str] = (),
    beside_the_question: Sequence[int] = (),
) -> GateDecision:
    """The output state for an answer with these claim verdicts; ``relevance`` says whether
    the evidence addresses the question (unknown when ``None``); ``required_layers`` are
    the ledger names of the layers an AUTHORIZED answer needs; ``beside_the_question`` the
    indexes of claims that bear on nothing asked."""
    stripped = len(set(stripped_citations))
    notes = [f"FABRICATED_CITATIONS_STRIPPED:{stripped}"] if stripped else []
    failure = _failed_closed(verdicts, role)
    if failure:
        return GateDecision(BLOCKED, (failure, *notes))
    contradicted = [f"CONTRADICTED_CLAIM:{v.claim.index}" for v in verdicts if v.contradicted]
    # Evidence that does not address the question settles the state before any claim is
    # weighed: nothing could ground an answer, whatever it says. Both states withhold the
    # answer; the contradictions stay among the reasons.
    if evidence_count > 0 and relevance is not None and not relevance.addressed:
        return GateDecision(REQUIRES_SPEC, (*relevance.reasons, *contradicted, *notes))
    if contradicted:
        return GateDecision(BLOCKED, (*contradicted, *notes))
    state, reasons = _authoritative_state(verdicts, evidence_count, bool(stripped_citations))
    conflicts = tuple(c.reason for c in claim_conflicts(
        [(v.claim.index, v.claim.text) for v in verdicts if v.status != REFUSED]))
    if conflicts and state == AUTHORIZED:
        state, reasons = PARTIAL, (*conflicts, *reasons)
    elif conflicts:
        reasons = (*conflicts, *reasons)
    asserted = {v.claim.index for v in verdicts if v.status != REFUSED}
    beside = [i for i in beside_the_question if i in asserted]
    if beside and state == AUTHORIZED:
        state, reasons = PARTIAL, (*(f"CLAIM_BESIDE_THE_QUESTION:{i}" for i in beside),
                                   *reasons)
    missing = proof_depth(verdicts, required_layers).missing_required
    if missing and state == AUTHORIZED:
        state, reasons = PARTIAL, (*(f"REQUIRED_LAYER_NOT_RUN:{n}" for n in missing), *reasons)
    if role == "advisory" and state in (AUTHORIZED, PARTIAL):
        return GateDecision(NARRATIVE_ONLY, ("ADVISORY_ROLE_CEILING", *reasons, *notes))
    return GateDecision(state, (*reasons, *notes))


def _failed_closed(verdicts: Sequence[ClaimVerdict], role: str) -> str:
    if role not in ROLES:
        return "UNKNOWN_ROLE"
    if any(v.status not in CLAIM_STATUSES for v in verdicts):
        return "UNKNOWN_CLAIM_STATUS"
    return ""


def _authoritative_state(
    verdicts: Sequence[ClaimVerdict], evidence_count: int, fabricated: bool
) -> tuple[str, tuple[str, ...]]:
    if evidence_count <= 0:
        return REQUIRES_SPEC, ("NO_EVIDENCE",)
    if not verdicts:
        return REQUIRES_SPEC, ("NO_CLAIMS",)
    asserted = [v for v in verdicts if v.status != REFUSED]
    refusals = len(verdicts) - len(asserted)
    refused = (f"REFUSED_CLAIMS:{refusals}",) if refusals else ()
    if not asserted:
        return REQUIRES_SPEC, ("ONLY_REFUSALS", *refused)
    verified = sum(1 for v in asserted if v.status == VERIFIED)
    if verified == len(asserted):
        if fabricated:
            return PARTIAL, ("ALL_CLAIMS_VERIFIED", "LOWERED_FOR_FABRICATED_CITATIONS", *refused)
        return AUTHORIZED, ("ALL_CLAIMS_VERIFIED", *refused)
    if verified == 0:
        return REQUIRES_SPEC, ("NO_VERIFIED_CLAIMS", *refused)
    return PARTIAL, (f"VERIFIED_CLAIMS:{verified}/{len(asserted)}", *refused)


def shown_answer(decision: GateDecision, answer: str, claim_count: int, *,
                 withhold_refused_drafts: bool = True) -> str:
    """What the asker is shown: the answer, or the governed refusal when the answer is
    blocked, has no claims, answers a question the evidence does not address, or was
    refused (REQUIRES_SPEC): a refused draft is not shown, not even tagged as unverified
    (it stays in the ledger's raw response for operators). ``withhold_refused_drafts``
    False is the rule of records decided before it (their replay)."""
    unaddressed = any(r.startswith(("QUESTION_NOT_ADDRESSED", "BOUNDARY_NON_COMPLIANT"))
                      for r in decision.reasons)
    refused = withhold_refused_drafts and decision.output_state == REQUIRES_SPEC
    if decision.output_state == BLOCKED or not claim_count or unaddressed or refused:
        return governed_refusal(decision)
    return answer


def governed_refusal(decision: GateDecision) -> str:
    """The text that replaces a withheld answer; it never quotes the evidence."""
    for prefix, text in _REFUSALS:
        for reason in decision.reasons:
            if reason.startswith(prefix):
                # a count the reason carries (of documents the asker may read) is said
                return text.replace("{count}", reason.partition(":")[2] or "Some")
    if decision.output_state == BLOCKED:
        return _GOVERNANCE_REFUSAL
    return _UNVERIFIED_REFUSAL
