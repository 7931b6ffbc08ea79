"""Start-up: the command line imports only what the command run needs.

Every ``affidavit`` invocation builds the whole parser, so whatever the modules behind it
import at their top is paid by ``--help`` too. These tests pin the set of modules imported
(never a time: timings vary with the machine) in a fresh interpreter each.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Third-party libraries that cost tens to hundreds of milliseconds to import, and what a
# command that does not use them must never load.
HEAVY = ("numpy", "httpx", "pypdf", "asyncssh", "defusedxml", "cryptography", "fastapi",
         "starlette", "uvicorn", "jinja2", "llama_cpp", "tenacity", "tqdm", "rich", "yaml",
         "pydantic", "psycopg", "sentence_transformers", "torch", "opentelemetry.sdk",
         "onnxruntime", "tokenizers")
# The command implementations behind the parser: imported when their command runs.
STAGES = ("affidavit.config.settings", "affidavit.config.loader", "affidavit.engine.query",
          "affidavit.ingest.run", "affidavit.store", "affidavit.index", "affidavit.answer",
          "affidavit.extract", "affidavit.sources", "affidavit.classify", "affidavit.ledger",
          "affidavit.engine.canary", "affidavit.authz", "affidavit.audit", "affidavit.identity",
          "affidavit.service.app")

_REPORT = """
import json, sys
{body}
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _modules_after(body: str, cwd: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-c", _REPORT.format(body=body)], cwd=cwd,
                          capture_output=True, text=True, check=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules for name in names if m == name or m.startswith(name + "."))


def test_importing_the_cli_loads_no_heavy_library_and_no_command(tmp_path: Path) -> None:
    modules = _modules_after("import affidavit.cli.main", tmp_path)
    assert "affidavit.cli.main" in modules
    assert _loaded(modules, HEAVY) == []
    assert _loaded(modules, STAGES) == []


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["ingest", "--help"],
                                  ["ledger", "verify", "--help"], ["--version"],
                                  ["completion", "bash"]])
def test_help_version_and_completion_load_no_heavy_library(tmp_path: Path,
                                                            argv: list[str]) -> None:
    body = ("from affidavit.cli.main import main\n"
            f"try:\n    code = main({argv!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
            "assert code in (0, None), code")
    modules = _modules_after(body, tmp_path)
    assert _loaded(modules, HEAVY) == []
    assert _loaded(modules, STAGES) == []
    # The installed version is read (importlib.metadata) only when --version asks for it.
    assert ("importlib.metadata" in modules) == (argv == ["--version"])


def test_importing_the_package_loads_no_settings_or_stage(tmp_path: Path) -> None:
    """``import affidavit`` (every submodule import starts with it) stays small; its
    public names still resolve, on first use."""
    modules = _modules_after("import affidavit", tmp_path)
    assert _loaded(modules, HEAVY) == []
    assert _loaded(modules, STAGES) == []
    modules = _modules_after("import affidavit\nassert affidavit.Settings().tenant\n"
                             "assert affidavit.load_settings is affidavit.config.loader.load",
                             tmp_path)
    assert "affidavit.config.settings" in modules

