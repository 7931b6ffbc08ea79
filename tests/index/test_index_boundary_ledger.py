"""The boundary reaches the ledger (spec 003 §4.7, §10.2): every record answered from a
DEGRADED run carries DEGRADED_BOUNDARY with the documents the run left out, on the record
and on every claim; the record names the run it was judged against and whether the query
and each evidence chunk lie inside the chi-squared control limit. A quarantined document's
name never reaches a caller who may not read it: not in the answer, not in the ledger view.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import chi2
from tests.retrieval.governed_corpus import document, governed_settings

from affidavit.authz import StoreAuthorizer
from affidavit.config.settings import Settings, VectorSettings
from affidavit.engine.ledger_record import LedgerWriter, redact_for
from affidavit.engine.query import AskResult, Engine
from affidavit.identity.lifecycle import approve_sires
from affidavit.index.boundary import DEGRADED_BOUNDARY
from affidavit.ingest.run import Ingestor
from affidavit.ledger import replay, verify_chain
from affidavit.records import AuthzContext, SourceDocument
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore, Store

QUESTION = "Which hotel does the travel policy cover?"
BOARD_ONLY = "board-minutes"


def settings() -> Settings:
    return governed_settings(vectors=VectorSettings(backend="hash", dimensions=32))


def corpus() -> list[SourceDocument]:
    docs = [document(f"travel-{i}", f"The travel policy {i} covers the hotel and the flight "
                     f"for trip number {i}.", acl=("group:staff#member",)) for i in range(4)]
    docs.append(document(BOARD_ONLY, "The board minutes record the merger vote of the quarter.",
                         acl=("group:board#member",)))
    return docs


def approve_all(store: Store, tenant: str) -> None:
    approve_sires(store, tenant, [r.sire_id for r in store.list_sire(tenant)],
                  by="user:curator", at=datetime.now(UTC).isoformat())


def logged(store: Store, tenant: str, result: AskResult) -> dict[str, Any]:
    entry = store.get_ledger(tenant, result.ledger_record_id)
    assert entry is not None
    record: dict[str, Any] = json.loads(entry.payload)
    return record


def reader(store: Store, config: Settings, principal: str) -> AuthzContext:
    return StoreAuthorizer(store, config).context_for(config.tenant, principal)


def degraded_store(tmp_path: Path, store: Store | None = None) -> tuple[Store, Settings, str]:
    """A corpus whose second run quarantined a never-stored file and a failed edit of the
    board's document (whose previous version keeps serving)."""
    config = settings()
    store = store or SQLiteStore(tmp_path / "degraded.db")
    Ingestor(store, config).run([StaticSource(corpus())])
    approve_all(store, config.tenant)
    edit = document(BOARD_ONLY, "x", acl=("group:board#member",))
    broken_edit = SourceDocument(edit.source_system, edit.source_id, "r2",
                                 b"\xff\xfe\x00 not text", edit.alias, edit.metadata)
    never_stored = SourceDocument("memory", "layoffs", "r1", b"\xff\xfe\x00 garbage",
                                  "layoffs-plan-2027.txt")
    summary = Ingestor(store, config).run([StaticSource([broken_edit, never_stored])])
    assert summary.status == "DEGRADED"
    return store, config, summary.run_id


def test_every_answer_from_a_degraded_run_carries_degraded_boundary_and_its_names(
        tmp_path: Path, store: Store) -> None:
    store, config, run_id = degraded_store(tmp_path, store)
    result = Engine(store, config).ask("user:alice", QUESTION)
    assert result.output_state != "BLOCKED" and result.claims
    record = logged(store, config.tenant, result)
    boundary = record["boundary"]
    assert boundary["run_id"] == run_id and boundary["status"] == "DEGRADED"
    assert boundary["degraded"] is True and boundary["annotations"] == [DEGRADED_BOUNDARY]
    assert boundary["excluded"] == ["board-minutes.txt", "layoffs-plan-2027.txt"]
    # Spec 003 §10.2: on every claim derived from the degraded corpus; no state changes.
    assert all(c["annotations"] == [DEGRADED_BOUNDARY] for c in record["claims"])
    assert all(c["annotations"] == [DEGRADED_BOUNDARY] for c in result.claims)
    assert verify_chain(store.iter_ledger(config.tenant), tenant=config.tenant).ok
    report = replay(store, config, result.ledger_record_id, tenant=config.tenant)
    assert report.matches, report.to_dict()


