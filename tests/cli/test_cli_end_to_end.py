"""The foundation path, end to end through the `affidavit` command."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.e2e.conftest import EXAMPLES, Run, as_json

HOTEL = "What is the nightly hotel limit for business travel?"
REVENUE = "What was total revenue in Q3 2024?"


def test_ask_prints_the_governed_answer_object(example_workspace: Run) -> None:
    code, out, _ = example_workspace("ask", HOTEL, "--as", "user:sam.reed", "--json")
    assert code == 0
    answer = as_json(out)
    for key in ("request_id", "output_state", "answer", "claims", "citations",
                "ledger_record_hash"):
        assert key in answer
    assert answer["output_state"] == "AUTHORIZED"
    assert "[src:" in answer["answer"]
    assert answer["citations"], "an authorized answer cites its evidence"
    for citation in answer["citations"]:
        assert set(citation) >= {"src", "doc_id", "chunk_id", "title", "locator"}
    for claim in answer["claims"]:
        assert set(claim) >= {"text", "status", "citations"}
    assert any("Travel" in c["title"] for c in answer["citations"])


def test_a_principal_without_access_cites_none_of_the_hidden_documents(
        example_workspace: Run) -> None:
    finance = as_json(example_workspace("ask", REVENUE, "--as", "user:farid.nasser",
                                        "--json")[1])
    staff = as_json(example_workspace("ask", REVENUE, "--as", "user:sam.reed", "--json")[1])
    finance_docs = {c["doc_id"] for c in finance["citations"]}
    assert any("Financial Report" in c["title"] for c in finance["citations"])
    assert "186.4" in finance["answer"]
    assert not finance_docs & {c["doc_id"] for c in staff["citations"]}
    assert "186.4" not in staff["answer"]


def test_ledger_verify_passes_then_fails_after_one_changed_byte(
        example_workspace: Run, tmp_path: Path) -> None:
    example_workspace("ask", HOTEL, "--as", "user:sam.reed")
    second = as_json(example_workspace("ask", REVENUE, "--as", "user:farid.nasser", "--json")[1])
    example_workspace("ask", HOTEL, "--as", "user:helen.park")
    code, out, _ = example_workspace("ledger", "verify")
    assert code == 0 and "3 records verified" in out
    db = sqlite3.connect(tmp_path / ".affidavit" / "affidavit.db")
    db.execute("DROP TRIGGER ledger_no_update")  # an attacker with the file has no triggers
    payload = db.execute("SELECT payload FROM ledger WHERE record_id = ?",
                         (second["ledger_record_id"],)).fetchone()[0]
    db.execute("UPDATE ledger SET payload = ? WHERE record_id = ?",
               (payload.replace("186.4", "186.5", 1), second["ledger_record_id"]))
    db.commit()
    db.close()
    code, out, _ = example_workspace("ledger", "verify")
    assert code != 0
    assert second["ledger_record_id"] in out and "seq 2" in out


def test_ingesting_twice_changes_nothing(example_workspace: Run, tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / ".affidavit" / "affidavit.db")
    before = db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    code, out, _ = example_workspace("ingest", str(EXAMPLES / "corpus"), "--json")
    summary = as_json(out)
    assert code == 0
    assert summary["ingested"] == 0 and summary["unchanged"] > 20
    assert db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == before
    db.close()


def test_search_json_hits_and_restricted_is_findable_by_the_board(
        example_workspace: Run) -> None:
    hits = as_json(example_workspace("search", "Project Lighthouse", "--as", "user:grace.liu",
                                     "--json")[1])
    assert hits and hits[0]["label"] == "RESTRICTED"
    for hit in hits:
        assert set(hit) >= {"chunk_id", "doc_id", "title", "text", "label", "score", "locator"}
    staff = as_json(example_workspace("search", "Project Lighthouse", "--as", "user:sam.reed",
                                      "--json")[1])
    assert all(h["label"] != "RESTRICTED" for h in staff)
    assert all("Lighthouse" not in h["text"] for h in staff)


@pytest.mark.invariant
def test_invariant_fail_closed_without_principal_on_every_read_command(
        example_workspace: Run) -> None:
    for command in (["search", "hotel"], ["ask", HOTEL], ["ledger", "show", "x"]):
        with pytest.raises(SystemExit) as info:
            example_workspace(*command)
        assert info.value.code == 2
        code, _, err = example_workspace(*command, "--as", "alice")
        assert code == 2 and "principal" in err


def test_ledger_show_withholds_what_the_caller_may_not_read(example_workspace: Run) -> None:
    record = as_json(example_workspace("ask", REVENUE, "--as", "user:farid.nasser",
                                       "--json")[1])
    own = as_json(example_workspace("ledger", "show", record["ledger_record_id"], "--as",
                                    "user:farid.nasser", "--json")[1])
    assert "186.4" in own["record"]["answer"]
    # Someone else's record reads exactly like an id that was never issued.
    other = example_workspace("ledger", "show", record["ledger_record_id"], "--as",
                              "user:sam.reed", "--json")
    never = example_workspace("ledger", "show", "led-00000000000000000000", "--as",
                              "user:sam.reed", "--json")
    assert other[0] == never[0] == 1 and other[1] == never[1] == ""
    assert "186.4" not in other[2]


def test_authz_changes_take_effect_on_the_next_request(example_workspace: Run) -> None:
    def staff_answer() -> str:
        return str(as_json(example_workspace("ask", REVENUE, "--as", "user:sam.reed",
                                             "--json")[1])["answer"])

    assert "186.4" not in staff_answer()
    assert example_workspace("authz", "grant", "user:sam.reed", "FINANCIAL")[0] == 0
    assert "186.4" not in staff_answer()  # a label grant alone does not meet the ACL
    assert example_workspace("authz", "add", "group:finance#member@user:sam.reed")[0] == 0
    assert "186.4" in staff_answer()
    assert example_workspace("authz", "remove", "group:finance#member@user:sam.reed")[0] == 0
    assert "186.4" not in staff_answer()


def test_out_of_scope_entity_is_refused_before_retrieval(example_workspace: Run) -> None:
    answer = as_json(example_workspace("ask", "What are Northwind's mortgage rates?", "--as",
                                       "user:sam.reed", "--json")[1])
    assert answer["output_state"] == "BLOCKED"
    assert answer["citations"] == []
    assert any(r.startswith("OUT_OF_SCOPE_ENTITY") for r in answer["reasons"])


def test_faq_short_circuit_only_for_callers_who_may_read_its_sources(
        example_workspace: Run, tmp_path: Path) -> None:
    # The entry binds to the bytes of the source it was vetted against.
    vetted = hashlib.sha256((EXAMPLES / "corpus" / "policies" /
                             "travel-and-expenses-policy.md").read_bytes()).hexdigest()
    (tmp_path / "faq.toml").write_text(
        '[[entries]]\nquestion = "What is the nightly hotel limit in London?"\n'
        'answer = "The nightly hotel limit in London is GBP 185."\n'
        f'sources = ["hm-pol-002"]\nvetted_against = {{ "hm-pol-002" = "{vetted}" }}\n',
        encoding="utf-8")
    with (tmp_path / "affidavit.toml").open("a", encoding="utf-8") as config:
        config.write('\n[answer]\nfaq_file = "faq.toml"\n')
    staff = as_json(example_workspace("ask", "what is the nightly hotel limit in London",
                                      "--as", "user:sam.reed", "--json")[1])
    # A vetted answer is verified against its source's current text like any answer, and
    # carries the source with its locator.
    assert staff["output_state"] == "AUTHORIZED", staff["reasons"]
    assert staff["reasons"][0] == "FAQ_SHORT_CIRCUIT"
    assert staff["answer"].startswith("The nightly hotel limit in London is GBP 185")
    assert [c["title"] for c in staff["citations"]] == ["Travel and Expenses Policy"]
    assert "4. Accommodation" in staff["citations"][0]["locator"]
    outsider = as_json(example_workspace("ask", "What is the nightly hotel limit in London?",
                                         "--as", "user:stranger", "--json")[1])
    assert outsider["reasons"] != ["FAQ_SHORT_CIRCUIT"] and "185" not in outsider["answer"]
