"""Recorded human decisions bind to the content they decided, for the decisions that gate
what is served: a SIRE approval binds to the proposal it approved (not to the document or
its version), a drift release to the bytes it released (not to the path). Real SQLite,
real ingestion through the CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from affidavit.cli.main import main

SETTINGS = ('[store]\ndb = "aff.db"\n\n[acl]\ndefault = ["user:rita"]\n\n'
            '[grants]\n"user:rita" = ["INTERNAL"]\n')


def _cli(root: Path, capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> Any:
    capsys.readouterr()
    assert main([*args, "--config", str(root / "affidavit.toml")]) == code
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in args else out


def _ingest(root: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    main(["ingest", str(root / "corpus"), "--json", "--config", str(root / "affidavit.toml")])
    return json.loads(capsys.readouterr().out)


def _write(root: Path, text: str) -> None:
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    (root / "corpus" / "berths.md").write_text(text, encoding="utf-8")
    (root / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")


def _sire(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    records = _cli(root, capsys, "sire", "list", "--json")
    assert len(records) == 1
    record: dict[str, Any] = records[0]
    return record


def test_sire_approval_binds_to_the_proposal_it_approved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "work"
    _write(root, "---\ntitle: Berth rules\n---\n# Berths\n\nShips moor at berth four.\n")
    _ingest(root, capsys)
    _cli(root, capsys, "sire", "approve", "--all", "--by", "user:curator")
    approved = _sire(root, capsys)
    assert approved["state"] == "ACTIVE"
    # An edit that leaves the proposal the same keeps the decision: it is about the tuple.
    _write(root, "---\ntitle: Berth rules\n---\n# Berths\n\nShips moor at berth five.\n")
    _ingest(root, capsys)
    kept = _sire(root, capsys)
    assert kept["sire_id"] != approved["sire_id"]
    assert (kept["state"], kept["approved_by"]) == ("ACTIVE", "user:curator")
    # A different proposal was never approved: it waits for a reviewer.
    _write(root, "---\ntitle: Anchorage rules\n---\n# Berths\n\nShips moor at berth five.\n")
    _ingest(root, capsys)
    changed = _sire(root, capsys)
    assert (changed["state"], changed["approved_by"]) == ("PROPOSED", None)
    assert changed["proposal_diff"] is not None


def _headed(count: int, tail: str = "") -> str:
    return "".join(f"# Part {i}\n\nBerth {i} takes ships up to {i}00 tonnes.\n\n"
                   for i in range(count)) + tail


def test_drift_release_binds_to_the_bytes_it_released(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "work"
    _write(root, _headed(6))
    _ingest(root, capsys)
    released_bytes = "# Part 0\n\n" + _headed(6).replace("# Part ", "Part ")
    _write(root, released_bytes)
    first = _ingest(root, capsys)
    drift = [q for q in first["quarantined"] if q["reason_code"] == "DRIFT"]
    assert len(drift) == 1
    _cli(root, capsys, "quarantine", "release", first["run_id"], "berths.md",
         "--by", "user:reviewer")
    # Other bytes at the same path, drifted as much, are not what was released.
    _write(root, released_bytes + "One more line.\n")
    other = _ingest(root, capsys)
    assert [q["reason_code"] for q in other["quarantined"]] == ["DRIFT"]
    # The released bytes themselves are let in.
    _write(root, released_bytes)
    again = _ingest(root, capsys)
    assert again["quarantined"] == [] and again["ingested"] == 1


POLICY = ("---\nsource_id: policy-7\ntitle: Travel policy\n---\n# Travel\n\n"
          "Short flights are booked in economy class.\n")


def _ask(root: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    # An FAQ entry answers only from sources with an ACTIVE SIRE (approved as they are).
    main(["sire", "approve", "--all", "--by", "tester", "--config",
          str(root / "affidavit.toml")])
    capsys.readouterr()  # a refusal exits non-zero; its reasons are what is asserted
    main(["ask", "Which class applies to short flights?", "--as", "user:rita", "--json",
          "--config", str(root / "affidavit.toml")])
    reasons: list[str] = json.loads(capsys.readouterr().out)["reasons"]
    return reasons


def test_faq_entry_binds_to_the_content_of_the_sources_it_was_vetted_against(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "work"
    _write(root, POLICY)
    vetted = hashlib.sha256(POLICY.encode()).hexdigest()
    faq = root / "faq.toml"
    entry = ('[[entries]]\nquestion = "Which class applies to short flights?"\n'
             'answer = "Economy class."\nsources = ["policy-7"]\n')
    faq.write_text(entry + f'vetted_against = {{ "policy-7" = "{vetted}" }}\n',
                   encoding="utf-8")
    (root / "affidavit.toml").write_text(
        SETTINGS + f'\n[answer]\nfaq_file = {json.dumps(str(faq))}\n', encoding="utf-8")
    _ingest(root, capsys)
    assert _ask(root, capsys)[0] == "FAQ_SHORT_CIRCUIT"
    # The source changed: the answer was vetted against other text, and is not served.
    (root / "corpus" / "berths.md").write_text(
        POLICY.replace("economy", "business"), encoding="utf-8")
    _ingest(root, capsys)
    assert "FAQ_SHORT_CIRCUIT" not in _ask(root, capsys)
    # An entry bound to nothing (vetted before bindings) is not served either.
    faq.write_text(entry, encoding="utf-8")
    (root / "corpus" / "berths.md").write_text(POLICY, encoding="utf-8")
    _ingest(root, capsys)
    assert "FAQ_SHORT_CIRCUIT" not in _ask(root, capsys)
