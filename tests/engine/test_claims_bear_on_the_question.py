"""An answer whose claims are true but beside the point is not AUTHORIZED: the gate checks
each claim against what the question asks (answer.bearing), the ledger records it, and a
replay applies the same rule. The example corpus in SQLite; the model's answer scripted so
that both claims are verbatim evidence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.test_invariants import ingest_examples

from affidavit.answer.verify.bearing import claims_beside_the_question
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.engine.replay import replay
from affidavit.llm.claims import extract_claims
from affidavit.llm.providers import ScriptedProvider
from affidavit.store import SQLiteStore

QUESTION = "What is the nightly hotel limit in London?"
LIMIT = ("The nightly hotel limit, meaning the maximum room rate per night excluding "
         "breakfast and local taxes, is: Location: London (inside the M25), Maximum per "
         "night: GBP 185.")
ALCOHOL = ("Harbourline Mutual is a member-owned savings, mortgage and insurance provider "
           "founded in Bristol in 1867.")


@pytest.fixture
def examples(tmp_path: Path) -> Iterator[tuple[SQLiteStore, Settings]]:
    store, settings = ingest_examples(tmp_path / "a.db")
    yield store, settings  # type: ignore[misc]
    store.close()


def _src(engine: Engine, sentence: str) -> str:
    """The citation tag of the chunk that says ``sentence``."""
    hits = engine.search("user:sam.reed", sentence)
    words = sentence.split()[:4]
    return next(h.chunk_id for h in hits if " ".join(words) in " ".join(h.text.split()))[:8]


def _ask(store: SQLiteStore, settings: Settings, *sentences: str) -> tuple[str, dict[str, object]]:
    engine = Engine(store, settings)
    text = " ".join(f"{s} [src:{_src(engine, s)}]" for s in sentences)
    result = Engine(store, settings, provider=ScriptedProvider([text])).ask("user:sam.reed",
                                                                           QUESTION)
    entry = store.get_ledger(settings.tenant, result.ledger_record_id)
    assert entry is not None
    return result.output_state, json.loads(entry.payload)


def test_an_answer_with_a_claim_beside_the_question_is_not_authorized(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    state, record = _ask(store, settings, LIMIT, ALCOHOL)
    assert state == "PARTIAL"
    assert "CLAIM_BESIDE_THE_QUESTION:1" in record["gate_reasons"]  # type: ignore[operator]
    assert record["bearing"] == {"rule": "bearing-v1", "beside_the_question": [1]}
    assert [c["status"] for c in record["claims"]] == ["VERIFIED", "VERIFIED"]  # type: ignore[union-attr,index]


def test_the_same_answer_without_it_is_authorized_and_replays(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    state, record = _ask(store, settings, LIMIT)
    assert state == "AUTHORIZED" and record["bearing"]["beside_the_question"] == []  # type: ignore[index]
    report = replay(store, settings, str(record["record_id"]), tenant=settings.tenant)
    assert report.matches, report.first_difference


def test_a_claim_bears_through_a_key_term_or_the_asked_quantity() -> None:
    claims = extract_claims("Approver: Executive Committee member, Approval limit: up to "
                            "GBP 250,000. [src:aaaaaaaa] Every invoice needs a purchase order "
                            "number. [src:aaaaaaaa] Spending is capped at up to GBP 250,000. "
                            "[src:aaaaaaaa]")
    assert claims_beside_the_question("Who approves GBP 60,000?", claims) == (1,)
    assert claims_beside_the_question("What is it?", claims) == ()
