"""Subject grouping and the boundary compliance score (spec 003 §6.1), on worked examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.records import SireTuple
from affidavit.retrieval.compliance import (
    COMPLIANT,
    DEGRADED,
    FROM_QUESTION,
    FROM_RANKING,
    FROM_SCOPE,
    NON_COMPLIANT,
    EvidenceSubject,
    boundary_compliance,
    expected_from_question,
    group_by_subject,
    names_subject,
    score_query,
)
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

SOC2 = SireTuple("soc_2_trust_services_criteria", ("access control", "availability"),
                 ("iso 27001",), ("hipaa",))
ISO = SireTuple("iso_27001", ("risk treatment", "access control"), ("soc 2",), ())
HR = SireTuple("family_leave_policy", ("parental leave",), ("payroll",), ())


def item(chunk: str, sire: SireTuple, score: float) -> EvidenceSubject:
    return EvidenceSubject(chunk, sire.subject, sire.relevant, score)


def test_groups_rank_by_mean_score_and_keep_evidence_order() -> None:
    evidence = [item("c1", SOC2, 3.0), item("c2", ISO, 5.0), item("c3", SOC2, 1.0),
                item("c4", HR, 2.0)]
    groups = group_by_subject(evidence)
    assert [(g.subject, g.chunk_ids, g.mean_score) for g in groups] == [
        ("iso_27001", ("c2",), 5.0),
        ("family_leave_policy", ("c4",), 2.0),
        ("soc_2_trust_services_criteria", ("c1", "c3"), 2.0),  # ties: subject A-Z
    ]


def test_all_evidence_from_expected_subjects_is_fully_compliant() -> None:
    result = boundary_compliance([item("c1", SOC2, 2.0), item("c2", SOC2, 1.0)],
                                 {SOC2.subject})
    assert (result.score, result.status) == (1.0, COMPLIANT)
    assert result.in_scope == ("c1", "c2") and result.outside == ()


def test_cross_subject_evidence_through_relevant_is_degraded() -> None:
    # ISO's Relevant names SOC 2 (one hop): 3 of 4 chunks in scope -> 0.5 + 0.49 * 3/4.
    evidence = [item("c1", SOC2, 4.0), item("c2", SOC2, 3.0), item("c3", ISO, 2.0),
                item("c4", SOC2, 1.0)]
    result = boundary_compliance(evidence, {SOC2.subject})
    assert (result.score, result.status) == (0.8675, DEGRADED)
    assert result.linked == ("c3",)


def test_links_work_in_both_directions() -> None:
    # The expected source's own Relevant names the other subject.
    other = SireTuple("payroll", (), (), ())
    result = boundary_compliance([item("c1", HR, 1.0), item("c2", other, 1.0)],
                                 {HR.subject}, relevant_of={HR.subject: HR.relevant})
    assert result.status == DEGRADED and result.linked == ("c2",)
    alone = boundary_compliance([item("c1", HR, 1.0), item("c2", other, 1.0)], {HR.subject})
    assert alone.status == NON_COMPLIANT


def test_unlinked_evidence_is_non_compliant() -> None:
    # in scope 1, linked 1, outside 2 -> 0.49 * (1 + 0.5) / 4
    evidence = [item("c1", SOC2, 4.0), item("c2", ISO, 3.0), item("c3", HR, 2.0),
                item("c4", HR, 1.0)]
    result = boundary_compliance(evidence, {SOC2.subject})
    assert (result.score, result.status) == (round(0.49 * 1.5 / 4, 4), NON_COMPLIANT)
    assert result.outside == ("c3", "c4")


def test_no_evidence_is_insufficient_coverage() -> None:
    result = boundary_compliance([], {SOC2.subject})
    assert (result.score, result.status, result.uncovered) == (0.0, NON_COMPLIANT,
                                                               (SOC2.subject,))


def test_names_subject() -> None:
    assert names_subject("SOC 2", "soc_2_trust_services_criteria")
    assert names_subject("ISO 27001 Annex A controls", "iso_27001")
    assert not names_subject("soc", "iso_27001")
    assert not names_subject("...", "iso_27001")


def test_expected_subjects_from_the_question() -> None:
    sires = [SOC2, ISO, HR]
    # Naming the subject outranks matching Included terms.
    assert expected_from_question("What does ISO 27001 say about access control?",
                                  sires) == {"iso_27001"}
    # Only Included terms: the most matches win, ties keep both.
    assert expected_from_question("access control and availability", sires) == {SOC2.subject}
    assert expected_from_question("access control", sires) == {SOC2.subject, ISO.subject}
    assert expected_from_question("the canteen menu", sires) == frozenset()


def test_score_query_takes_scope_then_question_then_ranking() -> None:
    evidence = [item("c1", HR, 9.0), item("c2", SOC2, 1.0)]
    scoped = score_query("access control", evidence, [SOC2, HR], scope=[HR.subject])
    assert scoped.expected_from == FROM_SCOPE and scoped.expected == (HR.subject,)
    asked = score_query("access control", evidence, [SOC2, HR])
    assert asked.expected_from == FROM_QUESTION and asked.expected == (SOC2.subject,)
    ranked = score_query("the canteen menu", evidence, [SOC2, HR])
    assert ranked.expected_from == FROM_RANKING and ranked.expected == (HR.subject,)
    assert ranked.to_dict()["groups"][0]["subject"] == HR.subject


_SIRES = st.sampled_from([SOC2, ISO, HR, SireTuple("x", (), (), ())])


@given(st.lists(st.tuples(_SIRES, st.floats(0, 10)), max_size=12),
       st.sets(st.sampled_from([SOC2.subject, ISO.subject, HR.subject]), max_size=2))
def test_bands_never_overlap(pairs: list[tuple[SireTuple, float]], expected: set[str]) -> None:
    evidence = [item(f"c{i}", sire, score) for i, (sire, score) in enumerate(pairs)]
    result = boundary_compliance(evidence, expected)
    band = {COMPLIANT: (1.0, 1.0), DEGRADED: (0.5, 0.99), NON_COMPLIANT: (0.0, 0.49)}
    low, high = band[result.status]
    assert low <= result.score <= high
    assert len(result.in_scope) + len(result.linked) + len(result.outside) == len(evidence)


@pytest.mark.parametrize("scope", [None, ["iso_27001"]])
def test_the_record_is_plain_json(scope: list[str] | None) -> None:
    result = score_query("access control", [item("c1", SOC2, 1.0)], [SOC2, ISO], scope=scope)
    assert json.loads(json.dumps(result.to_dict())) == result.to_dict()


def test_every_answer_records_its_compliance_in_the_ledger(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    for name, oracle in (("soc2.md", "SOC 2"), ("iso.md", "ISO 27001")):
        (root / name).write_text(
            f"---\noracle_id: {oracle}\nacl: [\"*\"]\nclassification: PUBLIC\n---\n"
            f"# {oracle} controls\n\nAccess reviews under {oracle} happen every quarter.\n",
            encoding="utf-8")
    store = SQLiteStore(tmp_path / "compliance.db")
    Ingestor(store, Settings()).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    for record in store.list_sire("default", state="PROPOSED"):
        approve_sire(store, "default", record.sire_id, by="user:curator", at="2026-01-01")
    result = Engine(store, Settings()).ask("user:a", "How often are SOC 2 access reviews?")
    entry = store.get_ledger("default", result.ledger_record_id)
    assert entry is not None
    compliance = json.loads(entry.payload)["compliance"]
    assert compliance["expected"] == ["soc_2"] and compliance["expected_from"] == "question"
    assert compliance["status"] in (COMPLIANT, DEGRADED, NON_COMPLIANT)
    assert {g["subject"] for g in compliance["groups"]} <= {"soc_2", "iso_27001"}
    store.close()
