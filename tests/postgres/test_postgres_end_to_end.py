"""The governed path end to end on PostgreSQL, and the same answers as on SQLite."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from affidavit.cli.main import main
from affidavit.config.loader import load
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore, Store
from affidavit.store.postgres.store import PostgresStore
from tests.pg_fixture import PgCluster

pytestmark = pytest.mark.postgres

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOW = "2026-01-01T00:00:00+00:00"
HOTEL = "What is the nightly hotel limit for business travel?"
REVENUE = "What was total revenue in Q3 2024?"
QUESTIONS = (HOTEL, REVENUE, "board minutes Project Lighthouse", "salary grievance procedure",
             "vendor contract termination notice", "password rotation policy")
PRINCIPALS = ("user:sam.reed", "user:farid.nasser", "user:helen.park", "user:grace.liu")


def ingest_examples(store: Store, settings: Settings) -> None:
    source = LocalFolderSource(EXAMPLES / "corpus", source_system="examples",
                               max_document_bytes=settings.ingest.max_document_bytes)
    Ingestor(store, settings).run([source])
    for record in store.list_sire(settings.tenant, state="PROPOSED"):
        approve_sire(store, settings.tenant, record.sire_id, by="tester", at=NOW)


@pytest.fixture(scope="module")
def both(pg_cluster: PgCluster,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Engine]]:
    """The example corpus ingested into SQLite and into PostgreSQL."""
    settings = load(EXAMPLES / "affidavit.toml", environ={})
    lite = SQLiteStore(tmp_path_factory.mktemp("parity") / "a.db")
    pg = PostgresStore(pg_cluster.new_database("parity"))
    ingest_examples(lite, settings)
    ingest_examples(pg, settings)
    try:
        yield Engine(lite, settings), Engine(pg, settings)
    finally:
        lite.close()
        pg.close()


def test_lexical_scores_equal_sqlite_to_1e_6(both: tuple[Engine, Engine]) -> None:
    lite, pg = both
    compared = 0
    for principal in PRINCIPALS:
        for question in QUESTIONS:
            expected = lite.search(principal, question, limit=50)
            found = pg.search(principal, question, limit=50)
            assert [h.chunk_id for h in found] == [h.chunk_id for h in expected]
            for a, b in zip(found, expected, strict=True):
                assert abs(a.score - b.score) < 1e-6
            compared += len(found)
    assert compared > 100


def test_ask_gives_the_same_governed_answer_on_both_backends(
        both: tuple[Engine, Engine]) -> None:
    lite, pg = both
    for principal, question in (("user:sam.reed", HOTEL), ("user:farid.nasser", REVENUE),
                                ("user:sam.reed", REVENUE)):
        a, b = lite.ask(principal, question), pg.ask(principal, question)
        assert (b.output_state, b.answer) == (a.output_state, a.answer)
        assert [c["chunk_id"] for c in b.citations] == [c["chunk_id"] for c in a.citations]
        assert b.ledger_record_hash and b.ledger_record_id


def test_the_command_line_runs_on_postgres(pg_cluster: PgCluster, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    shutil.copy(EXAMPLES / "affidavit.toml", tmp_path / "affidavit.toml")
    monkeypatch.setenv("AFFIDAVIT_DB", pg_cluster.new_database("cli"))

    def run(*args: str) -> tuple[int, Any]:
        capsys.readouterr()
        code = main(list(args))
        return code, capsys.readouterr().out

    assert run("init")[0] == 0
    code, out = run("ingest", str(EXAMPLES / "corpus"), "--json")
    assert code == 0 and json.loads(out)["ingested"] > 20
    assert run("sire", "approve", "--all", "--by", "tester")[0] == 0
    code, out = run("ask", HOTEL, "--as", "user:sam.reed", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["output_state"] == "AUTHORIZED" and answer["citations"]
    code, out = run("ledger", "verify")
    assert code == 0 and "1 records verified" in out
    assert not (tmp_path / ".affidavit").exists()  # nothing went to a SQLite file


def test_affidavit_worker_drains_a_queued_folder(pg_cluster: PgCluster, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from affidavit.ingest.worker import enqueue_local_folder

    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    shutil.copy(EXAMPLES / "affidavit.toml", tmp_path / "affidavit.toml")
    dsn = pg_cluster.new_database("queued")
    monkeypatch.setenv("AFFIDAVIT_DB", dsn)
    settings = load(tmp_path / "affidavit.toml", environ={})
    store = PostgresStore(dsn)
    try:
        run_id = enqueue_local_folder(store, settings, EXAMPLES / "corpus", "examples")
        assert main(["worker", "--once", "--poll", "0.05"]) == 0
        assert "runs finished 1" in capsys.readouterr().out
        run = store.get_run(settings.tenant, run_id)
        assert run is not None and run.status == "COMPLETED"
        assert json.loads(run.summary_json)["ingested"] > 20
    finally:
        store.close()
