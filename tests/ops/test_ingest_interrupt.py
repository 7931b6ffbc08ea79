"""Ctrl-C during an ingest: one line saying what was committed and that a re-run resumes,
no traceback, the run closed as FAILED, and the re-run finishing the rest. A real
``affidavit ingest`` process, a real SIGINT, a real SQLite file."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

DOCUMENTS = 400


def _affidavit(cwd: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "affidavit.cli.main", *args]


def test_ctrl_c_during_ingest_says_what_was_committed_and_a_rerun_resumes(
        tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(DOCUMENTS):
        (corpus / f"note-{i:04d}.md").write_text(
            f"# Note {i}\n\nThe quarterly review number {i} covers staffing, budgets and the "
            f"office move planned for week {i % 52}.\n", encoding="utf-8")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(_affidavit(tmp_path, "ingest", "corpus", "--progress"),
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the run has committed some documents
        line = process.stderr.readline()
        seen.append(line)
        if line.startswith("[5]"):
            break
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    stderr = "".join(seen) + rest
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    (said,) = [line for line in stderr.splitlines() if "interrupted" in line]
    assert said.startswith("affidavit: interrupted: run run-") and "resume" in said
    with sqlite3.connect(tmp_path / ".affidavit" / "affidavit.db") as conn:
        (status,) = conn.execute("SELECT status FROM runs ORDER BY started_at DESC "
                                 "LIMIT 1").fetchone()
        committed = conn.execute("SELECT COUNT(*) FROM head_map").fetchone()[0]
    conn.close()
    assert status == "FAILED" and 0 < committed < DOCUMENTS
    again = subprocess.run(_affidavit(tmp_path, "ingest", "corpus", "--json"), cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    import json

    summary = json.loads(again.stdout)
    assert summary["ingested"] + summary["unchanged"] == DOCUMENTS
    assert summary["unchanged"] >= committed
