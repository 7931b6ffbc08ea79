"""A ledger that cannot be written is the store failing: ``affidavit ask`` exits 8 with
the store's message (no answer leaves without its record), while a chain that does not
verify stays the command's own verdict, exit 1. A real SQLite file whose ledger refuses
every insert (a trigger, as a full or read-only disk would)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_invariants import ingest_examples


def test_an_unwritable_ledger_makes_ask_exit_8_and_answer_nothing(tmp_path: Path) -> None:
    store, _ = ingest_examples(tmp_path / "a.db")
    store.close()
    with sqlite3.connect(tmp_path / "a.db") as conn:
        conn.execute("CREATE TRIGGER refuse_ledger BEFORE INSERT ON ledger BEGIN "
                     "SELECT RAISE(ABORT, 'disk I/O error'); END")
    conn.close()
    examples = Path(__file__).resolve().parents[2] / "examples" / "affidavit.toml"
    done = subprocess.run([sys.executable, "-m", "affidavit.cli.main", "--config", str(examples),
                           "--db", str(tmp_path / "a.db"), "ask",
                           "What is the nightly hotel limit?", "--as", "user:sam.reed"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 8, done.stderr
    assert "ledger append failed" in done.stderr and "Traceback" not in done.stderr
    assert "GBP" not in done.stdout  # no answer without its record
