"""SIRE lifecycle on a real store, and a purge by the exclusion gate shown in the ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.config.settings import Settings, SireSettings
from affidavit.engine.query import Engine
from affidavit.errors import InputRejected, NotFound
from affidavit.identity.lifecycle import approve_sire, approve_sires
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

NOW = "2026-01-01T00:00:00+00:00"
POLICY = """---
title: Access Control Policy
oracle_id: SOC 2 Trust Services Criteria
frameworks: ["SOC 2"]
acl: ["*"]
classification: PUBLIC
---
# Access Control Policy

## Reviews

Access reviews of privileged accounts happen every quarter under SOC 2.

## Cardholder data

Cardholder data systems follow PCI DSS segmentation and quarterly access reviews.
"""
SETTINGS = Settings(sire=SireSettings(default_excludes=("hipaa", "pci dss", "soc 2")))


def ingest(root: Path, store: SQLiteStore) -> None:
    Ingestor(store, SETTINGS).run([LocalFolderSource(root, max_document_bytes=1 << 20)])


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, SQLiteStore]:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "access.md").write_text(POLICY, encoding="utf-8")
    store = SQLiteStore(tmp_path / "sire.db")
    ingest(root, store)
    return root, store


def test_proposal_never_excludes_its_own_identity(corpus: tuple) -> None:
    _, store = corpus
    (record,) = store.list_sire("default")
    assert record.state == "PROPOSED"
    assert record.sire.subject == "soc_2_trust_services_criteria"
    assert record.sire.excluded == ("hipaa", "pci dss")  # "soc 2" is its own identity


def test_approval_records_who_and_when_and_leaves_the_tuple_unchanged(corpus: tuple) -> None:
    _, store = corpus
    (proposed,) = store.list_sire("default")
    with pytest.raises(InputRejected) as info:
        approve_sire(store, "default", proposed.sire_id, by="  ", at=NOW)
    assert info.value.reason_code == "APPROVER_REQUIRED"
    active = approve_sire(store, "default", proposed.sire_id, by="user:curator", at=NOW)
    assert (active.state, active.approved_by, active.approved_at) == ("ACTIVE", "user:curator",
                                                                     NOW)
    assert active.sire == proposed.sire
    again = approve_sire(store, "default", proposed.sire_id, by="user:other", at="later")
    assert again.approved_by == "user:curator", "approving twice changes nothing"


def test_a_self_excluding_tuple_is_rejected_at_approval_with_a_reason(corpus: tuple) -> None:
    _, store = corpus
    (proposed,) = store.list_sire("default")
    edited = {**proposed.sire.to_dict(), "excluded": ["hipaa", "SOC 2"]}
    # A tuple written by an older algorithm, or edited in the database: approval re-checks.
    with store._write() as conn:
        conn.execute("UPDATE sire SET tuple_json = ? WHERE sire_id = ?",
                     (json.dumps(edited), proposed.sire_id))
    with pytest.raises(InputRejected) as info:
        approve_sire(store, "default", proposed.sire_id, by="user:curator", at=NOW)
    assert info.value.reason_code == "SIRE_SELF_EXCLUSION"
    assert "SOC 2" in str(info.value)
    (after,) = store.list_sire("default")
    assert (after.state, after.approved_by) == ("PROPOSED", None)


def test_a_new_version_with_the_same_proposal_keeps_its_approval(corpus: tuple) -> None:
    root, store = corpus
    (first,) = store.list_sire("default")
    approve_sire(store, "default", first.sire_id, by="user:curator", at=NOW)
    (root / "access.md").write_text(POLICY.replace("every quarter", "every month"),
                                    encoding="utf-8")
    ingest(root, store)
    (second,) = store.list_sire("default")
    assert second.version_id != first.version_id and second.sire == first.sire
    assert (second.state, second.approved_by) == ("ACTIVE", "user:curator")


def test_a_new_version_with_another_proposal_needs_its_own_approval(corpus: tuple) -> None:
    root, store = corpus
    (first,) = store.list_sire("default")
    approve_sire(store, "default", first.sire_id, by="user:curator", at=NOW)
    (root / "access.md").write_text(
        POLICY + "\nThe Vault Review Board and the Vault Review Board chair sign every Vault "
        "Review Board exception.\n", encoding="utf-8")
    ingest(root, store)
    (second,) = store.list_sire("default")
    assert second.version_id != first.version_id and second.state == "PROPOSED"
    old = [r for r in store.list_sire("default", head_only=False) if r.sire_id == first.sire_id]
    assert old[0].state == "ACTIVE" and not old[0].is_head
    result = Engine(store, SETTINGS).ask("user:anyone", "How often are access reviews done?")
    entry = store.get_ledger("default", result.ledger_record_id)
    assert entry is not None and "NO_ACTIVE_SIRE" in entry.payload
    assert result.citations == []


def test_a_purge_by_the_exclusion_gate_is_in_the_ledger(corpus: tuple) -> None:
    _, store = corpus
    (record,) = store.list_sire("default")
    approve_sire(store, "default", record.sire_id, by="user:curator", at=NOW)
    engine = Engine(store, SETTINGS)
    hits = engine.search("user:anyone", "cardholder data PCI DSS segmentation", limit=10)
    excluded = [h.chunk_id for h in hits if "PCI DSS" in h.text]
    assert excluded, "authorization admits the chunk: search shows it"
    result = engine.ask("user:anyone", "What applies to cardholder data systems?")
    assert all(c["chunk_id"] not in excluded for c in result.citations)
    payload = json.loads(store.get_ledger("default", result.ledger_record_id).payload)
    sire_gate = next(g for g in payload["gates"] if g["gate"] == "sire")
    purged = {d["chunk_id"]: d["reason"] for d in sire_gate["dropped"]}
    assert purged[excluded[0]] == "SIRE_EXCLUDED:pci dss"
    logged = payload["sire"][record.version_id]
    assert logged["subject"] == "soc_2_trust_services_criteria"
    assert "soc 2" not in logged["excluded"]


def many_documents(root: Path, n: int) -> None:
    root.mkdir(exist_ok=True)
    for i in range(n):
        (root / f"policy-{i:02d}.md").write_text(
            POLICY.replace("Access Control Policy", f"Access Control Policy {i}")
            .replace("oracle_id: SOC 2 Trust Services Criteria", f"oracle_id: Policy {i}"),
            encoding="utf-8")


def test_bulk_approval_is_one_pass_and_records_the_approver(tmp_path: Path) -> None:
    root = tmp_path / "many"
    many_documents(root, 12)
    store = SQLiteStore(tmp_path / "many.db")
    ingest(root, store)
    ids = [r.sire_id for r in store.list_sire("default", state="PROPOSED")]
    assert len(ids) == 12
    sire_reads: list[str] = []
    read = store._read

    def counting_read(sql: str, params: object = ()) -> list[tuple[object, ...]]:
        if "FROM sire s JOIN versions" in sql:
            sire_reads.append(sql)
        return read(sql, params)  # type: ignore[arg-type]

    store._read = counting_read  # type: ignore[method-assign]
    approvals = approve_sires(store, "default", ids, by="user:curator", at=NOW, batch_size=5)
    del store._read
    # One read of every record, then one read back per batch of 5: never one read per id.
    assert len(sire_reads) == 1 + 3
    assert [a.sire_id for a in approvals] == ids
    assert all(a.refused is None and a.record is not None for a in approvals)
    for record in store.list_sire("default"):
        assert (record.state, record.approved_by, record.approved_at) == (
            "ACTIVE", "user:curator", NOW)


def test_bulk_approval_refuses_each_bad_id_alone(corpus: tuple, tmp_path: Path) -> None:
    root, store = corpus
    many_documents(root, 2)
    ingest(root, store)
    records = {r.alias: r for r in store.list_sire("default")}
    first, bad, good = (records["access.md"], records["policy-00.md"], records["policy-01.md"])
    approve_sire(store, "default", first.sire_id, by="user:first", at=NOW)
    edited = {**bad.sire.to_dict(), "excluded": ["Policy 0"]}
    with store._write() as conn:
        conn.execute("UPDATE sire SET tuple_json = ? WHERE sire_id = ?",
                     (json.dumps(edited), bad.sire_id))
    approvals = approve_sires(
        store, "default", [first.sire_id, "sire-unknown", bad.sire_id, good.sire_id,
                           good.sire_id], by="user:second", at="later")
    outcome = {a.sire_id: a for a in approvals}
    assert len(approvals) == 4, "a repeated id is approved once"
    assert outcome[first.sire_id].record.approved_by == "user:first"  # type: ignore[union-attr]
    assert isinstance(outcome["sire-unknown"].refused, NotFound)
    refused = outcome[bad.sire_id].refused
    assert isinstance(refused, InputRejected) and refused.reason_code == "SIRE_SELF_EXCLUSION"
    assert outcome[good.sire_id].record.approved_by == "user:second"  # type: ignore[union-attr]
    states = {r.sire_id: (r.state, r.approved_by) for r in store.list_sire("default")}
    assert states[bad.sire_id] == ("PROPOSED", None)
    assert states[good.sire_id] == ("ACTIVE", "user:second")
    with pytest.raises(InputRejected):
        approve_sires(store, "default", [good.sire_id], by=" ", at=NOW)
