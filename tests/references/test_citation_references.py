"""A citation of an emitted answer becomes a Reference, written with its ledger record and
visible only to readers of both ends (the record's evidence and the cited chunk)."""

from __future__ import annotations

from pathlib import Path

from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.references.links import list_references, search_references
from affidavit.store import SQLiteStore
from tests.references.world import FINANCE_READER, PLAIN_READER, ingest, node_of, write_doc

SALARY = "The harbour pilot salary is 91000 euros per year before tax."


def _corpus(root: Path) -> None:
    write_doc(root, "pilots.md", "The harbour pilot guides ships into the harbour at night.")
    write_doc(root, "payroll.md", SALARY, label="FINANCIAL")


def test_citation_becomes_reference_visible_only_to_readers_of_both_ends(
        tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    _corpus(root)
    store = SQLiteStore(tmp_path / "refs.db")
    try:
        ingest(store, root)
        engine = Engine(store, Settings())
        result = engine.ask(FINANCE_READER, "What is the harbour pilot salary?")
        assert result.citations, result.to_dict()
        payroll, pilots = node_of(store, "payroll.md"), node_of(store, "pilots.md")
        finance = engine.authz_context(FINANCE_READER)
        plain = engine.authz_context(PLAIN_READER)
        cited = list_references(store, finance, payroll)
        for_plain_pilots = list_references(store, plain, pilots)
        found_by_plain = search_references(store, plain, "salary")
        found_by_finance = search_references(store, finance, "salary")
    finally:
        store.close()
    assert cited, "the cited FINANCIAL chunk has its Citation reference"
    ref = cited[0]
    assert ref.kind == "Citation" and ref.source_type == "ledger"
    assert ref.source_id == result.ledger_record_id
    assert ref.classification == "FINANCIAL"
    assert len(ref.label) <= 100 and "harbour pilot salary" in ref.label
    assert ref.target_chunk_id is not None
    assert "salary" in ref.reason
    assert found_by_finance
    # The record's evidence includes FINANCIAL text: a reader without FINANCIAL sees no
    # reference of that record, not even one to the public document it also cites.
    assert for_plain_pilots == [] and found_by_plain == []


def test_blocked_or_refused_answer_writes_no_citation_reference(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    _corpus(root)
    store = SQLiteStore(tmp_path / "refs.db")
    try:
        ingest(store, root)
        engine = Engine(store, Settings())
        result = engine.ask(PLAIN_READER, "zebra quantum telescope")
        finance = engine.authz_context(FINANCE_READER)
        found = search_references(store, finance, "harbour")
    finally:
        store.close()
    assert result.output_state in ("REQUIRES_SPEC", "BLOCKED")
    assert found == []
