"""A self-hosted model's window: the openai provider asks for at most ``max_tokens``, the
prompt is fitted into ``context_window`` by dropping the lowest-ranked evidence (and the
ledger says so), and a window too small for even one item fails at once, with the settings
to change. Real HTTP to a scripted server on 127.0.0.1, the example corpus in SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from answer_fake_openai import FakeOpenAI, chat
from tests.e2e.test_invariants import ingest_examples

from affidavit.config.settings import ProviderSettings, Settings
from affidavit.engine.query import Engine
from affidavit.errors import ConfigurationError
from affidavit.llm.context_budget import estimated_tokens, fit_evidence
from affidavit.llm.openai import OpenAIProvider
from affidavit.store import SQLiteStore

QUESTION = "What is the nightly hotel limit?"


@pytest.fixture
def examples(tmp_path: Path) -> Iterator[tuple[SQLiteStore, Settings]]:
    store, settings = ingest_examples(tmp_path / "a.db")
    yield store, settings  # type: ignore[misc]
    store.close()


def _engine(store: SQLiteStore, settings: Settings, fake: FakeOpenAI,
            **provider: int) -> Engine:
    provider_settings = ProviderSettings(base_url=fake.base_url, model="m", **provider)
    settings = settings.replace(provider=provider_settings)
    return Engine(store, settings, provider=OpenAIProvider(provider_settings,
                                                           sleep=lambda _: None))


def _record(store: SQLiteStore, settings: Settings, record_id: str) -> dict[str, object]:
    entry = store.get_ledger(settings.tenant, record_id)
    assert entry is not None
    payload: dict[str, object] = json.loads(entry.payload)
    return payload


def test_the_provider_asks_for_at_most_max_tokens(
        examples: tuple[SQLiteStore, Settings], fake_openai: FakeOpenAI) -> None:
    store, settings = examples
    fake_openai.defaults["/v1/chat/completions"] = chat("Nothing to add.")
    _engine(store, settings, fake_openai, max_tokens=96).ask("user:sam.reed", QUESTION)
    bodies = [r.body for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert bodies and all(b["max_tokens"] == 96 for b in bodies)


def test_lowest_ranked_evidence_is_dropped_until_prompt_and_answer_fit(
        examples: tuple[SQLiteStore, Settings], fake_openai: FakeOpenAI) -> None:
    store, settings = examples
    fake_openai.defaults["/v1/chat/completions"] = chat("Nothing to add.")
    roomy = _engine(store, settings, fake_openai, max_tokens=64).ask("user:sam.reed", QUESTION)
    everything = _record(store, settings, roomy.ledger_record_id)["evidence"]
    assert isinstance(everything, list) and len(everything) >= 3
    window = 2048
    tight = _engine(store, settings, fake_openai, max_tokens=256, context_window=window
                    ).ask("user:sam.reed", QUESTION)
    record = _record(store, settings, tight.ledger_record_id)
    budget = record["context_budget"]
    assert isinstance(budget, dict)
    assert budget["evidence_dropped"] > 0 and budget["context_window"] == window
    kept = record["evidence"]
    assert isinstance(kept, list) and len(kept) == budget["evidence_kept"]
    # the best-ranked evidence stays, in order; the prompt sent leaves room for the answer
    assert [e["src"] for e in kept] == [e["src"] for e in everything][:len(kept)]
    prompt = record["prompt"]
    assert isinstance(prompt, dict)
    assert estimated_tokens(prompt["text"]) + 256 <= window


def test_a_window_too_small_for_one_item_fails_at_once_naming_the_settings(
        examples: tuple[SQLiteStore, Settings], fake_openai: FakeOpenAI) -> None:
    store, settings = examples
    fake_openai.defaults["/v1/chat/completions"] = chat("Nothing to add.")
    engine = _engine(store, settings, fake_openai, max_tokens=200, context_window=400)
    with pytest.raises(ConfigurationError, match=r"context_window.*max_tokens"):
        engine.ask("user:sam.reed", QUESTION)
    assert not [r for r in fake_openai.requests if r.path.endswith("/chat/completions")]


def test_fit_evidence_keeps_the_longest_prefix_that_fits() -> None:
    items = ["a" * 300, "b" * 300, "c" * 300]
    kept, fitted = fit_evidence(items, "".join, context_window=300, max_tokens=100)
    assert kept == items[:2] and fitted.dropped == 1
    assert fit_evidence(items, "".join, context_window=0, max_tokens=100)[0] == items


def test_impossible_window_is_refused_at_configuration() -> None:
    with pytest.raises(ConfigurationError):
        OpenAIProvider(ProviderSettings(base_url="http://127.0.0.1:9/v1", model="m",
                                        max_tokens=512, context_window=256))
