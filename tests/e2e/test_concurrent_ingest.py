"""Two ingestion runs on one database: the second refuses or waits; none races the other.

Real processes on one SQLite file. The first run (tests/e2e/hold_ingest.py) pauses after its
first document while holding the tenant's ingestion lock; the second is the real
``affidavit ingest`` command. Before the lock, both derived the same versions at once and
each quarantined the documents the other had just written.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from affidavit.config.settings import Settings
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXIT_BUSY = 4


@dataclass
class Holder:
    """A paused ingestion run in a child process."""

    process: subprocess.Popen[bytes]
    release: Path

    def finish(self) -> dict[str, object]:
        self.release.touch()
        out, err = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, err.decode(errors="replace")
        summary: dict[str, object] = json.loads(out)
        return summary


def write_corpus(folder: Path, count: int = 6) -> Path:
    folder.mkdir()
    for n in range(count):
        (folder / f"note-{n}.md").write_text(
            f'---\nacl: ["*"]\n---\n# Note {n}\n\nThe committee meets on day {n}.\n',
            encoding="utf-8")
    return folder


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def holder(corpus: Path, database: Path, tmp_path: Path) -> Iterator[Holder]:
    started, release = tmp_path / "started", tmp_path / "release"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.hold_ingest", str(corpus), str(database),
         str(started), str(release)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    held = Holder(process, release)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert process.poll() is None, process.communicate()[1].decode(errors="replace")
        assert time.monotonic() < deadline, "the first run never started"
        time.sleep(0.05)
    yield held
    release.touch()
    if process.poll() is None:
        process.kill()
    process.communicate()


def affidavit(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AFFIDAVIT_")}
    return subprocess.Popen([sys.executable, "-m", "affidavit.cli.main", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def quarantine_rows(database: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(database) as conn:
        return list(conn.execute("SELECT alias, reason_code FROM quarantine"))


def test_a_second_ingest_of_the_tenant_refuses_while_one_runs(
        holder: Holder, corpus: Path, database: Path, tmp_path: Path) -> None:
    code, out, err = finished(affidavit("ingest", str(corpus), "--db", str(database), "--json",
                                        cwd=tmp_path))
    assert code == EXIT_BUSY, out + err
    assert "another ingestion run of tenant 'default' is under way" in err
    assert "this run did not start" in err and "--wait" in err
    assert out == ""
    first = holder.finish()
    assert first["status"] == "COMPLETED" and first["ingested"] == 6
    assert quarantine_rows(database) == []
    with sqlite3.connect(database) as conn:
        assert [row[0] for row in conn.execute("SELECT status FROM runs")] == ["COMPLETED"]


def test_a_second_ingest_given_wait_runs_after_the_first(
        holder: Holder, corpus: Path, database: Path, tmp_path: Path) -> None:
    second = affidavit("ingest", str(corpus), "--db", str(database), "--json", "--wait", "60",
                       cwd=tmp_path)
    assert second.stderr is not None
    told = second.stderr.readline()
    assert "is under way" in told and "waiting up to 60 s" in told
    assert second.poll() is None, "it must still be waiting"
    first = holder.finish()
    code, out, err = finished(second)
    assert code == 0, out + err
    summary = json.loads(out)
    assert first["ingested"] == 6 and summary["unchanged"] == 6
    assert summary["quarantined"] == [] and quarantine_rows(database) == []


def test_a_wait_that_runs_out_refuses(holder: Holder, corpus: Path, database: Path,
                                      tmp_path: Path) -> None:
    started = time.monotonic()
    code, _, err = finished(affidavit("ingest", str(corpus), "--db", str(database),
                                      "--wait", "1", cwd=tmp_path))
    assert code == EXIT_BUSY and "waited 1 s" in err
    assert time.monotonic() - started >= 1
    holder.finish()


def test_another_tenant_is_not_held_up(holder: Holder, corpus: Path, database: Path,
                                       tmp_path: Path) -> None:
    code, out, err = finished(affidavit("ingest", str(corpus), "--db", str(database),
                                        "--tenant", "other", "--json", cwd=tmp_path))
    assert code == 0, out + err
    assert json.loads(out)["ingested"] == 6
    holder.finish()


def test_a_killed_run_leaves_no_stale_lock(holder: Holder, corpus: Path, database: Path,
                                           tmp_path: Path) -> None:
    holder.process.send_signal(signal.SIGKILL)
    holder.process.wait(timeout=30)
    code, out, err = finished(affidavit("ingest", str(corpus), "--db", str(database), "--json",
                                        cwd=tmp_path))
    assert code == 0, out + err
    assert json.loads(out)["quarantined"] == []
    with sqlite3.connect(database) as conn:
        statuses = sorted(row[0] for row in conn.execute("SELECT status FROM runs"))
    assert statuses == ["COMPLETED", "FAILED"]  # the killed run is closed as interrupted


def test_a_run_left_running_on_another_host_is_closed_by_the_next(
        corpus: Path, database: Path) -> None:
    # The next run holds the tenant's lock, which a live run would hold: whatever is still
    # marked RUNNING was interrupted, on this host (pid perhaps reused) or any other.
    store = SQLiteStore(database)
    try:
        for run_id, host in (("run-elsewhere", "another-host"), ("run-here", socket.gethostname())):
            store.start_run("default", run_id, at="2026-01-01T00:00:00+00:00",
                            params_json=json.dumps({"pid": os.getpid(), "host": host}))
        Ingestor(store, Settings()).run([LocalFolderSource(corpus, max_document_bytes=1 << 20)])
        statuses = {run.run_id: run.status for run in store.list_runs("default")}
    finally:
        store.close()
    assert statuses["run-elsewhere"] == "FAILED" and statuses["run-here"] == "FAILED"
