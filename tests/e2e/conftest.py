"""End-to-end fixtures: the bundled example corpus in a fresh working directory."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from affidavit.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Run:
    """Run the CLI in-process in an empty working directory; return (code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


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
