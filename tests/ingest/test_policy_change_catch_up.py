"""Change without outage, as an operator meets it on the command line: after one RESTRICTED
keyword is added, the next command serves again every document the change does not affect,
and the newly restricted text is never served under its old label; the affected document
stays withheld until ``requalify --roll``, then only readers granted RESTRICTED see it. The
same on the service, where a background pass catches up without any command."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from affidavit.cli.main import main
from affidavit.config.loader import load
from affidavit.engine.query import Engine
from affidavit.ingest.catch_up import catch_up, stale_heads
from affidavit.store import SQLiteStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QUESTION = "What is the nightly hotel limit in London?"
PHRASE = "anchor day"  # only the remote-work policy says it
READER = "user:sam.reed"  # all staff: INTERNAL, never RESTRICTED
BOARD = "user:grace.liu"  # holds RESTRICTED

Invoke = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Invoke:
    """The CLI in-process in a working directory holding the example, ingested and approved."""
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    shutil.copy(EXAMPLES / "affidavit.toml", tmp_path / "affidavit.toml")
    assert invoke("init")[0] == 0
    assert invoke("ingest", str(EXAMPLES / "corpus"))[0] == 0
    assert invoke("sire", "approve", "--all", "--by", "tester")[0] == 0
    return invoke


def _restrict(config: Path, phrase: str) -> None:
    text = config.read_text(encoding="utf-8")
    old = 'restricted_keywords = ["Project Lighthouse"]'
    assert old in text
    config.write_text(text.replace(old, f'restricted_keywords = ["Project Lighthouse", '
                                        f'"{phrase}"]'), encoding="utf-8")


def _search(cli: Invoke, principal: str, query: str) -> tuple[list[dict[str, object]], str]:
    code, out, err = cli("search", "--as", principal, query, "--json")
    assert code == 0, err
    return json.loads(out), err


def _mentions(hits: list[dict[str, object]], phrase: str) -> bool:
    return any(phrase in str(h.get("text", "")).lower() for h in hits)


def test_a_restricted_keyword_withholds_only_what_it_touches(cli: Invoke,
                                                             tmp_path: Path) -> None:
    hits, _ = _search(cli, READER, PHRASE)
    assert _mentions(hits, PHRASE)  # served before the change

    _restrict(tmp_path / "affidavit.toml", PHRASE)
    # The next command: the newly restricted text is not served, under any label...
    hits, err = _search(cli, READER, PHRASE)
    assert not _mentions(hits, PHRASE)
    assert "documents it does not affect serve again" in err
    assert "1 documents it affects stay withheld" in err
    assert "remote-work" not in err  # a count only: --as may not read the name
    assert "Remote and Hybrid" not in err and "anchor" not in err.lower()
    hits, _ = _search(cli, BOARD, PHRASE)
    assert not _mentions(hits, PHRASE)  # ...not even to RESTRICTED readers, until derived

    # ...and every document the change does not touch answers throughout.
    code, out, err = cli("ask", "--as", READER, QUESTION, "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["output_state"] == "AUTHORIZED" and "185" in answer["answer"]
    settings = load(tmp_path / "affidavit.toml")
    store = SQLiteStore(tmp_path / ".affidavit" / "affidavit.db", create=False)
    try:
        stale = [h.alias for h in stale_heads(store, settings)]
    finally:
        store.close()
    assert stale == ["policies/remote-work-policy.md"]

    # Rolled out, the text is RESTRICTED: the board reads it, all staff do not.
    code, out, err = cli("requalify", "--roll", "--json")
    assert code == 0, err
    hits, _ = _search(cli, BOARD, PHRASE)
    assert _mentions(hits, PHRASE)
    assert {h["label"] for h in hits if PHRASE in str(h["text"]).lower()} == {"RESTRICTED"}
    hits, _ = _search(cli, READER, PHRASE)
    assert not _mentions(hits, PHRASE)


def test_a_pass_checks_a_bounded_batch_and_skips_what_it_found_affected(
        cli: Invoke, tmp_path: Path) -> None:
    _restrict(tmp_path / "affidavit.toml", PHRASE)
    settings = load(tmp_path / "affidavit.toml")
    store = SQLiteStore(tmp_path / ".affidavit" / "affidavit.db", create=False)
    try:
        total = len(stale_heads(store, settings))
        assert total > 5
        first = catch_up(store, settings, limit=5)
        assert first.stale == total and first.remaining == total - 5
        assert len(first.restamped) + len(first.affected) == 5
        affected: set[str] = set(first.affected)
        while True:
            report = catch_up(store, settings, limit=5, skip=affected)
            affected.update(report.affected)
            if not report.remaining:
                break
        assert len(affected) == 1
        assert catch_up(store, settings, skip=affected).stale == 0
        # Unaffected documents serve, by the library too.
        result = Engine(store, settings).ask(READER, QUESTION)
        assert result.output_state == "AUTHORIZED"
    finally:
        store.close()


def test_the_service_catches_up_in_the_background(cli: Invoke, tmp_path: Path) -> None:
    import asyncio

    from affidavit.service.api.catch_up_schedule import catch_up_schedule
    from affidavit.service.api.state import ServiceState
    from affidavit.store import open_store

    _restrict(tmp_path / "affidavit.toml", PHRASE)
    settings = load(tmp_path / "affidavit.toml")
    db = str(tmp_path / ".affidavit" / "affidavit.db")
    state = ServiceState(settings, lambda: open_store(db, create=False))

    async def serve_a_while() -> None:
        async with catch_up_schedule(state, interval=0.05):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if len(stale_heads(state.store, settings)) == 1:
                    return
                await asyncio.sleep(0.05)

    try:
        asyncio.run(serve_a_while())
        assert [h.alias for h in stale_heads(state.store, settings)] == [
            "policies/remote-work-policy.md"]
    finally:
        state.close()
