"""A vetted FAQ answer is verified like any answer: against the current text of the sources
it was vetted against, citing them with their locators, and only while they have an ACTIVE
SIRE. An edited source withholds the entry; an entry re-stamped without being re-read is
caught by the verifier and names its sources. Real CLI, real SQLite file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from affidavit.cli.main import main

POLICY = ("---\nsource_id: travel-1\ntitle: Travel policy\nacl: [\"*\"]\n---\n# Travel\n\n"
          "## Hotels\n\nThe nightly hotel limit in London is GBP 185.\n")
OPPOSITE = POLICY.replace("GBP 185", "GBP 150")
QUESTION = "What is the nightly hotel limit in London?"
VETTED = "The nightly hotel limit in London is GBP 185."
SETTINGS = '[grants]\n"*" = ["INTERNAL"]\n\n[answer]\nfaq_file = "faq.toml"\n'


def _faq(root: Path, answer: str, text: str) -> None:
    digest = hashlib.sha256(text.encode()).hexdigest()
    (root / "faq.toml").write_text(
        f'[[entries]]\nquestion = "{QUESTION}"\nanswer = "{answer}"\nsources = ["travel-1"]\n'
        f'vetted_against = {{ "travel-1" = "{digest}" }}\n', encoding="utf-8")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    main(list(argv))
    return capsys.readouterr().out


def _ask(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    out = _cli(capsys, "ask", QUESTION, "--as", "user:rita", "--json")
    answer: dict[str, object] = json.loads(out)
    return answer


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "travel.md").write_text(POLICY, encoding="utf-8")
    return tmp_path


def test_a_vetted_answer_is_verified_and_cites_its_source(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _faq(root, VETTED, POLICY)
    _cli(capsys, "init")
    _cli(capsys, "ingest", "corpus", "--quiet")
    # Not approved yet: the entry does not answer from a source without an ACTIVE SIRE.
    assert "FAQ_SHORT_CIRCUIT" not in _ask(capsys)["reasons"]  # type: ignore[operator]
    _cli(capsys, "sire", "approve", "--all", "--by", "tester")
    answer = _ask(capsys)
    assert answer["output_state"] == "AUTHORIZED", answer
    assert answer["reasons"][0] == "FAQ_SHORT_CIRCUIT"  # type: ignore[index]
    (citation,) = answer["citations"]  # type: ignore[misc]
    assert citation["title"] == "Travel policy" and citation["locator"].startswith("travel.md")


def test_an_edited_source_is_not_answered_authorized_from_the_old_entry(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _faq(root, VETTED, POLICY)
    _cli(capsys, "init")
    _cli(capsys, "ingest", "corpus", "--quiet")
    _cli(capsys, "sire", "approve", "--all", "--by", "tester")
    (root / "corpus" / "travel.md").write_text(OPPOSITE, encoding="utf-8")
    _cli(capsys, "ingest", "corpus", "--quiet")
    _cli(capsys, "sire", "approve", "--all", "--by", "tester")
    answer = _ask(capsys)
    assert "FAQ_SHORT_CIRCUIT" not in answer["reasons"]  # type: ignore[operator]
    assert "185" not in str(answer["answer"])
    # Re-stamped against the new bytes without being re-read: the verifier catches it.
    _faq(root, VETTED, OPPOSITE)
    answer = _ask(capsys)
    assert answer["reasons"][0] == "FAQ_SHORT_CIRCUIT"  # type: ignore[index]
    assert answer["output_state"] != "AUTHORIZED", answer
    assert "185" not in str(answer["answer"])
    assert [c["title"] for c in answer["citations"]] == ["Travel policy"]  # type: ignore[union-attr]
