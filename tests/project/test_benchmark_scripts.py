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


def test_beir_embedding_figure_counts_the_chunks_it_embeds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The embed step used to print '0 chunks': the ingest had already embedded them."""
    import importlib.util

    from affidavit.store import SQLiteStore

    spec = importlib.util.spec_from_file_location("beir_bench", BENCHMARKS / "beir.py")
    assert spec is not None and spec.loader is not None
    beir = importlib.util.module_from_spec(spec)
    sys.modules["beir_bench"] = beir  # dataclasses look their module up by name
    spec.loader.exec_module(beir)
    corpus = [{"_id": f"d{i}", "title": f"Title {i}", "text": f"Body {i} about topic{i}."}
              for i in range(3)]
    settings = beir.bench_settings("hash", 8)
    store = SQLiteStore(tmp_path / "beir.db")
    beir.ingest(store, settings, beir.Dataset(corpus, [], {}))
    beir.embed(store, settings)
    embed_line = next(line for line in capsys.readouterr().out.splitlines()
                      if line.startswith("embed ("))
    assert ": 3 chunks in" in embed_line, embed_line


def test_beir_times_the_full_governed_search_path_for_lexical_and_hybrid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The full path figure is Engine.search as the bench principal, and it finds chunks."""
    import importlib.util

    from affidavit.engine.query import Engine
    from affidavit.index import MemoryIndex, SQLiteSnapshotSource, make_backend
    from affidavit.store import SQLiteStore
    from affidavit.text.tokenize import Tokenizer

    spec = importlib.util.spec_from_file_location("beir_bench", BENCHMARKS / "beir.py")
    assert spec is not None and spec.loader is not None
    beir = importlib.util.module_from_spec(spec)
    sys.modules["beir_bench"] = beir
    spec.loader.exec_module(beir)
    corpus = [{"_id": f"d{i}", "title": f"Title {i}", "text": f"Body {i} about topic{i}."}
              for i in range(3)]
    settings = beir.bench_settings("hash", 8)
    store = SQLiteStore(tmp_path / "beir.db")
    data = beir.Dataset(corpus, [("q1", "topic1 body")], {"q1": {"d1": 1}})
    beir.ingest(store, settings, data)
    beir.embed(store, settings)
    memory = MemoryIndex(SQLiteSnapshotSource(store), store)
    authz = Engine(store, settings).authz_context(beir.BENCH)
    figures = beir.governed_timings(store, settings, memory,
                                    Tokenizer.from_settings(settings.lexical), authz, data,
                                    make_backend(settings.vectors))
    assert set(figures) == {"core lexical", "full lexical", "core hybrid", "full hybrid"}
    out = capsys.readouterr().out
    assert "full path [Engine.search" in out and "CPU p50" in out
    assert Engine(store, settings).search(beir.BENCH, "topic1 body", limit=3)
    store.close()
