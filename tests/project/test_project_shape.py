"""The project keeps its promises about itself: README commands, CI, public surface."""

from __future__ import annotations

import re
from pathlib import Path

import affidavit

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.+?)\n```", text, flags=re.S)[:2]


def test_readme_starts_with_the_two_commands() -> None:
    run_main, run_tests = readme_commands()
    assert "affidavit demo" in run_main and "pip install ." in run_main
    assert "pytest" in run_tests


def test_ci_runs_exactly_the_readme_test_command() -> None:
    _, run_tests = readme_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert run_tests.strip() in ci.splitlines()


def test_public_surface_is_complete_and_resolves() -> None:
    for name in affidavit.__all__:
        assert getattr(affidavit, name) is not None
    assert sorted(affidavit.__all__) == affidavit.__all__ or len(set(affidavit.__all__)) == len(
        affidavit.__all__)


def test_no_module_is_a_monolith() -> None:
    for path in (ROOT / "src" / "affidavit").rglob("*.py"):
        lines = path.read_text(encoding="utf-8").count("\n")
        assert lines <= 600, f"{path.relative_to(ROOT)} has {lines} lines"