def test_a_quarantined_name_never_reaches_a_caller_who_may_not_read_it(
        tmp_path: Path) -> None:
    store, config, _ = degraded_store(tmp_path)
    result = Engine(store, config).ask("user:alice", QUESTION)
    shown = json.dumps(result.to_dict())
    assert "board-minutes" not in shown and "layoffs" not in shown
    entry = store.get_ledger(config.tenant, result.ledger_record_id)
    assert entry is not None
    alice = redact_for(entry, reader(store, config, "user:alice"), store)["record"]
    assert alice["boundary"]["annotations"] == [DEGRADED_BOUNDARY]
    assert alice["boundary"]["excluded"] == [] and alice["boundary"]["degraded"] is True
    assert "board-minutes" not in json.dumps(alice) and "layoffs" not in json.dumps(alice)
    # Carol reads the board's whole document: its path; a file never stored has no label,
    # so its name stays withheld from every reader of the record, count and all.
    carol = redact_for(entry, reader(store, config, "user:carol"), store)["record"]
    assert carol["boundary"]["excluded"] == ["board-minutes.txt"]


def test_a_record_names_its_serving_run_and_which_vectors_lie_inside_the_control_limit(
        tmp_path: Path) -> None:
    config = settings()
    store = SQLiteStore(tmp_path / "clean.db")
    summary = Ingestor(store, config).run([StaticSource(corpus())])
    approve_all(store, config.tenant)
    result = Engine(store, config).ask("user:bob", QUESTION)
    record = logged(store, config.tenant, result)
    assert record["boundary"]["run_id"] == summary.run_id
    assert record["boundary"]["degraded"] is False and record["boundary"]["excluded"] == []
    assert all("annotations" not in c for c in record["claims"])
    plaus = record["plausibility"]
    assert plaus["digest"] == summary.boundary["digest"] == record["boundary"]["digest"]
    assert plaus["matches_serving_run"] is True
    limit = plaus["control_limit"]
    assert limit["confidence"] == 0.99
    assert limit["ucl"] == pytest.approx(math.sqrt(chi2.ppf(0.99, limit["degrees_of_freedom"])),
                                         rel=1e-12)
    kept = record["gates"][-1]["kept"]
    assert kept and set(plaus["evidence_inside"]) == set(kept) == set(plaus["evidence"])
    for chunk_id, inside in plaus["evidence_inside"].items():
        assert inside == (plaus["evidence"][chunk_id] <= limit["ucl"])
    assert plaus["query_inside"] == (plaus["query"] <= limit["ucl"])
    # The run's own record holds the limit it locked.
    assert summary.boundary["control_limit"] == limit


def test_a_question_far_from_the_corpus_is_recorded_outside_the_limit(tmp_path: Path) -> None:
    config = settings().replace(vectors=VectorSettings(backend="hash", dimensions=32,
                                                       boundary_confidence=0.5))
    store = SQLiteStore(tmp_path / "far.db")
    Ingestor(store, config).run([StaticSource(corpus())])
    approve_all(store, config.tenant)
    far = "hotel " + " ".join(f"zq{i}xv" for i in range(60))
    record = logged(store, config.tenant, Engine(store, config).ask("user:bob", far))
    plaus = record["plausibility"]
    assert plaus["control_limit"]["confidence"] == 0.5
    assert plaus["query"] > plaus["control_limit"]["ucl"] and plaus["query_inside"] is False


def test_the_annotation_ends_with_the_first_run_that_leaves_nothing_out(
        tmp_path: Path) -> None:
    store, config, degraded_run = degraded_store(tmp_path)
    # A reviewer's release lets a document in at the next run, not before.
    assert store.release_quarantine(config.tenant, degraded_run, "layoffs-plan-2027.txt",
                                    by="user:reviewer", at=datetime.now(UTC).isoformat())
    record = logged(store, config.tenant, Engine(store, config).ask("user:alice", QUESTION))
    assert "layoffs-plan-2027.txt" in record["boundary"]["excluded"]
    clean = Ingestor(store, config).run([StaticSource(corpus())])
    assert clean.status == "COMPLETED"
    result = Engine(store, config).ask("user:alice", QUESTION)
    record = logged(store, config.tenant, result)
    assert record["boundary"]["run_id"] == clean.run_id
    assert record["boundary"]["degraded"] is False and record["boundary"]["annotations"] == []
    assert result.claims and all("annotations" not in c for c in result.claims)


def test_a_record_written_before_the_boundary_entry_still_verifies_and_reads(
        tmp_path: Path) -> None:
    store, config, _ = degraded_store(tmp_path)
    older = {"request_id": "req-older", "query": QUESTION, "principal": "user:alice",
             "role": "operator", "output_state": "REQUIRES_SPEC", "answer": "",
             "citations": [], "reasons": ["NO_EVIDENCE"], "claims": [],
             "plausibility": {"available": False, "reason": "no vector backend configured"}}
    entry = LedgerWriter(store).append(config.tenant, "req-older", older)
    newer = Engine(store, config).ask("user:alice", QUESTION)
    assert verify_chain(store.iter_ledger(config.tenant), tenant=config.tenant).ok
    view = redact_for(entry, reader(store, config, "user:alice"), store)["record"]
    assert "boundary" not in view and view["plausibility"]["available"] is False
    assert logged(store, config.tenant, newer)["boundary"]["degraded"] is True
