"""A small corpus with canaries, in a fresh working directory, driven through the CLI.

Each protected document carries two canaries: a code (``CNRY-...``) and a made-up word
repeated often enough to become one of the document's SIRE Included terms, so that a leak
through a derived artifact (SIRE tuples in a ledger record) shows as well as a leak of text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from affidavit.cli.main import main

Run = Callable[..., tuple[int, str, str]]

CANARIES = {
    "hr/case-017.md": ("CNRY-HR-4F2A", "grumbleflax"),
    "finance/q3-results.md": ("CNRY-FIN-9B1C", "moneywhistle"),
    "board/minutes.md": ("CNRY-BOARD-77D0", "lanternfish"),
    "legal/contracts/supplier.md": ("CNRY-LEGAL-0E5D", "quillocrat"),
}
RESTRICTED_DOC = "board/minutes.md"

DOCS = {
    "handbook.md": ("INTERNAL", ["group:staff#member"],
                    "Staff review their travel bookings every quarter. The travel desk "
                    "approves hotel bookings for every review trip."),
    "hr/case-017.md": ("PII", ["group:hr#member"], None),
    "finance/q3-results.md": ("FINANCIAL", ["group:finance#member"], None),
    "board/minutes.md": ("RESTRICTED", ["group:board#member"], None),
    "legal/contracts/supplier.md": ("CONFIDENTIAL", [], None),  # folder viewers only
}

SETTINGS = """
tenant = "canary"
[authz]
tuples = [
  "group:staff#member@group:hr#member",
  "group:staff#member@group:finance#member",
  "group:staff#member@group:board#member",
  "group:staff#member@user:sam",
  "group:hr#member@user:helen",
  "group:finance#member@user:farid",
  "group:board#member@user:grace",
  "folder:legal#viewer@user:dana",
]
[grants]
"group:staff#member" = ["INTERNAL"]
"user:helen" = ["PII"]
"group:finance#member" = ["FINANCIAL"]
"group:board#member" = ["RESTRICTED", "FINANCIAL"]
"user:dana" = ["CONFIDENTIAL"]
[sire]
default_excludes = ["hipaa"]
"""


def protected_text(code: str, word: str) -> str:
    """Review prose in which the code appears once a sentence and the word five times."""
    sentences = [f"The quarterly review of {word} found item {code} open." for _ in range(5)]
    return " ".join(sentences) + " The travel review and hotel bookings were discussed."


def write_corpus(root: Path) -> None:
    for alias, (label, acl, body) in DOCS.items():
        text = body if body is not None else protected_text(*CANARIES[alias])
        path = root / alias
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nclassification: {label}\nacl: {json.dumps(acl)}\n---\n"
                        f"# {path.stem}\n\n{text}\n", encoding="utf-8")


def canaries_except(*readable: str) -> list[str]:
    """Every canary string of the documents not listed as readable."""
    return [c for alias, pair in CANARIES.items() if alias not in readable for c in pair]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Run:
    """The CLI in-process, in a working directory holding the canary corpus, ingested."""
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    write_corpus(tmp_path / "corpus")

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    assert invoke("init")[0] == 0
    code, out, err = invoke("ingest", "corpus", "--json")
    assert code == 0, out + err
    assert invoke("sire", "approve", "--all", "--by", "user:curator")[0] == 0
    return invoke


def as_json(text: str) -> Any:
    return json.loads(text)
