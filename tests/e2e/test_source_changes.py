"""Edits and deletions at the source reach the index; runs and quarantine are reviewable."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Run, as_json


def setup(run: Run, tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (tmp_path / "affidavit.toml").write_text('[acl]\ndefault = ["*"]\n[grants]\n"*" = '
                                             '["INTERNAL"]\n', encoding="utf-8")
    (corpus / "keep.md").write_text("# Keep\n\nThe harbour opens at dawn.\n", encoding="utf-8")
    (corpus / "edit.md").write_text("# Edit\n\nThe old tariff is seventeen florins.\n",
                                    encoding="utf-8")
    (corpus / "gone.md").write_text("# Gone\n\nThe lighthouse keeper retires.\n",
                                    encoding="utf-8")
    run("init")
    assert run("ingest", str(corpus))[0] == 0
    return corpus


def texts(run: Run, query: str) -> list[str]:
    return [h["text"] for h in as_json(run("search", query, "--as", "user:x", "--json")[1])]


def test_deleting_a_file_makes_it_unsearchable(run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    assert texts(run, "lighthouse keeper")
    (corpus / "gone.md").unlink()
    code, out, _ = run("ingest", str(corpus), "--json")
    assert code == 0 and as_json(out)["withdrawn"] == ["gone.md"]
    assert texts(run, "lighthouse keeper") == []
    assert texts(run, "harbour dawn")


def test_editing_a_file_serves_only_the_new_text(run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    (corpus / "edit.md").write_text("# Edit\n\nThe new tariff is nineteen florins.\n",
                                    encoding="utf-8")
    summary = as_json(run("ingest", str(corpus), "--json")[1])
    assert summary["ingested"] == 1 and summary["unchanged"] == 2
    assert texts(run, "seventeen") == []
    assert any("nineteen" in t for t in texts(run, "tariff florins"))
    assert not any("seventeen" in t for t in texts(run, "tariff florins"))


def test_a_partial_ingest_withdraws_nothing(run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    (corpus / "gone.md").unlink()
    assert as_json(run("ingest", str(corpus / "keep.md"), "--json")[1])["withdrawn"] == []
    assert as_json(run("ingest", str(corpus), "--partial", "--json")[1])["withdrawn"] == []
    assert texts(run, "lighthouse keeper")


def test_runs_and_quarantine_commands(run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    (corpus / "bad.md").write_bytes(b"\xff\xfe broken")
    code, out, _ = run("ingest", str(corpus), "--json")
    run_id = as_json(out)["run_id"]
    assert code == 3
    runs = as_json(run("runs", "list", "--json")[1])
    assert runs[0]["run_id"] == run_id and runs[0]["status"] == "DEGRADED"
    shown = as_json(run("runs", "show", run_id, "--json")[1])
    assert shown["quarantined"][0]["reason_code"] == "UNDECODABLE_TEXT"
    listed = as_json(run("quarantine", "list", "--json")[1])
    assert [q["alias"] for q in listed] == ["bad.md"]
    assert run("quarantine", "release", run_id, "bad.md", "--by", "reviewer")[0] == 0
    assert as_json(run("quarantine", "list", "--json")[1]) == []
    assert as_json(run("quarantine", "list", "--all", "--json")[1])[0]["released_by"] == "reviewer"
    assert run("quarantine", "release", run_id, "bad.md", "--by", "reviewer")[0] == 1
