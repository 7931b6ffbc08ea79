"""The hostile-input corpus: every file quarantined with its reason, the others ingested.

Ingestion runs in a child process so that its peak memory, parser processes included, can
be read when it exits. The corpus is written at test time (tests/fixtures/hostile/build.py).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.hostile.build import ORDINARY, build_corpus

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
PEAK_MEMORY_LIMIT_KIB = 512 * 1024
SECONDS_PER_DOCUMENT = 10.0


def ingest_in_child(folder: Path, database: Path, tmp_path: Path) -> tuple[dict[str, Any], int]:
    """The runner's JSON report and its peak RSS in KiB: the larger of its own address
    space's high-water mark and its parser children's (see ``run_ingest.own_peak_kib``)."""
    command = [sys.executable, "-m", "tests.e2e_hostile.run_ingest", str(folder), str(database),
               str(64 * MIB)]
    with (tmp_path / "stderr.txt").open("w+b") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr)
        assert process.stdout is not None
        output = process.stdout.read()
        process.stdout.close()
        process.returncode = process.wait()
        stderr.seek(0)
        assert process.returncode == 0, stderr.read().decode(errors="replace")
    report = json.loads(output)
    return report, max(report["peak_rss_kib"].values())


@pytest.mark.slow
def test_every_hostile_document_is_quarantined_and_the_rest_ingested(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    expected = build_corpus(corpus)
    report, peak_kib = ingest_in_child(corpus, tmp_path / "store.db", tmp_path)

    summary = report["summary"]
    reasons = {entry["alias"]: entry["reason_code"] for entry in summary["quarantined"]}
    assert reasons == expected
    assert {alias for alias, status in report["statuses"].items() if status == "ingested"} == set(
        ORDINARY
    )
    assert summary["status"] == "DEGRADED"

    slow = {alias: s for alias, s in report["seconds"].items() if s >= SECONDS_PER_DOCUMENT}
    assert not slow, f"documents over {SECONDS_PER_DOCUMENT} s: {slow}"
    assert peak_kib < PEAK_MEMORY_LIMIT_KIB, f"peak RSS {peak_kib} KiB ({report['peak_rss_kib']})"

    db = sqlite3.connect(tmp_path / "store.db")
    try:
        stored = {row[0] for row in db.execute("SELECT alias FROM versions")}
        quarantined = {row[0] for row in db.execute("SELECT alias FROM quarantine")}
    finally:
        db.close()
    assert stored == set(ORDINARY)
    assert quarantined == set(expected)
