"""Ingestion workers on the PostgreSQL queue: exactly once, even when a worker dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from affidavit.config.loader import load
from affidavit.config.settings import Settings
from affidavit.ingest.worker import ATTEMPTS_EXHAUSTED, Worker, WorkerOptions, enqueue_local_folder
from affidavit.store.postgres.queue import (
    QueueClaim,
    claim_documents,
    content_lock,
    pending_documents,
)
from affidavit.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

TENANT = "acme"
CONFIG = f"""tenant = "{TENANT}"

[acl]
default = ["group:staff#member"]
"""


def write_corpus(root: Path, n: int, *, empty: int = 0) -> Path:
    """``n`` small Markdown documents (and ``empty`` empty ones) under ``root/docs``."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    for i in range(n):
        (docs / f"note-{i:03d}.md").write_text(
            f"# Note {i}\n\nThe quarterly figure for region {i} is {i * 7} units.\n\n"
            f"Travel policy item {i}: keep receipts for {i % 30 + 1} days.\n", encoding="utf-8")
    for i in range(empty):
        (docs / f"empty-{i}.md").write_bytes(b"")
    return docs


def settings_in(root: Path) -> Settings:
    (root / "affidavit.toml").write_text(CONFIG, encoding="utf-8")
    return load(root / "affidavit.toml", environ={})


@pytest.fixture
def queue(owner_dsn: str, tmp_path: Path) -> Iterator[tuple[PostgresStore, Settings]]:
    store = PostgresStore(owner_dsn)
    try:
        yield store, settings_in(tmp_path)
    finally:
        store.close()


def scalar(store: PostgresStore, query: str, *params: object) -> int:
    with store.transaction(TENANT) as conn:
        row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def versions_per_node(store: PostgresStore) -> set[int]:
    with store.transaction(TENANT) as conn:
        rows = conn.execute("SELECT count(*) FROM versions GROUP BY node_id").fetchall()
    return {int(r[0]) for r in rows}


def test_a_worker_drains_a_queued_run(tmp_path: Path, owner_dsn: str) -> None:
    docs = write_corpus(tmp_path, 10, empty=1)
    store = PostgresStore(owner_dsn)
    try:
        settings = settings_in(tmp_path)
        run_id = enqueue_local_folder(store, settings, docs, "files")
        assert store.get_run(TENANT, run_id).status == "QUEUED"  # type: ignore[union-attr]
        report = Worker(store, settings, options=WorkerOptions(once=True, batch_size=4)).run()
        assert report.processed == 11 and report.runs_finished == [run_id]
        run = store.get_run(TENANT, run_id)
        assert run is not None and run.status == "DEGRADED"
        summary = json.loads(run.summary_json)
        assert (summary["ingested"], len(summary["quarantined"])) == (10, 1)
        assert [q.alias for q in store.list_quarantine(TENANT, run_id)] == ["empty-0.md"]
        assert len(store.heads(TENANT)) == 10 and versions_per_node(store) == {1}
        # The same folder again: nothing changed, nothing is written twice.
        again = enqueue_local_folder(store, settings, docs, "files")
        Worker(store, settings, options=WorkerOptions(once=True)).run()
        summary = json.loads(store.get_run(TENANT, again).summary_json)  # type: ignore[union-attr]
        assert summary["unchanged"] == 10 and versions_per_node(store) == {1}
    finally:
        store.close()


def test_claims_are_disjoint(tmp_path: Path, queue: tuple) -> None:
    store, settings = queue
    enqueue_local_folder(store, settings, write_corpus(tmp_path, 6), "files")
    first = claim_documents(store, TENANT, "w1", batch=4, stale_after=300)
    second = claim_documents(store, TENANT, "w2", batch=4, stale_after=300)
    assert (len(first), len(second)) == (4, 2)
    assert not {c.seq for c in first} & {c.seq for c in second}
    assert claim_documents(store, TENANT, "w3", batch=4, stale_after=300) == []


def test_a_claim_taken_over_cannot_commit(tmp_path: Path, queue: tuple) -> None:
    store, settings = queue
    enqueue_local_folder(store, settings, write_corpus(tmp_path, 1), "files")
    slow = Worker(store, settings, worker_id="slow")
    [stale] = claim_documents(store, TENANT, "slow", batch=1, stale_after=300)
    time.sleep(0.01)
    [taken] = claim_documents(store, TENANT, "fast", batch=1, stale_after=0)
    assert (taken.seq, taken.attempts) == (stale.seq, 2)
    slow.process(stale)  # its claim is gone: the version it derived must not commit
    assert slow.report.lost_claims == 1 and store.heads(TENANT) == []
    fast = Worker(store, settings, worker_id="fast")
    fast.process(taken)
    assert fast.report.outcomes == {"ingested": 1} and len(store.heads(TENANT)) == 1
    assert pending_documents(store, TENANT) == 0


