"""--db, --tenant and --config apply wherever they are given: before or after the subcommand."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.e2e.conftest import Run


def write_corpus(folder: Path) -> Path:
    folder.mkdir()
    (folder / "note.md").write_text('---\nacl: ["*"]\n---\n# Note\n\nThe audit meets monthly.\n',
                                    encoding="utf-8")
    return folder


def tenants_with_versions(database: Path) -> set[str]:
    with sqlite3.connect(database) as conn:
        return {row[0] for row in conn.execute("SELECT DISTINCT tenant_id FROM versions")}


@pytest.mark.parametrize("position", ["before", "after"])
def test_global_options_apply_before_or_after_the_subcommand(
        run: Run, tmp_path: Path, position: str) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    database = tmp_path / "elsewhere" / "store.db"
    options = ["--db", str(database), "--tenant", "acme"]
    command = ["ingest", str(corpus), "--quiet"]
    args = options + command if position == "before" else command + options
    code, out, err = run(*args)
    assert code == 0, out + err
    assert tenants_with_versions(database) == {"acme"}
    assert not (tmp_path / ".affidavit").exists(), "nothing may land in the default database"


def test_a_value_after_the_subcommand_overrides_one_before(run: Run, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    database = tmp_path / "store.db"
    code, out, err = run("--db", str(database), "--tenant", "acme", "ingest", str(corpus),
                         "--tenant", "beta", "--quiet")
    assert code == 0, out + err
    assert tenants_with_versions(database) == {"beta"}


def test_a_config_file_given_before_the_subcommand_is_read(run: Run, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    database = tmp_path / "from-config.db"
    settings = tmp_path / "custom.toml"
    settings.write_text(f'tenant = "gamma"\n[store]\ndb = "{database}"\n', encoding="utf-8")
    code, out, err = run("--config", str(settings), "ingest", str(corpus), "--quiet")
    assert code == 0, out + err
    assert tenants_with_versions(database) == {"gamma"}


def test_global_options_the_demo_cannot_use_are_refused_loudly(
        run: Run, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        run("--db", str(tmp_path / "x.db"), "demo")
    assert exited.value.code == 2
    assert not (tmp_path / "x.db").exists()
