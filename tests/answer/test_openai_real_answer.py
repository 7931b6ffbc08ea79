"""A self-hosted model that answers: the engine, the example corpus, and the openai provider
against llama-cpp-python's own server process on 127.0.0.1 serving SmolLM2-135M-Instruct
with a 2,048-token window (and the short prompt template, to keep the run short). The
compiled prompt is fitted into that window and the model's answer comes back, verified and
on the ledger, within a time limit.

Skipped without the ``llama`` extra and the server's dependencies; failed under CI=true."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
from tests.answer.test_openai_real_server import server  # noqa: F401  (the fixture)
from tests.e2e.test_invariants import ingest_examples

from affidavit.config.settings import ProviderSettings
from affidavit.engine.query import Engine
from affidavit.llm.openai import OpenAIProvider

pytestmark = pytest.mark.llm

TIME_LIMIT_SECONDS = 600
"""Generous for one answer on one CPU thread: the point is that an answer comes back at all
(a provider without max_tokens and a window waited on an unbounded generation)."""


def test_the_self_hosted_model_answers_within_the_window_and_time_limit(
        server: str, tmp_path: Path) -> None:  # noqa: F811
    store, settings = ingest_examples(tmp_path / "a.db")
    provider: OpenAIProvider | None = None
    try:
        provider_settings = ProviderSettings(base_url=server, model="smollm2",
                                             timeout_seconds=TIME_LIMIT_SECONDS,
                                             max_retries=0, logprobs=False, max_tokens=64,
                                             context_window=2048)
        answer = replace(settings.answer, template="cfpo-small-v1")
        provider = OpenAIProvider(provider_settings)
        engine = Engine(store, settings.replace(provider=provider_settings, answer=answer),
                        provider=provider)
        started = time.monotonic()
        result = engine.ask("user:sam.reed", "What is the nightly hotel limit in London?")
        elapsed = time.monotonic() - started
        entry = store.get_ledger(settings.tenant, result.ledger_record_id)
        assert entry is not None
        record = json.loads(entry.payload)
    finally:
        if provider is not None:
            provider.close()
        store.close()
    assert elapsed < TIME_LIMIT_SECONDS
    assert record["raw_response"].strip(), "the model returned no text"
    assert record["provider"]["name"] == "openai"
    assert record["context_budget"]["context_window"] == 2048
    assert record["context_budget"]["estimated_prompt_tokens"] + 64 <= 2048
    assert result.output_state in ("AUTHORIZED", "PARTIAL", "REQUIRES_SPEC", "BLOCKED",
                                   "NARRATIVE_ONLY")
