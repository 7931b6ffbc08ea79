"""Refusals say why, and show no draft: documents waiting for SIRE approval are named by
count and by what to run (never a count of what the asker may not read), and a refused
answer shows the refusal, its reasons and the evidence that was there, not the draft's
claims (the ledger keeps the draft for operators). The example corpus in SQLite."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_invariants import EXAMPLES, ingest_examples

from affidavit.config.loader import load
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.llm.providers import ScriptedProvider
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

QUESTION = "What is the nightly hotel limit in London?"


def test_readable_documents_waiting_for_approval_are_named_with_what_to_run(
        tmp_path: Path) -> None:
    settings = load(EXAMPLES / "affidavit.toml")
    store = SQLiteStore(tmp_path / "a.db")
    try:
        source = LocalFolderSource(EXAMPLES / "corpus", source_system="examples",
                                   max_document_bytes=settings.ingest.max_document_bytes)
        Ingestor(store, settings).run([source])
        result = Engine(store, settings).ask("user:sam.reed", QUESTION)
        nobody = Engine(store, settings).ask("user:nobody.known", QUESTION)
    finally:
        store.close()
    assert result.output_state == "REQUIRES_SPEC"
    (reason,) = result.reasons
    count = int(reason.removeprefix("AWAITING_SIRE_APPROVAL:"))
    assert count >= 1
    assert result.answer.startswith(f"{count} document(s) you may read match")
    assert "affidavit sire approve" in result.answer
    # Someone who may read nothing learns nothing about unapproved documents.
    assert not any(r.startswith("AWAITING") for r in nobody.reasons)


def test_a_refused_answer_shows_the_refusal_and_the_evidence_not_the_draft(
        tmp_path: Path) -> None:
    store, settings = ingest_examples(tmp_path / "a.db")
    try:
        engine = Engine(store, settings)
        src = next(h.chunk_id for h in engine.search("user:sam.reed", QUESTION)
                   if "nightly hotel limit" in h.text)[:8]
        draft = (f"London hotel rooms are booked by the concierge desk of the Leeds contact "
                 f"centre on Fridays. [src:{src}]")
        result = Engine(store, settings, provider=ScriptedProvider([draft])).ask(
            "user:sam.reed", QUESTION)
        entry = store.get_ledger(settings.tenant, result.ledger_record_id)
        assert entry is not None
        record = json.loads(entry.payload)
    finally:
        store.close()
    assert result.output_state == "REQUIRES_SPEC", result.reasons
    assert "concierge" not in result.answer and result.claims == []
    assert result.reasons and result.citations
    assert any(c["src"] == src for c in result.citations)
    # the draft stays on the record, for an operator reading the ledger
    assert "concierge" in record["raw_response"]
