"""Recorded human decisions bind to the content they decided: a label override follows its
paragraph's text (never its position) and lapses, with a ``decision.lapse`` event shown in
review, when that text changes or goes. Real SQLite, real ingestion through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from affidavit.audit import LABEL_OVERRIDE, record_policy_event
from affidavit.cli.main import main
from affidavit.config import loader as config
from affidavit.service import create_app, issue_key
from affidavit.store import SQLiteStore

VAULT = "The codeword ironclad opens the harbour vault."
GATE = "The codeword ironclad also opens the east gate."
SETTINGS = ('[store]\ndb = "aff.db"\n\n[sensitivity]\nrestricted_keywords = ["ironclad"]\n\n'
            '[acl]\ndefault = ["user:rita"]\n\n[grants]\n"user:rita" = ["INTERNAL"]\n')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _corpus(root: Path, *paragraphs: str) -> None:
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    (root / "corpus" / "notes.md").write_text(
        "# Notes\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")


def _cli(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    capsys.readouterr()
    assert main([*args, "--config", str(root / "affidavit.toml")]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in args else out


def _labels(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """paragraph text's first words -> label, for the notes document as ingested now."""
    store = SQLiteStore(str(root / "aff.db"))
    try:
        head = next(h for h in store.heads("default") if h.alias == "notes.md")
        text = store.blob("default", head.raw_digest)
        assert text is not None
    finally:
        store.close()
    rows = _cli(root, capsys, "labels", "sources", "notes.md", "--json")
    paragraphs = ["# Notes", *text.content.decode().split("\n\n")[1:]]
    return {paragraphs[r["paragraph"]].strip(): r["label"] for r in rows}


@pytest.fixture
def root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A corpus whose second paragraph is RESTRICTED, overridden to INTERNAL and ingested."""
    root = tmp_path / "work"
    _corpus(root, "The pier opens at six.", VAULT)
    (root / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    _cli(root, capsys, "ingest", str(root / "corpus"), "--quiet")
    assert _labels(root, capsys)[VAULT] == "RESTRICTED"
    _cli(root, capsys, "labels", "override", "notes.md", "2", "INTERNAL",
         "--reason", "the vault is decommissioned", "--by", "user:admin")
    _cli(root, capsys, "ingest", str(root / "corpus"), "--quiet")
    assert _labels(root, capsys)[VAULT] == "INTERNAL"
    return root


def test_label_override_does_not_move_to_an_inserted_paragraph(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _corpus(root, "The pier opens at six.", GATE, VAULT)  # inserted above the overridden one
    _cli(root, capsys, "ingest", str(root / "corpus"), "--quiet")
    labels = _labels(root, capsys)
    assert labels[GATE] == "RESTRICTED"  # the new paragraph is not lowered
    assert labels[VAULT] == "INTERNAL"  # the decision follows the text it was made about
    assert _cli(root, capsys, "labels", "lapsed", "--json") == []


def test_label_override_lapses_when_its_paragraph_changes(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edited = VAULT.replace("vault", "vault and the armoury")
    _corpus(root, "The pier opens at six.", edited)
    _cli(root, capsys, "ingest", str(root / "corpus"), "--quiet")
    assert _labels(root, capsys)[edited] == "RESTRICTED"
    lapses = _cli(root, capsys, "labels", "lapsed", "--json")
    assert [(x["decision"], x["paragraph"], x["replaced"], x["label"], x["reason"])
            for x in lapses] == [("label.override", 2, "RESTRICTED", "INTERNAL",
                                  "content_changed")]
    assert "content_changed" in _cli(root, capsys, "labels", "lapsed")
    events = _cli(root, capsys, "audit", "list", "--json")
    assert [e["actor"] for e in events if e["kind"] == "decision.lapse"] == ["system:bindings"]
    # Lapsed for good: the old text back does not bring the decision back.
    _corpus(root, "The pier opens at six.", VAULT)
    _cli(root, capsys, "ingest", str(root / "corpus"), "--quiet")
    assert _labels(root, capsys)[VAULT] == "RESTRICTED"
    # ... and the lapse is on the console's Review page for a reviewer who reads the document.
    page = _review_page(root, "user:rita")
    assert 'data-reason="content_changed"' in page and "notes.md" in page
    assert "RESTRICTED → INTERNAL" in page
    # Permission first: a reviewer who may read nothing of the document is not shown it.
    assert 'data-reason="content_changed"' not in _review_page(root, "user:stranger")


def _review_page(root: Path, principal: str) -> str:
    """The console's Review page as a reviewer signed in as ``principal`` sees it."""
    settings = config.load(root / "affidavit.toml", cwd=root)
    store = SQLiteStore(str(root / "aff.db"))
    key = issue_key(store, "default", principal, role="reviewer").key
    store.close()
    with TestClient(create_app(settings, lambda: SQLiteStore(str(root / "aff.db")))) as client:
        login = CSRF.search(client.get("/ui/login").text)
        assert login is not None
        client.post("/ui/login", data={"csrf": login.group(1), "api_key": key})
        review = client.get("/ui/review")
        assert review.status_code == 200 and "Lapsed decisions" in review.text
        return review.text


def test_label_override_lapses_when_a_policy_change_raises_what_it_replaced(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The text is the same, but the label the override replaced is not what is detected
    # now: lowering the new label was never decided.
    (root / "affidavit.toml").write_text(
        SETTINGS.replace('["ironclad"]', '[]\n\n[sensitivity.keywords]\n'
                                         'CONFIDENTIAL = ["harbour"]'), encoding="utf-8")
    _cli(root, capsys, "ingest", str(root / "corpus"), "--quiet")
    assert _labels(root, capsys)[VAULT] == "CONFIDENTIAL"
    lapses = _cli(root, capsys, "labels", "lapsed", "--json")
    assert [x["reason"] for x in lapses] == ["label_changed"]


def test_a_label_override_recorded_by_position_lowers_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An override recorded before bindings (paragraph position only) fails closed: it
    lapses on the next derivation of its document and lowers nothing."""
    root = tmp_path / "work"
    _corpus(root, "The pier opens at six.", VAULT)
    (root / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    _cli(root, capsys, "ingest", str(root / "corpus"), "--quiet")
    store = SQLiteStore(str(root / "aff.db"))
    try:
        node = next(h.node_id for h in store.heads("default"))
        record_policy_event(store, "default", LABEL_OVERRIDE, "user:admin",
                            {"node_id": node, "paragraph": 2, "label": None},
                            {"node_id": node, "paragraph": 2, "label": "INTERNAL",
                             "reason": "recorded by position"})
    finally:
        store.close()
    _cli(root, capsys, "ingest", str(root / "corpus"), "--quiet")
    assert _labels(root, capsys)[VAULT] == "RESTRICTED"
    assert [x["reason"] for x in _cli(root, capsys, "labels", "lapsed", "--json")] == ["unbound"]
