"""The layer order in pyproject.toml's import-linter contracts holds, and the contracts bite:
an upward import, an import between the two shells, or a cycle between sibling modules added
to a copy of the package makes ``lint-imports`` fail and name it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package under ``root/src`` with ``root/pyproject.toml``."""
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run([LINT, "--config", str(root / "pyproject.toml"), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's Python files and the project's contracts, copied (data files left out)."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    source = ROOT / "src" / "affidavit"
    for path in source.rglob("*.py"):
        target = root / "src" / "affidavit" / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    return root


def _with_line(root: Path, module: str, line: str) -> Path:
    """A fresh copy of ``root`` whose ``module`` ends with ``line``."""
    copy = root.parent / f"{root.name}-{module.replace('/', '-')}"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(root, copy)
    path = copy / "src" / "affidavit" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    return copy


def test_the_package_keeps_every_contract() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_copy_keeps_every_contract_before_it_is_changed(package_copy: Path) -> None:
    # The cases below fail because of the line they add, not because the copy is incomplete.
    result = _lint(package_copy)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("module", "line", "named"), [
    # A pipeline stage reaching up to a later stage.
    ("text/forms.py", "from affidavit.engine import query as _upward  # noqa",
     "affidavit.text.forms -> affidavit.engine.query"),
    # Inside a function body it is still a dependency.
    ("store/protocol.py", "def _late() -> None:\n    import affidavit.retrieval.fusion  # noqa",
     "affidavit.store.protocol -> affidavit.retrieval.fusion"),
    # One shell reaching into the other.
    ("cli/doctor.py", "from affidavit.service import surfaces as _shell  # noqa",
     "affidavit.cli.doctor -> affidavit.service.surfaces"),
    # One backend reaching into the other.
    ("store/postgres/keys.py", "from affidavit.store.sqlite import keys as _other  # noqa",
     "affidavit.store.postgres.keys -> affidavit.store.sqlite.keys"),
])
def test_an_import_against_the_layers_fails_and_is_named(package_copy: Path, module: str,
                                                         line: str, named: str) -> None:
    result = _lint(_with_line(package_copy, module, line))
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert named in result.stdout.replace("\n", " ")


def test_a_cycle_between_sibling_modules_fails(package_copy: Path) -> None:
    # ingest.run imports ingest.lock; lock importing run back closes a cycle.
    result = _lint(_with_line(package_copy, "ingest/lock.py",
                              "def _back() -> None:\n    import affidavit.ingest.run  # noqa"))
    assert result.returncode != 0
    assert "No cycles are allowed in affidavit.ingest" in result.stdout