def test_a_document_that_keeps_killing_workers_is_quarantined(tmp_path: Path,
                                                             queue: tuple) -> None:
    store, settings = queue
    run_id = enqueue_local_folder(store, settings, write_corpus(tmp_path, 1), "files")
    claim_documents(store, TENANT, "dead-1", batch=1, stale_after=300)
    time.sleep(0.01)
    [claim] = claim_documents(store, TENANT, "w", batch=1, stale_after=0)
    worker = Worker(store, settings, options=WorkerOptions(max_attempts=1, once=True))
    worker.process(claim)
    assert [q.reason_code for q in store.list_quarantine(TENANT, run_id)] == [ATTEMPTS_EXHAUSTED]
    assert worker.run().runs_finished == [run_id]
    assert store.heads(TENANT) == []


def test_a_stopping_worker_gives_back_what_it_has_not_started(tmp_path: Path,
                                                             queue: tuple) -> None:
    store, settings = queue
    enqueue_local_folder(store, settings, write_corpus(tmp_path, 5), "files")
    stop = threading.Event()

    class StopsAfterOne(Worker):
        def process(self, claim: QueueClaim) -> None:
            super().process(claim)
            stop.set()  # as SIGTERM does

    report = StopsAfterOne(store, settings, options=WorkerOptions(batch_size=5)).run(stop)
    assert report.processed == 1
    assert scalar(store, "SELECT count(*) FROM ingest_queue WHERE status = 'queued' "
                         "AND claimed_by IS NULL AND attempts = 0") == 4
    Worker(store, settings, options=WorkerOptions(once=True)).run()
    assert pending_documents(store, TENANT) == 0 and len(store.heads(TENANT)) == 5


def test_two_copies_of_one_document_are_never_written_side_by_side(tmp_path: Path,
                                                                  queue: tuple) -> None:
    store, settings = queue
    docs = write_corpus(tmp_path, 1)
    first_run = enqueue_local_folder(store, settings, docs, "files")
    second_run = enqueue_local_folder(store, settings, docs, "files")  # queued twice
    [first] = claim_documents(store, TENANT, "a", batch=1, stale_after=300)
    [second] = claim_documents(store, TENANT, "b", batch=1, stale_after=300)
    assert (first.run_id, second.run_id) == (first_run, second_run)
    late, early = Worker(store, settings, worker_id="b"), Worker(store, settings, worker_id="a")
    racing = threading.Thread(target=late.process, args=(second,))
    with content_lock(store, TENANT, first.document.content):  # someone holds these bytes
        racing.start()
        racing.join(0.5)
        assert racing.is_alive(), "the second copy did not wait for the lock"
    early.process(first)  # races the released thread: either may go first
    racing.join(30)
    outcomes = Counter(early.report.outcomes) + Counter(late.report.outcomes)
    assert outcomes == {"ingested": 1, "unchanged": 1} and versions_per_node(store) == {1}
    assert store.list_quarantine(TENANT) == []


def spawn_worker(dsn: str, workdir: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AFFIDAVIT_")}
    return subprocess.Popen(
        [sys.executable, "-m", "affidavit.ingest.worker", "--db", dsn, "--config",
         str(workdir / "affidavit.toml"), "--once", "--batch", "5", "--stale-after", "2",
         "--poll", "0.2"], cwd=workdir, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)


def wait_until(condition: Callable[[], bool], timeout: float,
               workers: Sequence[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for worker in workers:
            if worker.poll() is not None:
                _, err = worker.communicate()
                pytest.fail(f"a worker exited early ({worker.returncode}): {err.decode()}")
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.slow
def test_two_worker_processes_ingest_200_documents_exactly_once_despite_a_kill(
        tmp_path: Path, owner_dsn: str, queue: tuple) -> None:
    store, settings = queue
    run_id = enqueue_local_folder(store, settings, write_corpus(tmp_path, 200), "files")
    done = "SELECT count(*) FROM ingest_queue WHERE status = 'done'"
    first, second = spawn_worker(owner_dsn, tmp_path), spawn_worker(owner_dsn, tmp_path)
    held = "SELECT count(*) FROM ingest_queue WHERE status = 'claimed' AND claimed_by LIKE %s"
    mine = f"%:{first.pid}:%"
    wait_until(lambda: scalar(store, done) >= 30 and scalar(store, held, mine) > 0, 90,
               [first, second])
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)
    orphaned = scalar(store, held, mine)
    third = spawn_worker(owner_dsn, tmp_path)
    for process in (second, third):
        _, err = process.communicate(timeout=180)
        assert process.returncode == 0, err.decode()
    assert orphaned > 0, "the killed worker held no claim: nothing was tested"
    assert scalar(store, done) == 200 and pending_documents(store, TENANT) == 0
    assert len(store.heads(TENANT)) == 200 and versions_per_node(store) == {1}
    assert scalar(store, "SELECT count(*) FROM head_history") == 200
    assert scalar(store, "SELECT count(*) FROM chunks") == store.lexical_stats(TENANT).n_chunks
    assert scalar(store, "SELECT count(DISTINCT claimed_by) FROM ingest_queue") >= 2
    run = store.get_run(TENANT, run_id)
    assert run is not None and run.status == "COMPLETED"
    assert json.loads(run.summary_json)["ingested"] == 200
