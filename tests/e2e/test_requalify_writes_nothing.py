"""``requalify --plan`` and ``--canary`` write nothing: the whole database, dumped, is
byte for byte the same before and after them (a roll, for contrast, changes it)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.e2e.conftest import Run
from tests.e2e.test_requalify_scenario import keyword_rule, setup


def dump(workdir: Path) -> list[str]:
    with sqlite3.connect(workdir / ".affidavit" / "affidavit.db") as conn:
        return list(conn.iterdump())


def test_requalify_plan_and_canary_change_nothing_in_the_database(
        run: Run, tmp_path: Path) -> None:
    setup(run, tmp_path)
    (tmp_path / "affidavit.toml").write_text(keyword_rule("harbour crane"), encoding="utf-8")
    before = dump(tmp_path)
    for args in (("--plan",), ("--plan", "--json"), ("--canary", "2"),
                 ("--canary", "5", "--json")):
        code, out, err = run("requalify", *args)
        assert code == 0, out + err
        assert dump(tmp_path) == before, args
    assert run("requalify", "--roll", "--json")[0] == 0
    assert dump(tmp_path) != before
