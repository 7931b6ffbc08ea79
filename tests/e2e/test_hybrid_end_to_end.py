"""Vectors through the normal CLI path: hybrid search, --explain, boundary, plausibility."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from tests.e2e.conftest import EXAMPLES, Run, as_json


def workspace(run: Run, tmp_path: Path) -> Path:
    shutil.copy(EXAMPLES / "affidavit.toml", tmp_path / "affidavit.toml")
    with (tmp_path / "affidavit.toml").open("a", encoding="utf-8") as config:
        config.write('\n[vectors]\nbackend = "hash"\ndimensions = 64\n')
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLES / "corpus", corpus)
    (corpus / "broken.md").write_bytes(b"\xff\xfe not utf-8")
    run("init")
    return corpus


def test_degraded_run_names_the_quarantined_document_in_its_boundary(
        run: Run, tmp_path: Path) -> None:
    corpus = workspace(run, tmp_path)
    code, out, _ = run("ingest", str(corpus), "--json")
    summary = as_json(out)
    assert code == 3 and summary["status"] == "DEGRADED"
    assert summary["vectors"]["embedded"] > 100
    assert summary["boundary"]["annotations"] == ["DEGRADED_BOUNDARY"]
    assert summary["boundary"]["excluded"] == ["broken.md"]
    assert summary["boundary"]["n"] == summary["vectors"]["embedded"]
    shown = as_json(run("runs", "show", summary["run_id"], "--json")[1])
    assert shown["summary"]["boundary"]["excluded"] == ["broken.md"]


def test_hybrid_search_explains_each_channel_and_gate(run: Run, tmp_path: Path) -> None:
    run("ingest", str(workspace(run, tmp_path)))
    run("sire", "approve", "--all", "--by", "tester")
    hits = as_json(run("search", "hotel limit per night", "--as", "user:sam.reed",
                       "--json", "--explain")[1])
    assert hits
    top = hits[0]
    for key in ("lexical_rank", "lexical_score", "vector_rank", "vector_score", "fused_rank",
                "gates"):
        assert key in top
    assert top["vector_rank"] is not None and top["fused_rank"] == 1
    code, text, _ = run("search", "hotel limit per night", "--as", "user:sam.reed", "--explain")
    assert code == 0 and "vector rank" in text and "fused rank 1" in text


def test_ask_records_boundary_plausibility(run: Run, tmp_path: Path) -> None:
    run("ingest", str(workspace(run, tmp_path)))
    run("sire", "approve", "--all", "--by", "tester")
    answer = as_json(run("ask", "What is the nightly hotel limit?", "--as", "user:sam.reed",
                         "--json")[1])
    with sqlite3.connect(tmp_path / ".affidavit" / "affidavit.db") as db:
        payload = db.execute("SELECT payload FROM ledger WHERE record_id = ?",
                             (answer["ledger_record_id"],)).fetchone()[0]
    record = json.loads(payload)
    assert record["plausibility"]["available"] is True
    assert record["plausibility"]["query"] > 0
    assert set(record["plausibility"]["evidence"]) == set(record["gates"][-1]["kept"])
