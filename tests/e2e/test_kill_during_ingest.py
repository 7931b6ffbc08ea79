"""SIGKILL at any point of an ingest run: nothing partial is visible, a re-run finishes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

DOCS = 300


def make_corpus(root: Path) -> None:
    root.mkdir()
    for i in range(DOCS):
        body = "\n\n".join(f"Paragraph {j} of document {i} talks about topic{i % 7} and "
                           f"harbour{j} with enough words to make a chunk." for j in range(12))
        (root / f"doc{i:03d}.md").write_text(f"# Document {i}\n\n{body}\n", encoding="utf-8")


def ingest(workdir: Path, corpus: Path, config: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "AFFIDAVIT_DB": str(workdir / "k.db"), "AFFIDAVIT_CONFIG": str(config)}
    return subprocess.Popen([sys.executable, "-m", "affidavit.cli.main", "ingest", str(corpus),
                             "--quiet"], cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def assert_consistent(db_path: Path) -> int:
    db = sqlite3.connect(db_path)
    one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
    if not one("SELECT COUNT(*) FROM sqlite_master WHERE name = 'head_map'"):
        # Killed before the migrations that create the tables committed (start-up is
        # fast now): nothing is visible, and the re-run must migrate and finish.
        db.close()
        return 0
    heads = one("SELECT COUNT(*) FROM head_map WHERE version_id IS NOT NULL")
    assert one("SELECT COUNT(*) FROM head_map h WHERE NOT EXISTS (SELECT 1 FROM chunks c "
               "WHERE c.version_id = h.version_id AND c.is_head = 1)") == 0
    assert one("SELECT COUNT(*) FROM chunks c WHERE c.is_head = 1 AND NOT EXISTS (SELECT 1 "
               "FROM head_map h WHERE h.version_id = c.version_id)") == 0
    assert one("SELECT COUNT(*) FROM postings p WHERE NOT EXISTS (SELECT 1 FROM chunks c "
               "WHERE c.chunk_id = p.chunk_id AND c.is_head = 1)") == 0
    for table in ("blobs", "acl_tokens", "sire", "paragraph_labels"):
        column = "raw_digest" if table == "blobs" else "version_id"
        source = "v.raw_digest" if table == "blobs" else "v.version_id"
        assert one(f"SELECT COUNT(*) FROM versions v WHERE NOT EXISTS (SELECT 1 FROM {table} t "
                   f"WHERE t.{column} = {source})") == 0, table
    stats = db.execute("SELECT n_chunks, total_length FROM lexical_stats").fetchone()
    assert stats == db.execute("SELECT COUNT(*), COALESCE(SUM(n_tokens), 0) FROM chunks "
                               "WHERE is_head = 1").fetchone()
    db.close()
    return int(heads)


def wait_for_heads(db_path: Path, at_least: int, process: subprocess.Popen[bytes],
                   timeout: float) -> None:
    """Return once ``at_least`` documents are visible to a reader (or the run ended).

    Kill points chosen by the clock alone missed the ingest on a loaded machine, where
    start-up and ingest speed vary from run to run more than the schedule allows for."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as db:
                heads = db.execute("SELECT COUNT(*) FROM head_map").fetchone()[0]
        except sqlite3.Error:
            heads = 0  # not created or not migrated yet
        if heads >= at_least:
            return
        time.sleep(0.01)


@pytest.mark.slow
def test_sigkill_at_many_points_leaves_no_partial_document(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    (tmp_path / "affidavit.toml").write_text('[acl]\ndefault = ["*"]\n', encoding="utf-8")
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    started = time.perf_counter()
    assert ingest(baseline, corpus, tmp_path / "affidavit.toml").wait(timeout=300) == 0
    duration = time.perf_counter() - started
    mid_run = 0
    for point in range(1, 9):
        workdir = tmp_path / f"kill{point}"
        workdir.mkdir()
        process = ingest(workdir, corpus, tmp_path / "affidavit.toml")
        if point <= 3:  # early: start-up, migrations, the first batch
            time.sleep(duration * point / 9)
        else:  # once a share of the documents is visible: certainly mid-ingest
            wait_for_heads(workdir / "k.db", DOCS * (point - 3) // 6, process, duration * 3)
        process.send_signal(signal.SIGKILL)
        process.wait()
        if not (workdir / "k.db").exists():
            continue
        heads = assert_consistent(workdir / "k.db")
        mid_run += 0 < heads < DOCS
        assert ingest(workdir, corpus, tmp_path / "affidavit.toml").wait(timeout=300) == 0
        assert assert_consistent(workdir / "k.db") == DOCS
        db = sqlite3.connect(workdir / "k.db")
        statuses = [r[0] for r in db.execute("SELECT status FROM runs ORDER BY started_at")]
        db.close()
        assert statuses[-1] == "COMPLETED"
        assert "RUNNING" not in statuses, "a killed run is marked FAILED by the next run"
    assert mid_run >= 3, "the kills landed mid-run"
