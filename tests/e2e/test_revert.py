"""Restoring a document's earlier bytes is an edit like any other: it supersedes the head."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Run, as_json

OLD = "---\nsource_id: tariffs\n---\n# Tariffs\n\nThe old tariff is seventeen florins.\n"
NEW = "---\nsource_id: tariffs\n---\n# Tariffs\n\nThe new tariff is nineteen florins.\n"


def texts(run: Run, query: str) -> list[str]:
    return [h["text"] for h in as_json(run("search", query, "--as", "user:x", "--json")[1])]


def ingest(run: Run, corpus: Path) -> dict[str, object]:
    code, out, err = run("ingest", str(corpus), "--json")
    assert code == 0, out + err
    summary: dict[str, object] = as_json(out)
    return summary


def test_a_revert_to_earlier_bytes_supersedes_like_any_edit(run: Run, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (tmp_path / "affidavit.toml").write_text('[acl]\ndefault = ["*"]\n[grants]\n"*" = '
                                             '["INTERNAL"]\n', encoding="utf-8")
    document = corpus / "tariffs.md"
    document.write_text(OLD, encoding="utf-8")
    run("init")
    ingest(run, corpus)
    document.write_text(NEW, encoding="utf-8")
    ingest(run, corpus)
    document.write_text(OLD, encoding="utf-8")
    summary = ingest(run, corpus)
    assert summary["ingested"] == 1 and summary["quarantined"] == []
    assert summary["withdrawn"] == []
    served = texts(run, "tariff florins")
    assert any("seventeen" in t for t in served)
    assert not any("nineteen" in t for t in served)
    # and once more forward and back: every restore is a new head, never a failure
    document.write_text(NEW, encoding="utf-8")
    assert ingest(run, corpus)["ingested"] == 1
    document.write_text(OLD, encoding="utf-8")
    assert ingest(run, corpus)["ingested"] == 1
    assert any("seventeen" in t for t in texts(run, "tariff florins"))


def test_a_withdrawn_document_that_returns_unchanged_is_served_again(
        run: Run, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (tmp_path / "affidavit.toml").write_text('[acl]\ndefault = ["*"]\n[grants]\n"*" = '
                                             '["INTERNAL"]\n', encoding="utf-8")
    document = corpus / "tariffs.md"
    (corpus / "other.md").write_text("# Other\n\nThe harbour opens at dawn.\n",
                                     encoding="utf-8")
    document.write_text(OLD, encoding="utf-8")
    run("init")
    ingest(run, corpus)
    document.unlink()
    assert ingest(run, corpus)["withdrawn"] == ["tariffs.md"]
    document.write_text(OLD, encoding="utf-8")
    summary = ingest(run, corpus)
    assert summary["ingested"] == 1 and summary["quarantined"] == []
    assert any("seventeen" in t for t in texts(run, "tariff florins"))
