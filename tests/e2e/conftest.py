"""End-to-end fixtures: the bundled example corpus in a fresh working directory."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from affidavit.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Run]:
    """Run the CLI in-process in an empty working directory; return (code, stdout, stderr).

    On teardown every ledger record the test made is replayed and must reproduce."""
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    yield invoke
    _replay_every_record(invoke, tmp_path)


def _replay_every_record(invoke: Run, workdir: Path) -> None:
    """Every ledger record an end-to-end test made must reproduce from its logged state."""
    db = workdir / ".affidavit" / "affidavit.db"
    if not db.exists():
        return
    with sqlite3.connect(db) as conn:
        ids = [r[0] for r in conn.execute("SELECT record_id FROM ledger ORDER BY seq")]
    tampered = invoke("ledger", "verify")[0] != 0
    for record_id in ids:
        code, out, _ = invoke("ledger", "replay", record_id, "--json")
        if tampered and code != 0:
            continue  # a test that broke the chain on purpose changed a record
        assert code == 0, f"{record_id} does not reproduce: {out}"


@pytest.fixture
def example_workspace(run: Run, tmp_path: Path) -> Run:
    """init + ingest of the example corpus + every SIRE approved, as the README shows."""
    shutil.copy(EXAMPLES / "affidavit.toml", tmp_path / "affidavit.toml")
    assert run("init")[0] == 0
    code, out, err = run("ingest", str(EXAMPLES / "corpus"), "--json")
    assert code == 0, out + err
    assert run("sire", "approve", "--all", "--by", "tester")[0] == 0
    return run


def as_json(text: str) -> Any:
    return json.loads(text)
