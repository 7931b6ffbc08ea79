"""Bad input is quarantined with a reason code; the rest of the run is committed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.e2e.conftest import Run, as_json


def make_corpus(root: Path) -> None:
    root.mkdir()
    (root / "good.md").write_text("---\ntitle: Good\nacl: ['*']\n---\n# Good\n\nFine text.\n",
                                  encoding="utf-8")
    (root / "also-good.txt").write_text("Plain words that are fine.\n", encoding="utf-8")
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    (root / "broken-front.md").write_text("---\ntitle: [unclosed\n---\nBody\n", encoding="utf-8")
    (root / "sidecar.txt").write_text("Text with a bad sidecar.\n", encoding="utf-8")
    (root / "sidecar.txt.meta.yaml").write_text("acl: !!python/object:os.system ls\n",
                                                encoding="utf-8")
    (root / "empty.md").write_text("", encoding="utf-8")
    (root / "huge.txt").write_text("x " * 600_000, encoding="utf-8")
    (root / "program.exe").write_bytes(b"MZ\x90\x00binary")


def test_each_bad_document_is_quarantined_with_its_reason(run: Run, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    (tmp_path / "affidavit.toml").write_text(
        '[acl]\ndefault = ["*"]\n[ingest]\nmax_document_bytes = 1000000\n', encoding="utf-8")
    run("init")
    code, out, _ = run("ingest", str(corpus), "--json")
    summary = as_json(out)
    assert code == 3
    assert summary["status"] == "DEGRADED"
    reasons = {q["alias"]: q["reason_code"] for q in summary["quarantined"]}
    assert reasons == {
        "latin1.txt": "UNDECODABLE_TEXT",
        "broken-front.md": "MALFORMED_FRONT_MATTER",
        "sidecar.txt": "MALFORMED_SIDECAR",
        "empty.md": "EMPTY_DOCUMENT",
        "huge.txt": "TOO_LARGE",
        "program.exe": "UNSUPPORTED_FORMAT",
    }
    assert summary["ingested"] == 2
    db = sqlite3.connect(tmp_path / ".affidavit" / "affidavit.db")
    aliases = {row[0] for row in db.execute("SELECT alias FROM versions")}
    assert aliases == {"good.md", "also-good.txt"}
    assert db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 2
    assert db.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0] == 6
    db.close()
    hits = as_json(run("search", "fine", "--as", "user:x", "--json")[1])
    assert {h["title"] for h in hits} <= {"Good", "also-good.txt", "Plain words that are fine."}


def test_a_missing_path_is_a_usage_error(run: Run) -> None:
    run("init")
    code, _, err = run("ingest", "does-not-exist")
    assert code == 2 and "no such file" in err


def test_no_acl_and_no_default_means_nobody_and_ingest_says_so(run: Run, tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nSecret-less text.\n", encoding="utf-8")
    run("init")
    code, out, _ = run("ingest", str(corpus))
    assert code == 0
    assert "nobody can read it" in out
    assert as_json(run("search", "text", "--as", "user:x", "--json")[1]) == []


def test_front_matter_and_sidecar_must_agree_on_access(run: Run, tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.md").write_text("---\nacl: ['*']\n---\n# A\n\nText.\n", encoding="utf-8")
    (corpus / "a.md.meta.yaml").write_text("acl: ['group:hr#member']\n", encoding="utf-8")
    run("init")
    code, out, _ = run("ingest", str(corpus), "--json")
    assert code == 3
    assert as_json(out)["quarantined"][0]["reason_code"] == "CONFLICTING_METADATA"
