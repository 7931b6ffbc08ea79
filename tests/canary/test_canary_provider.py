"""RESTRICTED canaries never appear in any provider call, captured at the provider boundary,
even when the asker may read the RESTRICTED document and it is the best match."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from affidavit.config.loader import load
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest, ProviderResponse
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from tests.canary.conftest import CANARIES, RESTRICTED_DOC, SETTINGS, write_corpus

NOW = "2026-01-01T00:00:00+00:00"
BOARD_CODE, BOARD_WORD = CANARIES[RESTRICTED_DOC]


class CapturingProvider:
    """Captures every request at the boundary; answers like the extractive provider, or
    with a scripted text."""

    name = "capturing"
    model_id = "capturing-1"

    def __init__(self, scripted: str | None = None) -> None:
        self.requests: list[ProviderRequest] = []
        self.scripted = scripted
        self.inner = ExtractiveProvider()

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        self.requests.append(request)
        if self.scripted is not None:
            return ProviderResponse(self.scripted, self.model_id)
        return self.inner.generate(request)

    def seen(self) -> str:
        parts: list[str] = []
        for request in self.requests:
            prompt = request.prompt
            parts.extend([prompt.text, prompt.system, prompt.user, prompt.question])
            parts.extend(f"{e.title}\n{e.text}\n{e.locator}" for e in prompt.evidence)
        return "\n".join(parts)


@pytest.fixture
def board(tmp_path: Path) -> Iterator[tuple[SQLiteStore, object]]:
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    settings = load(tmp_path / "affidavit.toml")
    write_corpus(tmp_path / "corpus")
    store = SQLiteStore(tmp_path / "canary.db")
    Ingestor(store, settings).run([LocalFolderSource(tmp_path / "corpus",
                                                     max_document_bytes=1 << 20)])
    for record in store.list_sire(settings.tenant, state="PROPOSED"):
        approve_sire(store, settings.tenant, record.sire_id, by="user:curator", at=NOW)
    yield store, settings
    store.close()


QUESTIONS = (
    "What did the quarterly review find?",
    f"What did the quarterly review of {BOARD_WORD} find?",
    "Which item is open after the quarterly review?",
    "What was discussed about travel review and hotel bookings?",
)


@pytest.mark.invariant
def test_invariant_restricted_canaries_never_reach_a_provider(board: tuple) -> None:
    store, settings = board
    provider = CapturingProvider()
    engine = Engine(store, settings, provider=provider)
    hits = engine.search("user:grace", f"{BOARD_CODE} {BOARD_WORD}", limit=10)
    assert any(BOARD_CODE in h.text and h.label == "RESTRICTED" for h in hits), \
        "the board member may find the RESTRICTED minutes by search"
    for question in QUESTIONS:
        engine.ask("user:grace", question)
    assert provider.requests, "questions were answered by the provider"
    seen = provider.seen()
    assert BOARD_CODE not in seen
    for request in provider.requests:
        assert all(e.label != "RESTRICTED" for e in request.prompt.evidence)


def test_a_restricted_citation_from_the_model_is_stripped(board: tuple) -> None:
    store, settings = board
    engine = Engine(store, settings)
    minutes = next(h for h in engine.search("user:grace", BOARD_CODE, limit=5)
                   if h.label == "RESTRICTED")
    scripted = CapturingProvider(
        scripted=f"The review found item {BOARD_CODE} open [src:{minutes.chunk_id[:8]}].")
    result = Engine(store, settings, provider=scripted).ask("user:grace", QUESTIONS[0])
    assert all(c["chunk_id"] != minutes.chunk_id for c in result.citations)
    assert BOARD_CODE not in scripted.seen()


def test_restricted_text_pasted_into_the_question_is_refused(board: tuple) -> None:
    store, settings = board
    provider = CapturingProvider()
    engine = Engine(store, settings, provider=provider)
    minutes = next(h for h in engine.search("user:grace", BOARD_CODE, limit=5)
                   if h.label == "RESTRICTED")
    pasted = minutes.text.split("\n\n", 1)[-1][:120]
    result = engine.ask("user:grace", f"Summarise this for me: {pasted}")
    assert result.output_state == "BLOCKED"
    assert provider.requests == []
    assert any("RESTRICTED" in reason for reason in result.reasons)
