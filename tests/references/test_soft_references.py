"""Soft references: created only by a reader of both ends, carrying the most severe label of
both ends (their reason carrying its own), audited, and never shown to a reader of only one
end — on the library, the CLI and the service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.cli.main import main
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.errors import InputRejected, NotFound
from affidavit.records import REASON_WITHHELD
from affidavit.references.links import add_reference, list_references, search_references
from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from affidavit.store.protocol import Store
from tests.references.world import FINANCE_READER, PLAIN_READER, ingest, node_of, write_doc
from tests.service.conftest import running_service

REASON = "Lighthouse budget line 4471 explains the harbour pilot fees"


def _corpus(root: Path) -> None:
    write_doc(root, "harbour.md", "The harbour pilot guides ships at night.")
    write_doc(root, "budget.md", "Budget line 4471: pilot fees of 88000 euros.",
              label="FINANCIAL")
    write_doc(root, "tides.md", "Tide tables for the harbour are published weekly.")


def _world(tmp_path: Path) -> tuple[SQLiteStore, Engine]:
    root = tmp_path / "corpus"
    _corpus(root)
    store = SQLiteStore(tmp_path / "soft.db")
    ingest(store, root)
    return store, Engine(store, Settings())


def _cross_reference(store: Store, engine: Engine) -> str:
    from affidavit.policy.policy import SensitivityPolicy

    policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
    ref = add_reference(store, engine.authz_context(FINANCE_READER), policy,
                        source=node_of(store, "harbour.md"), target=node_of(store, "budget.md"),
                        kind="CrossReference", reason=REASON, actor=FINANCE_READER)
    return ref.ref_id


def test_cross_reference_to_financial_document_never_reaches_a_reader_without_financial(
        tmp_path: Path) -> None:
    store, engine = _world(tmp_path)
    try:
        ref_id = _cross_reference(store, engine)
        harbour = node_of(store, "harbour.md")
        finance, plain = (engine.authz_context(FINANCE_READER),
                          engine.authz_context(PLAIN_READER))
        seen_by_finance = list_references(store, finance, harbour)
        seen_by_plain = [list_references(store, plain, harbour, direction=d)
                         for d in ("in", "out", "both")]
        searched_by_plain = [search_references(store, plain, text)
                             for text in ("4471", "harbour", "pilot")]
        events = [e for e in store.iter_policy_events("default") if e.kind == "reference.add"]
    finally:
        store.close()
    assert [r.ref_id for r in seen_by_finance] == [ref_id]
    assert seen_by_finance[0].classification == "FINANCIAL"
    assert seen_by_plain == [[], [], []]
    assert searched_by_plain == [[], [], []]
    assert len(events) == 1 and events[0].actor == FINANCE_READER
    assert "4471" not in events[0].after_json, "the audit trail holds identifiers, not text"


def test_reference_creation_needs_both_ends_readable(tmp_path: Path) -> None:
    from affidavit.policy.policy import SensitivityPolicy

    store, engine = _world(tmp_path)
    try:
        policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
        with pytest.raises(NotFound):
            add_reference(store, engine.authz_context(PLAIN_READER), policy,
                          source=node_of(store, "harbour.md"),
                          target=node_of(store, "budget.md"), kind="BuildsOn",
                          reason="x", actor=PLAIN_READER)
        with pytest.raises(InputRejected):
            add_reference(store, engine.authz_context(FINANCE_READER), policy,
                          source=node_of(store, "harbour.md"),
                          target=node_of(store, "tides.md"), kind="Citation",
                          reason="x", actor=FINANCE_READER)
        events = [e for e in store.iter_policy_events("default") if e.kind == "reference.add"]
    finally:
        store.close()
    assert events == []


def test_reference_reason_text_carries_its_own_label(tmp_path: Path) -> None:
    """Two PUBLIC ends, a reason naming an e-mail address (PII by the detectors): the
    reason is PII, and a reader without PII sees the reference with its reason withheld."""
    from affidavit.policy.policy import SensitivityPolicy

    store, engine = _world(tmp_path)
    try:
        store.grant("default", FINANCE_READER, ["PII"], at="now")
        policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
        ref = add_reference(store, engine.authz_context(FINANCE_READER), policy,
                            source=node_of(store, "harbour.md"),
                            target=node_of(store, "tides.md"), kind="SupportedBy",
                            reason="ask pilot.jones@example.com for the tide tables",
                            actor=FINANCE_READER)
        plain = list_references(store, engine.authz_context(PLAIN_READER),
                                node_of(store, "tides.md"))
        fiona = list_references(store, engine.authz_context(FINANCE_READER),
                                node_of(store, "tides.md"))
    finally:
        store.close()
    assert ref.classification == "PUBLIC" and ref.text_label == "PII"
    assert [r.reason for r in plain] == [REASON_WITHHELD]
    assert [r.reason for r in fiona] == ["ask pilot.jones@example.com for the tide tables"]


def test_refs_cli_and_service_hide_the_financial_cross_reference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, _engine = _world(tmp_path)
    db = str(tmp_path / "soft.db")
    try:
        alice = issue_key(store, "default", PLAIN_READER).key
        fiona = issue_key(store, "default", FINANCE_READER).key
    finally:
        store.close()
    assert main(["refs", "add", "harbour.md", "budget.md", "--kind", "CrossReference",
                 "--reason", REASON, "--as", FINANCE_READER, "--db", db, "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    assert created[0]["classification"] == "FINANCIAL"
    outputs = []
    for argv in (["refs", "list", "harbour.md"], ["refs", "search", "4471"]):
        assert main([*argv, "--as", PLAIN_READER, "--db", db, "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
        assert main([*argv, "--as", FINANCE_READER, "--db", db, "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert [len(o) for o in outputs] == [0, 1, 0, 1]
    with running_service(Settings(), lambda: SQLiteStore(db)) as service:
        with service.client(alice) as client:
            listed = client.get("/v1/references", params={"document": "harbour.md"})
            found = client.get("/v1/references/search", params={"text": "4471"})
            refused = client.post("/v1/references", json={
                "source": "harbour.md", "target": "budget.md", "kind": "CrossReference",
                "reason": "guess"})
        with service.client(fiona) as client:
            listed_fiona = client.get("/v1/references", params={"document": "harbour.md"})
            created_fiona = client.post("/v1/references", json={
                "source": "tides.md", "target": "harbour.md", "kind": "BuildsOn",
                "reason": "tides decide when pilots sail"})
    assert listed.status_code == 200 and listed.json() == []
    assert found.status_code == 200 and found.json() == []
    assert refused.status_code == 404 and "4471" not in refused.text
    assert [r["classification"] for r in listed_fiona.json()] == ["FINANCIAL"]
    assert created_fiona.status_code == 201, created_fiona.text
    assert created_fiona.json()["created_by"] == FINANCE_READER
