"""Ledger replay: every record the engine writes re-executes to the same decision."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_invariants import ingest_examples

from affidavit.answer import ScriptedProvider
from affidavit.config import Settings
from affidavit.errors import NotFound
from affidavit.ledger.replay_record import replay
from affidavit.query import Engine, _Trace
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
    from affidavit.ingest import Ingestor
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
