"""Start-up of ``affidavit search``: on the defaults (SQLite, lexical index) the command
imports what a governed search needs and nothing of ingestion, answering or the vector
channel. The set of modules is pinned, never a time (timings vary with the machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.project.test_startup_imports import _REPORT, HEAVY, _loaded

# What a search on the default SQLite lexical index has no use for.
NOT_FOR_SEARCH = (*HEAVY, "affidavit.ingest.run", "affidavit.extract", "affidavit.sources",
                  "affidavit.engine.canary", "affidavit.service.app", "affidavit.llm.openai",
                  "affidavit.llm.local", "affidavit.answer.verify.nli", "affidavit.answer.faq",
                  "affidavit.index.memory", "affidavit.index.embed", "affidavit.index.vectors",
                  "affidavit.index.boundary",
                  # The answering half: prompt compiling, claims, verification, the ledger
                  # writer, SIRE proposing and term matching, the model classifier.
                  "affidavit.engine.answering", "affidavit.llm.compiler", "affidavit.llm.atoms",
                  "affidavit.answer.verify.claims_check", "affidavit.llm.guard",
                  "affidavit.engine.ledger_record",
                  "affidavit.identity.sire", "affidavit.identity.terms",
                  "affidavit.classify.model")


def test_search_on_the_lexical_default_loads_no_heavy_library(tmp_path: Path) -> None:
    """``affidavit search`` on the example corpus (SQLite, lexical: the defaults) finds
    its hits without numpy, an HTTP client, parsers or the answer providers."""
    for argv in (["init", "--example"], ["ingest", "corpus", "--quiet"]):
        done = subprocess.run([sys.executable, "-m", "affidavit.cli.main", *argv], cwd=tmp_path,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    body = ("from affidavit.cli.main import main\n"
            "code = main(['search', 'hotel limit', '--as', 'user:sam.reed'])\n"
            "assert code == 0, code")
    done = subprocess.run([sys.executable, "-c", _REPORT.format(body=body)], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    assert "Travel and Expenses Policy" in done.stdout  # the search did find its hits
    modules = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert "affidavit.engine.query" in modules
    assert _loaded(modules, NOT_FOR_SEARCH) == []
