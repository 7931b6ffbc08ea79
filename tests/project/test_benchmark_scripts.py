"""Benchmark scripts are run by hand: their --help must work without data or models."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_every_benchmark_answers_help_with_usage(script: str) -> None:
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:"), result.stdout
    assert "Traceback" not in result.stderr
