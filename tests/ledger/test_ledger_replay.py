"""Ledger replay: every record the engine writes re-executes to the same decision."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_invariants import ingest_examples

from affidavit.config.settings import Settings
from affidavit.engine.ledger_record import LedgerWriter
from affidavit.engine.query import Engine, _Trace
from affidavit.engine.replay import replay
from affidavit.errors import NotFound
from affidavit.llm.providers import ScriptedProvider
from affidavit.records import ScoredChunk
from affidavit.store import SQLiteStore

QUESTIONS = ("What is the nightly hotel limit?", "How often are access rights reviewed?",
             "What did the Board decide about Project Lighthouse?", "parking on the moon")


class LoggingEngine(Engine):
    """The engine with the ledger fields replay asks for (the integration snippet)."""

    def _answer(self, trace: _Trace, candidates: list[ScoredChunk]) -> Any:
        trace.record["corpus_generation"] = self.store.corpus_generation(self.tenant)
        trace.record["evidence"] = [{"chunk_id": c.chunk.chunk_id, "title": c.title}
                                    for c in candidates]
        return super()._answer(trace, candidates)


@pytest.fixture
def examples(tmp_path: Path) -> Iterator[tuple[SQLiteStore, Settings]]:
    store, settings = ingest_examples(tmp_path / "a.db")
    yield store, settings  # type: ignore[misc]
    store.close()


def _records(store: SQLiteStore, settings: Settings) -> list[str]:
    return [entry.record_id for entry in store.iter_ledger(settings.tenant)]


def test_every_engine_record_replays_to_the_same_decision(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    engine = Engine(store, settings)
    for principal in ("user:sam.reed", "user:grace.liu", None):
        for question in QUESTIONS:
            engine.ask(principal, question)
    for record_id in _records(store, settings):
        report = replay(store, settings, record_id, tenant=settings.tenant)
        assert report.matches, (record_id, report.first_difference)
    assert "prompt_hash" in report.checked or report.skipped


def test_scripted_answers_replay_including_blocked_and_fabricated(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    engine = LoggingEngine(store, settings, provider=ScriptedProvider([
        "The nightly hotel limit is $9,999 [src:deadbeef].",
        "<think>hmm</think>Nothing here [src:0badc0de].",
    ]))
    first = engine.ask("user:sam.reed", QUESTIONS[0])
    engine.ask("user:sam.reed", QUESTIONS[0])
    report = replay(store, settings, first.ledger_record_id, tenant=settings.tenant)
    assert report.matches, report.first_difference
    assert {"retrieval", "gates", "prompt_hash", "claims", "output_state"} <= set(report.checked)


def test_a_changed_threshold_is_reported_as_the_first_difference(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    result = LoggingEngine(store, settings).ask("user:sam.reed", QUESTIONS[0])
    stricter = settings.replace(answer=settings.answer.__class__(support_threshold=1.0,
                                                                 max_evidence=1))
    report = replay(store, stricter, result.ledger_record_id, tenant=settings.tenant)
    assert not report.matches
    assert report.first_difference is not None
    assert report.first_difference.startswith("config_version")


def test_retrieval_is_not_replayed_after_the_corpus_changed(
        examples: tuple[SQLiteStore, Settings], tmp_path: Path) -> None:
    store, settings = examples
    result = LoggingEngine(store, settings).ask("user:sam.reed", QUESTIONS[0])
    from affidavit.ingest.run import Ingestor
    from affidavit.sources import LocalFolderSource

    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "note.md").write_text("# Note\n\nThe hotel limit is under review.\n")
    Ingestor(store, settings).run([LocalFolderSource(
        folder, source_system="more", max_document_bytes=settings.ingest.max_document_bytes)])
    report = replay(store, settings, result.ledger_record_id, tenant=settings.tenant)
    assert report.matches, report.first_difference
    assert "retrieval" not in report.checked
    assert any(s.startswith("retrieval: the corpus changed") for s in report.skipped)


def test_unknown_record_is_not_found(examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    with pytest.raises(NotFound):
        replay(store, settings, "led-nope", tenant=settings.tenant)


# --------------------------------------------------------------------------- rerank


def _reranking(settings: Settings) -> Settings:
    return settings.replace(retrieval=dataclasses.replace(settings.retrieval, rerank=True))


def _ask_reranked(store: SQLiteStore, settings: Settings, judge_answer: str) -> str:
    provider = ScriptedProvider([judge_answer, "The nightly hotel limit is $250 per night."])
    result = Engine(store, settings, provider=provider).ask("user:sam.reed", QUESTIONS[0])
    return result.ledger_record_id


def _logged(store: SQLiteStore, settings: Settings, record_id: str) -> dict[str, Any]:
    entry = store.get_ledger(settings.tenant, record_id)
    assert entry is not None
    return dict(json.loads(entry.payload))


def _reappend(store: SQLiteStore, settings: Settings, record: dict[str, Any]) -> str:
    kept = {k: v for k, v in record.items()
            if k not in ("schema", "record_id", "tenant", "created_at")}
    return LedgerWriter(store).append(settings.tenant, str(record["request_id"]) + "-copy",
                                      kept).record_id


@pytest.mark.parametrize("judge_answer", ["[3] > [1] > [2]", "[2] > [1]", "no idea", "[99]"])
def test_reranked_records_replay_from_the_judges_logged_answer(
        examples: tuple[SQLiteStore, Settings], judge_answer: str) -> None:
    store, settings = examples
    settings = _reranking(settings)
    record_id = _ask_reranked(store, settings, judge_answer)
    logged = _logged(store, settings, record_id)["rerank"]
    if judge_answer.startswith("[3]"):
        assert logged["status"] == "RERANKED" and logged["order"][:3] != logged["sent"][:3]
    report = replay(store, settings, record_id, tenant=settings.tenant)
    assert report.matches, report.first_difference
    assert {"retrieval", "rerank", "gates", "prompt_hash"} <= set(report.checked)


def test_records_logged_without_the_judges_answer_still_replay(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    settings = _reranking(settings)
    record = _logged(store, settings, _ask_reranked(store, settings, "[3] > [1] > [2]"))
    del record["rerank"]["judge_output"]
    report = replay(store, settings, _reappend(store, settings, record), tenant=settings.tenant)
    assert report.matches, report.first_difference
    assert "rerank" in report.checked


def test_a_judge_answer_that_does_not_give_the_logged_order_is_a_difference(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    settings = _reranking(settings)
    record = _logged(store, settings, _ask_reranked(store, settings, "[3] > [1] > [2]"))
    record["rerank"]["judge_output"] = [1, 0]
    report = replay(store, settings, _reappend(store, settings, record), tenant=settings.tenant)
    assert not report.matches
    assert report.first_difference is not None
    assert report.first_difference.startswith("rerank")
