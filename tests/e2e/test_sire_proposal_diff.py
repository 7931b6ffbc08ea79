"""A changed proposal is PROPOSED with a diff against the approved one: ``sire list`` names
the terms it gained and lost, as the reader may see them. A term from a paragraph the
reader may not read is in no diff shown to that reader, and a term of a RESTRICTED
paragraph is in none at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import Run, as_json
from tests.e2e.test_requalify_scenario import GRANTS

CANARY = "QX7CANARYWHARF"
CONFIG = GRANTS + """
[sensitivity]
restricted_keywords = ["qx7canarywharf"]

[sensitivity.keywords]
CONFIDENTIAL = ["tender"]
"""
TRAVEL = "# Travel policy\n\nEconomy class applies to every flight under six hours.\n"
VISIBLE = ("\nQuayside Charter Flights and Quayside Charter Flights need the Quayside "
           "Charter Flights form.\n")
CONFIDENTIAL = ("\nThe tender names Harbour Pilot Services: Harbour Pilot Services and "
                "Harbour Pilot Services bid.\n")
RESTRICTED = (f"\nCode {CANARY} covers Wharf Canary Systems; Wharf Canary Systems and "
              "Wharf Canary Systems.\n")


def edited_workspace(run: Run, tmp_path: Path, before: str = TRAVEL,
                     after: str = TRAVEL + VISIBLE + CONFIDENTIAL + RESTRICTED) -> None:
    (tmp_path / "affidavit.toml").write_text(CONFIG, encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "travel.md").write_text(before, encoding="utf-8")
    assert run("init")[0] == 0
    assert run("ingest", str(corpus))[0] == 0
    assert run("sire", "approve", "--all", "--by", "user:curator")[0] == 0
    (corpus / "travel.md").write_text(after, encoding="utf-8")
    code, out, err = run("ingest", str(corpus))
    assert code == 0, out + err


def listed(run: Run, *args: str) -> tuple[dict[str, Any], str]:
    code, out, err = run("sire", "list", "--json", *args)
    assert code == 0, out + err
    text_code, text, _ = run("sire", "list", *args)
    assert text_code == 0
    [record] = as_json(out)
    return record, out + text


def added(record: dict[str, Any]) -> list[str]:
    diff = record["proposal_diff"]
    return [t for name in ("included", "relevant") for t in diff.get(name, {}).get("added", [])]


def test_a_changed_proposal_lists_its_diff_against_the_approved_one(
        run: Run, tmp_path: Path) -> None:
    edited_workspace(run, tmp_path)
    record, shown = listed(run)
    assert record["state"] == "PROPOSED"
    assert record["proposal_diff"]["against"] != record["sire_id"]
    assert any("quayside charter flights" in t for t in added(record))
    assert any("harbour pilot services" in t for t in added(record))
    assert "changed against" in shown


def test_a_diff_shows_a_reader_only_the_terms_of_paragraphs_it_may_read(
        run: Run, tmp_path: Path) -> None:
    edited_workspace(run, tmp_path)
    reader, reader_shown = listed(run, "--as", "user:reader")
    assert any("quayside charter flights" in t for t in added(reader))
    assert "harbour pilot" not in reader_shown.lower()
    board, _ = listed(run, "--as", "user:board")
    assert any("harbour pilot services" in t for t in added(board))


def test_a_term_the_reader_may_not_read_is_not_shown_as_removed_either(
        run: Run, tmp_path: Path) -> None:
    edited_workspace(run, tmp_path, before=TRAVEL + CONFIDENTIAL, after=TRAVEL + VISIBLE)
    reader, reader_shown = listed(run, "--as", "user:reader")
    assert reader["state"] == "PROPOSED" and "against" in reader["proposal_diff"]
    assert "harbour pilot" not in reader_shown.lower()
    board, _ = listed(run, "--as", "user:board")
    assert board["proposal_diff"]["relevant"]["removed"] == ["harbour pilot services"]


def test_no_diff_ever_carries_a_restricted_term(run: Run, tmp_path: Path) -> None:
    edited_workspace(run, tmp_path)
    for args in ((), ("--as", "user:board"), ("--as", "user:reader")):
        _, shown = listed(run, *args)
        assert CANARY.lower() not in shown.lower()
        assert "wharf canary" not in shown.lower()


def test_an_approved_or_unchanged_record_has_no_diff(run: Run, tmp_path: Path) -> None:
    edited_workspace(run, tmp_path)
    record, _ = listed(run)
    assert run("sire", "approve", record["sire_id"], "--by", "user:curator")[0] == 0
    approved, shown = listed(run)
    assert approved["state"] == "ACTIVE" and approved["proposal_diff"] is None
    assert "changed against" not in shown
