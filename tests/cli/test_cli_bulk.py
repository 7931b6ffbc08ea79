"""Bulk review: ``quarantine release --all`` / ``--reason``, ``sire approve`` by filter, each
recorded with who did it; and ``--version``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.cli.main import main
from tests.e2e.conftest import Run, as_json


def _bad_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("# Good\n\nPlain words that are fine.\n")
    (corpus / "empty.md").write_text("")
    (corpus / "empty-too.md").write_text("")
    (corpus / "program.exe").write_bytes(b"MZ\x00\x01binary")
    (tmp_path / "affidavit.toml").write_text(
        '[acl]\ndefault = ["*"]\n[grants]\n"*" = ["INTERNAL"]\n')


def _unreleased(run: Run) -> dict[str, str]:
    entries = as_json(run("quarantine", "list", "--json")[1])
    return {e["alias"]: e["reason_code"] for e in entries}


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("affidavit 0.")


def test_release_by_reason_code_releases_only_those_and_records_who(
        run: Run, tmp_path: Path) -> None:
    _bad_corpus(tmp_path)
    assert run("ingest", "corpus", "--quiet")[0] == 3
    assert _unreleased(run) == {"empty.md": "EMPTY_DOCUMENT", "empty-too.md": "EMPTY_DOCUMENT",
                                "program.exe": "UNSUPPORTED_FORMAT"}
    code, out, _ = run("quarantine", "release", "--reason", "EMPTY_DOCUMENT", "--by", "Ann Ops",
                       "--json")
    assert code == 0
    assert sorted(r["alias"] for r in json.loads(out)["released"]) == ["empty-too.md",
                                                                        "empty.md"]
    assert _unreleased(run) == {"program.exe": "UNSUPPORTED_FORMAT"}
    every = as_json(run("quarantine", "list", "--all", "--json")[1])
    assert {e["alias"]: e["released_by"] for e in every} == {
        "empty.md": "Ann Ops", "empty-too.md": "Ann Ops", "program.exe": None}
    events = as_json(run("audit", "list", "--json")[1])
    releases = [e for e in events if "quarantine" in json.dumps(e).lower()]
    assert len(releases) == 2 and all(e["actor"] == "Ann Ops" for e in releases)


def test_release_all_releases_every_unreleased_entry(run: Run, tmp_path: Path) -> None:
    _bad_corpus(tmp_path)
    run("ingest", "corpus", "--quiet")
    code, out, _ = run("quarantine", "release", "--all", "--by", "Ann Ops")
    assert code == 0 and "released 3 entries" in out
    assert _unreleased(run) == {}
    code, out, _ = run("quarantine", "release", "--all", "--by", "Ann Ops")
    assert code == 0 and "released 0 entries" in out  # nothing left: nothing recorded


def test_release_needs_one_entry_or_a_filter(run: Run, tmp_path: Path) -> None:
    _bad_corpus(tmp_path)
    run("ingest", "corpus", "--quiet")
    assert run("quarantine", "release", "--by", "x")[0] == 2
    assert run("quarantine", "release", "run-x", "empty.md", "--all", "--by", "x")[0] == 2
    assert run("quarantine", "release", "run-x", "--by", "x")[0] == 2
    assert run("quarantine", "release", "run-x", "empty.md", "--by", "x")[0] == 1  # no such


def test_sire_approve_by_folder_and_by_glob(example_workspace_unapproved: Run) -> None:
    run = example_workspace_unapproved
    code, out, _ = run("sire", "approve", "--under", "policies", "--by", "Jane")
    assert code == 0 and "approved 6 of 6" in out
    records = as_json(run("sire", "list", "--json")[1])
    active = {r["alias"] for r in records if r["state"] == "ACTIVE"}
    assert active and all(a.startswith("policies/") for a in active)
    assert all(r["approved_by"] == "Jane" for r in records if r["state"] == "ACTIVE")
    code, out, _ = run("sire", "approve", "--match", "hr/*.md", "--by", "Kim")
    assert code == 0
    records = as_json(run("sire", "list", "--json")[1])
    assert {r["approved_by"] for r in records if r["alias"].startswith("hr/")} == {"Kim"}
    assert run("sire", "approve", "some-id", "--all", "--by", "x")[0] == 2
    assert run("sire", "approve", "--by", "x")[0] == 2


@pytest.fixture
def example_workspace_unapproved(run: Run) -> Run:
    assert run("init", "--example")[0] == 0
    assert run("ingest", "corpus", "--quiet")[0] == 0
    return run
