"""The command line as a pipeline stage: a reader that stops early ends it quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import Run

QUIET_EXITS = (0, 141)  # success, or 128 + SIGPIPE as other tools report a closed pipe


def cli_into_closed_pipe(workdir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``affidavit ARGS`` with stdout on a real pipe whose reader has already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "affidavit.cli.main", *args], cwd=workdir,
                              stdout=write_end, stderr=subprocess.PIPE, timeout=120,
                              check=False)
    finally:
        os.close(write_end)


def test_search_into_a_closed_pipe_exits_quietly(example_workspace: Run, tmp_path: Path) -> None:
    code, out, _ = example_workspace("search", "Project Lighthouse", "--as", "user:grace.liu")
    assert code == 0 and out.strip(), "the search has hits to print"
    result = cli_into_closed_pipe(tmp_path, "search", "Project Lighthouse", "--as",
                                  "user:grace.liu")
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert result.returncode in QUIET_EXITS


def test_a_closed_pipe_does_not_hide_a_failure_exit(tmp_path: Path) -> None:
    """Only a closed pipe is quiet: a missing database still fails, with its message."""
    result = cli_into_closed_pipe(tmp_path, "search", "anything", "--as", "user:x")
    assert result.returncode not in QUIET_EXITS
    assert b"affidavit init" in result.stderr
