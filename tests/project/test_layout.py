"""The tree reads like the pipeline: a folder per stage and per shell, no loose modules at
the top of the package, no module too long to review, and tests laid out like the source."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "affidavit"
# The package's own __init__, the error hierarchy and the shared records: every layer imports
# them, so they sit beneath all the folders (docs/architecture.md).
TOP_LEVEL_MODULES = {"__init__.py", "errors.py", "records.py"}
# Test folders that cut across the layout rather than mirror one package.
CROSS_CUTTING_TESTS = {"attack", "canary", "e2e", "e2e_hostile", "fixtures", "oracle", "ops",
                       "perf", "postgres", "project", "console"}


def test_no_loose_module_at_the_top_of_the_package() -> None:
    loose = {p.name for p in PACKAGE.glob("*.py")}
    assert loose == TOP_LEVEL_MODULES


def test_no_module_over_500_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := p.read_text(encoding="utf-8").count("\n")) > 500}
    assert long == {}


def test_every_stage_and_shell_is_a_folder_with_its_tests_beside_it() -> None:
    stages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    tests = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert tests - CROSS_CUTTING_TESTS <= stages, "a test folder names no package"
    # The console is half of the service; its browser tests keep their own folder.
    untested = stages - tests - {"util"}
    assert untested == set(), "a package without a test folder of its own"
