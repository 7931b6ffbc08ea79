"""``affidavit init --example``: the example from the installed package, never over a file."""

from __future__ import annotations

from pathlib import Path

from affidavit.cli.init import example_files
from tests.e2e.conftest import Run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_init_example_writes_the_packaged_settings_and_corpus(run: Run, tmp_path: Path) -> None:
    code, out, _ = run("init", "--example")
    assert code == 0, out
    assert (tmp_path / "affidavit.toml").read_bytes() == (EXAMPLES / "affidavit.toml").read_bytes()
    shipped = sorted(p.relative_to(EXAMPLES / "corpus").as_posix()
                     for p in (EXAMPLES / "corpus").rglob("*") if p.is_file())
    written = sorted(p.relative_to(tmp_path / "corpus").as_posix()
                     for p in (tmp_path / "corpus").rglob("*") if p.is_file())
    assert written == shipped
    # The database was created with the example's tenant, read from the file just written.
    assert "tenant harbourline" in out
    assert (tmp_path / ".affidavit" / "affidavit.db").is_file()


def test_init_example_refuses_to_overwrite_existing_settings(run: Run, tmp_path: Path) -> None:
    (tmp_path / "affidavit.toml").write_text('tenant = "mine"\n')
    code, _, err = run("init", "--example")
    assert code != 0
    assert "affidavit.toml" in err and "--force" in err
    assert (tmp_path / "affidavit.toml").read_text() == 'tenant = "mine"\n'
    assert not (tmp_path / "corpus").exists()  # nothing half-written


def test_init_example_overwrites_with_force(run: Run, tmp_path: Path) -> None:
    (tmp_path / "affidavit.toml").write_text('tenant = "mine"\n')
    code, out, _ = run("init", "--example", "--force")
    assert code == 0
    assert "tenant harbourline" in out


def test_example_files_list_every_shipped_file_once() -> None:
    names = [name for name, _ in example_files()]
    assert len(names) == len(set(names))
    assert "affidavit.toml" in names
    assert all(name == "affidavit.toml" or name.startswith("corpus/") for name in names)
