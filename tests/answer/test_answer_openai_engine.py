"""The engine with the openai provider over real HTTP, on the example corpus: no request
body the server receives carries RESTRICTED text, and every answer is ledgered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from answer_fake_openai import FakeOpenAI, chat
from tests.e2e.test_invariants import ingest_examples

from affidavit.config.settings import ProviderSettings, Settings
from affidavit.engine.query import Engine
from affidavit.llm.guard import normalize_for_match
from affidavit.llm.openai import OpenAIProvider
from affidavit.store import SQLiteStore


@pytest.fixture
def examples(tmp_path: Path) -> Iterator[tuple[SQLiteStore, Settings]]:
    store, settings = ingest_examples(tmp_path / "a.db")
    yield store, settings  # type: ignore[misc]
    store.close()


@pytest.mark.invariant
def test_invariant_no_restricted_text_in_any_request_body_over_http(
        examples: tuple[SQLiteStore, Settings], fake_openai: FakeOpenAI) -> None:
    store, settings = examples
    fake_openai.defaults["/v1/chat/completions"] = chat("Nothing to add.")
    provider = OpenAIProvider(ProviderSettings(base_url=fake_openai.base_url, model="m"),
                              sleep=lambda _: None)
    engine = Engine(store, settings, provider=provider)
    restricted = [h.text for h in engine.search("user:grace.liu",
                                                "Project Lighthouse Calder Vale board minutes")
                  if h.label == "RESTRICTED"]
    assert restricted
    results = [engine.ask("user:grace.liu", question) for question in (
        "What did the Board decide about Project Lighthouse?",
        "Calder Vale acquisition offer price", "board minutes October 2024",
        "What is the nightly hotel limit?")]
    assert all(r.ledger_record_id for r in results)
    bodies = [normalize_for_match(" ".join(_strings(seen.body))) for seen in fake_openai.requests]
    assert bodies, "at least one question reached the model"
    for text in restricted:
        sentence = normalize_for_match(text)[:40]
        assert all(sentence not in body for body in bodies)


def _strings(value: Any) -> list[str]:
    """Every string inside a decoded JSON body (message contents, prompts)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
