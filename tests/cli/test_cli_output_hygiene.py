"""What the command line prints is text for a terminal, never instructions to it.

File names, titles and text come from documents; an escape sequence, a carriage return or
a bidi override in any of them reaches stdout and stderr only as a visible ``\\uXXXX``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.cli.main import main
from affidavit.cli.terminal import neutralize_controls
from tests.e2e.conftest import Run

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                    "\u2066-\u2069\u2028\u2029]")
HOSTILE_NAME = "budget\x1b]0;owned\x07\x1b[2J\r\x9b31m.md"
OVERRIDE_TITLE = "Budget \u202egpj.exe\u202c lighthouse"


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    front = '---\nacl: ["*"]\nclassification: PUBLIC\n---\n'
    (root / HOSTILE_NAME).write_text(
        f"{front}The lighthouse budget is 40 units per night.\n", encoding="utf-8")
    (root / "override.md").write_text(
        f"{front}# {OVERRIDE_TITLE}\n\nThe lighthouse lamp costs 12 units.\n", encoding="utf-8")
    (root / "bad\x1b[8mhidden.md").write_bytes(b"\xff\xfe not utf-8")
    return root


def _assert_clean(*outputs: str) -> None:
    for output in outputs:
        assert not UNSAFE.search(output), repr(UNSAFE.findall(output))


def test_cli_output_neutralises_control_and_bidi_characters_from_documents(
        run: Run, tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    assert run("init")[0] == 0
    code, out, err = run("ingest", str(root), "--progress")
    assert code == 3  # the undecodable file is quarantined, and named in the output
    _assert_clean(out, err)
    assert "bad\\u001b[8mhidden.md" in out
    run("sire", "approve", "--all", "--by", "tester")
    for args in (("search", "lighthouse"), ("search", "lighthouse", "--explain"),
                 ("ask", "What does the lighthouse cost?"), ("quarantine", "list")):
        code, out, err = run(*args, *(("--as", "user:anyone") if args[0] in
                                      ("search", "ask") else ()))
        assert code == 0, err
        _assert_clean(out, err)
    code, out, err = run("search", "lighthouse", "--as", "user:anyone", "--json")
    _assert_clean(out, err)
    hits = json.loads(out)  # still valid JSON, and it decodes to the original strings
    assert OVERRIDE_TITLE in {hit["title"] for hit in hits}
    assert any("\x1b" in hit["locator"] or "\x1b" in hit["source_id"] for hit in hits)


def test_usage_errors_echoing_arguments_are_neutralised(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["search", "x", "--as", "user:anyone", "--bogus\x1b[31m"])
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and "--bogus\\u001b[31m" in err
    _assert_clean(out, err)


@given(text=st.text())
def test_neutralised_json_decodes_to_the_same_value(text: str) -> None:
    encoded = neutralize_controls(json.dumps({"t": text}, ensure_ascii=False))
    assert not UNSAFE.search(encoded)
    assert json.loads(encoded) == {"t": text}


def test_newline_and_tab_are_kept_as_layout() -> None:
    assert neutralize_controls("a\tb\nc\rd\x1b") == "a\tb\nc\\u000dd\\u001b"
