"""A change to ``[sire] default_excludes`` is in force on the next request (spec 003 §10.3):
the gate applies the configured list with each source's approved Excluded set, nothing is
derived again, no document is withheld and no approval is reset; the ledger records the list
in force and a replay applies the same one. A term naming a source's own identity is not
applied to that source and is reported (§7, identity rule 5). The example corpus in SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_invariants import ingest_examples

from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.engine.replay import replay
from affidavit.index.epochs import serving_epoch
from affidavit.store import SQLiteStore

QUESTION = "What is the nightly hotel limit in London?"
ASKER = "user:sam.reed"


@pytest.fixture
def examples(tmp_path: Path) -> Iterator[tuple[SQLiteStore, Settings]]:
    store, settings = ingest_examples(tmp_path / "a.db")
    yield store, settings  # type: ignore[misc]
    store.close()


def _with_excludes(settings: Settings, *terms: str) -> Settings:
    sire = replace(settings.sire, default_excludes=(*settings.sire.default_excludes, *terms))
    return replace(settings, sire=sire)


def _ask(store: SQLiteStore, settings: Settings) -> tuple[str, dict[str, Any]]:
    result = Engine(store, settings).ask(ASKER, QUESTION)
    entry = store.get_ledger(settings.tenant, result.ledger_record_id)
    assert entry is not None
    return result.answer, json.loads(entry.payload)


def _sire_gate(record: dict[str, Any]) -> dict[str, Any]:
    gate: dict[str, Any] = next(g for g in record["gates"] if g["gate"] == "sire")
    return gate


def _states(store: SQLiteStore, settings: Settings) -> list[tuple[str, str]]:
    return sorted((r.sire_id, r.state) for r in store.list_sire(settings.tenant))


def test_a_new_default_exclusion_applies_on_the_next_request_and_keeps_approvals(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    answer, before = _ask(store, settings)
    assert "185" in answer
    assert not [d for d in _sire_gate(before)["dropped"] if "M25" in d["reason"].upper()]
    approvals = _states(store, settings)
    assert approvals and all(state == "ACTIVE" for _, state in approvals)

    changed = _with_excludes(settings, "M25")
    # Nothing is withheld: the serving key does not depend on the exclusion list.
    assert serving_epoch(changed) == serving_epoch(settings)
    assert store.label_stale_heads(settings.tenant, serving_epoch(changed)) == []

    answer, after = _ask(store, changed)
    dropped = [d for d in _sire_gate(after)["dropped"] if d["reason"] == "SIRE_EXCLUDED:m25"]
    assert dropped, _sire_gate(after)
    assert not {d["chunk_id"] for d in dropped} & set(_sire_gate(after)["kept"])
    assert "185" not in answer
    assert after["sire_excludes"]["in_force"] == [*settings.sire.default_excludes, "M25"]
    assert _states(store, settings) == approvals  # no approval reset

    # The replay applies the list the record ran under.
    report = replay(store, changed, str(after["record_id"]), tenant=settings.tenant)
    assert report.matches, report.first_difference
    assert "gates" in report.checked


def test_removing_the_new_term_serves_the_text_again(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    _ask(store, _with_excludes(settings, "M25"))
    answer, record = _ask(store, settings)
    assert "185" in answer
    assert not [d for d in _sire_gate(record)["dropped"] if "m25" in d["reason"]]


def test_a_default_exclusion_naming_a_source_itself_is_reported_not_applied_to_it(
        examples: tuple[SQLiteStore, Settings]) -> None:
    store, settings = examples
    # "travel and expenses" is the travel policy's own title: excluding it there would
    # silently remove the source from every answer.
    answer, record = _ask(store, _with_excludes(settings, "Travel and Expenses"))
    assert "185" in answer
    reported = record["sire_excludes"]["not_applied"]
    assert any("travel and expenses" in r["terms"] for r in reported), reported
    travel = {r["version_id"] for r in reported if "travel and expenses" in r["terms"]}
    kept_from_travel = [c for c in _sire_gate(record)["kept"]
                        if any(c in json.dumps(e) for e in record.get("evidence", []))]
    assert travel and kept_from_travel


def test_a_codename_in_the_exclusion_list_never_reaches_a_ledger_view(
        examples: tuple[SQLiteStore, Settings]) -> None:
    from affidavit.engine.ledger_record import redact_for

    store, settings = examples
    changed = _with_excludes(settings, "Project Lighthouse")  # a RESTRICTED codename
    result = Engine(store, changed).ask(ASKER, QUESTION)
    entry = store.get_ledger(settings.tenant, result.ledger_record_id)
    assert entry is not None
    assert "project lighthouse" in entry.payload.lower()  # the record keeps the list
    authz = Engine(store, changed).authz_context(ASKER)
    assert "RESTRICTED" not in authz.granted_labels
    view = redact_for(entry, authz, store)
    assert "lighthouse" not in json.dumps(view).lower()
    shown = view["record"]["sire_excludes"]
    assert shown["in_force"]["count"] == len(settings.sire.default_excludes) + 1
    assert len(shown["in_force"]["digest"]) == 16
    # The view leaves the stored record alone: a replay still applies the logged list.
    report = replay(store, changed, result.ledger_record_id, tenant=settings.tenant)
    assert report.matches, report.first_difference
