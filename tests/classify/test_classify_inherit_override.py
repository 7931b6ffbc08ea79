"""Inherited labels from ``[sensitivity.inherit]`` and admin overrides: an override is the
only way to lower a detected label, recorded as a policy event with its actor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.cli.main import main

PII_LINE = "Write to the harbour master at master@example.com for berth changes."


def _write(root: Path) -> None:
    (root / "corpus" / "finance").mkdir(parents=True)
    (root / "corpus" / "finance" / "rates.md").write_text("# Rates\n\nBerth rates rise.\n")
    (root / "corpus" / "notes.md").write_text(f"# Notes\n\nThe pier opens at six.\n\n"
                                              f"{PII_LINE}\n")
    (root / "affidavit.toml").write_text(
        '[store]\ndb = "aff.db"\n\n[sensitivity.inherit]\n"finance/" = "FINANCIAL"\n')


def _sources(root: Path, doc: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(["labels", "sources", doc, "--config", str(root / "affidavit.toml"),
                 "--json"]) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return rows


def test_inherited_label_and_recorded_override_lower_only_by_an_admin(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "work"
    _write(root)
    config = ["--config", str(root / "affidavit.toml")]
    assert main(["ingest", str(root / "corpus"), *config, "--quiet"]) == 0
    capsys.readouterr()
    rates = _sources(root, "finance/rates.md", capsys)
    assert {r["label"] for r in rates} == {"FINANCIAL"}
    assert all("inherited" in r["sources"] for r in rates)  # type: ignore[operator]
    notes = _sources(root, "notes.md", capsys)
    pii = next(r for r in notes if r["label"] == "PII")
    assert pii["sources"] == ["detector"]
    assert main(["labels", "override", "notes.md", str(pii["paragraph"]), "INTERNAL",
                 "--reason", "a published desk address", "--by", "user:admin", *config]) == 0
    assert main(["ingest", str(root / "corpus"), *config, "--quiet"]) == 0
    capsys.readouterr()
    after = {r["paragraph"]: r for r in _sources(root, "notes.md", capsys)}
    assert after[pii["paragraph"]]["label"] == "INTERNAL"
    assert "override" in after[pii["paragraph"]]["sources"]  # type: ignore[operator]
    assert main(["audit", "list", *config, "--json"]) == 0
    events = [e for e in json.loads(capsys.readouterr().out) if e["kind"] == "label.override"]
    assert len(events) == 1 and events[0]["actor"] == "user:admin"
    assert events[0]["after"]["label"] == "INTERNAL"
    assert events[0]["before"]["label"] is None
