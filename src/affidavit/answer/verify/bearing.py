"""Whether each claim of an answer bears on the question asked.

A claim can be true of its evidence and still beside the point: "Hotels MUST be booked
through the travel portal" is no answer to "What is the nightly hotel limit?". An answer
with such a claim is not AUTHORIZED (the gate lowers it to PARTIAL): a reader acts on an
AUTHORIZED answer as a whole. A claim bears on the question when it says one of the
question's key terms (its content words, without those that only frame a question or spell
a number; word forms of one stem count as one), or names or meets a quantity the question
asks about ("up to GBP 250,000" for "GBP 60,000"). Pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

from affidavit.llm.claims import Claim
from affidavit.llm.extractive import key_terms
from affidavit.llm.quantities import fit, quantities
from affidavit.llm.text import content_terms

BEARING_RULE = "bearing-v1"
"""Recorded with every answer the rule was applied to, so that a replay applies it too."""


def _same_word(a: str, b: str) -> bool:
    # Stems of one family can differ in their last letters ("authoris", "author").
    return a == b or (len(a) >= 5 and len(b) >= 5 and (a.startswith(b) or b.startswith(a)))


def claims_beside_the_question(question: str, claims: Sequence[Claim]) -> tuple[int, ...]:
    """Indexes of the claims that bear on nothing ``question`` asks; none when the
    question names nothing to bear on."""
    keys = key_terms(question)
    asked = quantities(question)
    if not keys and not asked:
        return ()
    beside = []
    for claim in claims:
        said = content_terms(claim.text)
        if any(_same_word(k, t) for k in keys for t in said):
            continue
        if asked and fit(asked, claim.text)[0]:
            continue
        beside.append(claim.index)
    return tuple(beside)
