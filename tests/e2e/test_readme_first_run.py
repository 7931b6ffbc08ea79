"""The README's "Using it" section works, verbatim, for someone who only ran ``pip install``.

The package is built into a wheel and installed (not editable) into a fresh virtual
environment; the commands are read from README.md and run one by one in an empty directory,
so a step that only works from a source checkout (``cp examples/...``) fails here.

Placeholders: ``<record-id>`` is filled from the ``ledger_record_id`` of the most recent
``--json`` output that carried one (the ``ask ... --json`` step just before it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def using_it_commands(text: str) -> list[str]:
    """The command lines of the first code block after the "## Using it" heading."""
    section = text[text.index("## Using it\n"):]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "no ```sh block under ## Using it"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_links_point_at_files_the_repository_ships() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#:]+)\)", text)
    assert "docs/architecture.md" in targets
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert missing == []


def test_using_it_needs_no_source_checkout() -> None:
    commands = using_it_commands(README.read_text(encoding="utf-8"))
    assert commands[0].split()[:3] == ["affidavit", "init", "--example"]
    assert not any("examples/" in line for line in commands)


def test_every_subpackage_ships_in_the_wheel() -> None:
    """The package list in pyproject.toml is explicit: a new subpackage missing from it
    imports from a checkout and fails after pip install."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(init.parent.relative_to(ROOT / "src").parts)
             for init in (ROOT / "src" / "affidavit").rglob("__init__.py")}
    assert found - listed == set()


def _install_wheel(tmp: Path) -> Path:
    """Build the wheel from a copy of the sources and install it into a new venv.

    The venv sees the test environment's site-packages (for the dependencies) through a
    path file; path files inside that directory are not run, so the editable install of
    the checkout stays invisible and ``affidavit`` comes from the wheel alone.
    """
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)
    shutil.copytree(ROOT / "examples", source / "examples", ignore=ignore)
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                    str(source)], check=True, capture_output=True)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    [wheel] = wheels.glob("affidavit-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True)
    return venv


@pytest.mark.slow
def test_readme_using_it_runs_step_by_step_from_a_wheel(tmp_path: Path) -> None:
    venv = _install_wheel(tmp_path)
    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AFFIDAVIT_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run(["python", "-c", "import affidavit, affidavit_examples; "
                            "print(affidavit.__file__); print(affidavit_examples.__file__)"],
                           cwd=work, env=env, check=True, capture_output=True, text=True)
    assert all(line.startswith(str(venv)) for line in where.stdout.split()), where.stdout

    record_id: str | None = None
    for line in using_it_commands(README.read_text(encoding="utf-8")):
        argv = shlex.split(line, comments=True)
        if "<record-id>" in argv:
            assert record_id is not None, f"{line}: no earlier step printed a ledger record id"
            argv = [record_id if a == "<record-id>" else a for a in argv]
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stderr}"
        if "--json" in argv:
            data = json.loads(done.stdout)
            if isinstance(data, dict) and data.get("ledger_record_id"):
                record_id = data["ledger_record_id"]
