"""The streamed answer with a real (scripted) model server: think blocks stripped across
chunk boundaries, a BLOCKED envelope invalidating the tokens, a client that disconnects,
and a provider that hangs: every case ends with a complete ledger record."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from affidavit.config.settings import ProviderSettings, Settings
from affidavit.ledger.chain import verify_chain
from affidavit.store import SQLiteStore
from tests.service.conftest import Deployment, RunningService, sse_events
from tests.service.model_server import ModelScript, model_server

QUESTION = "Who approves hotel bookings for review trips?"


@contextmanager
def with_model(deployment: Deployment, script: ModelScript, *, timeout: float = 10.0,
               **service: Any) -> Iterator[RunningService]:
    with model_server(script) as model:
        base = deployment.with_settings(**service)
        settings: Settings = base.replace(
            answer=replace(base.answer, provider="openai"),
            provider=ProviderSettings(base_url=model.base_url, model="scripted",
                                      timeout_seconds=timeout, max_retries=0, logprobs=False))
        with deployment.serve(settings) as running:
            yield running


def stream(service: RunningService, key: str, question: str = QUESTION
           ) -> tuple[list[Any], str]:
    with service.client(key) as client, client.stream(
            "POST", "/v1/query/stream", json={"query": question}) as response:
        assert response.status_code == 200
        return list(sse_events(response.iter_lines())), response.headers["x-request-id"]


def ledger_record(deployment: Deployment, request_id: str, wait: float = 15.0) -> Any:
    store = SQLiteStore(deployment.db)
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            entry = store.get_ledger(deployment.settings.tenant, request_id)
            if entry is not None:
                tenant = deployment.settings.tenant
                assert verify_chain(store.iter_ledger(tenant), tenant=tenant).ok
                return entry
            time.sleep(0.1)
    finally:
        store.close()
    raise AssertionError(f"no ledger record for {request_id}")


def test_think_blocks_split_across_chunks_never_reach_the_client(
        deployment: Deployment) -> None:
    script = ModelScript(deltas=["<thi", "nk>private reasoning about", " the canary</th",
                                 "ink>The travel desk ", "approves hotel bookings."])
    with with_model(deployment, script) as service:
        events, _ = stream(service, deployment.keys["sam"])
    text = "".join(e["text"] for e in events if isinstance(e, dict) and e["type"] == "token")
    assert "private reasoning" not in text and "think" not in text
    assert text.startswith("The travel desk")


def test_a_blocked_envelope_invalidates_the_streamed_tokens(deployment: Deployment) -> None:
    script = ModelScript(deltas=["The nightly hotel limit ", "is 950 euros ",
                                 "for every review trip."])
    with with_model(deployment, script) as service:
        events, request_id = stream(service, deployment.keys["sam"],
                                    "What is the nightly hotel limit?")
    data = [e for e in events if isinstance(e, dict)]
    assert [e["type"] for e in data][-1] == "envelope"
    assert any(e["type"] == "token" for e in data)
    final = data[-1]
    assert final["output_state"] == "BLOCKED", final
    assert final["tokens_invalidated"] is True
    # no draft claims; the evidence that was there, as the caller may see it
    assert final["claims"] == []
    assert all({"src", "title", "locator"} <= set(c) for c in final["citations"])
    assert "950" not in final["answer"]
    assert any(r.startswith("CONTRADICTED") for r in final["reasons"]), final["reasons"]
    entry = ledger_record(deployment, request_id)
    assert entry.record_hash == final["ledger_summary"]["record_hash"]


def test_a_client_that_disconnects_mid_stream_still_leaves_a_complete_record(
        deployment: Deployment) -> None:
    script = ModelScript(deltas=["The travel desk ", "approves hotel ", "bookings."],
                         delay=0.6)
    with with_model(deployment, script) as service:
        with service.client(deployment.keys["sam"]) as client, client.stream(
                "POST", "/v1/query/stream", json={"query": QUESTION}) as response:
            request_id = response.headers["x-request-id"]
            for line in response.iter_lines():
                if line.startswith("data:") and '"token"' in line:
                    break  # leave after the first token; the rest is never read
        entry = ledger_record(deployment, request_id)
    record = json.loads(entry.payload)
    assert record["output_state"] and record["raw_response"].endswith("bookings.")
    assert record["request_id"] == request_id


def test_heartbeats_keep_an_idle_stream_open(deployment: Deployment) -> None:
    script = ModelScript(deltas=["The travel desk approves hotel bookings."], delay=1.2)
    with with_model(deployment, script, heartbeat_seconds=0.3) as service:
        events, _ = stream(service, deployment.keys["sam"])
    assert any(isinstance(e, str) and e.startswith(": heartbeat") for e in events)
    assert events[-1]["type"] == "envelope"


def test_a_hanging_provider_gives_a_problem_and_the_refusal_is_on_the_ledger(
        deployment: Deployment) -> None:
    with with_model(deployment, ModelScript(hang=3.0), timeout=0.5) as service, \
            service.client(deployment.keys["sam"]) as client:
        response = client.post("/v1/query", json={"query": QUESTION})
    assert response.status_code == 502
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == "urn:affidavit:problem:provider-failed"
    assert problem["output_state"] == "BLOCKED"
    entry = ledger_record(deployment, problem["request_id"])
    assert entry.record_id == problem["ledger_record_id"]


def test_the_deadline_answers_first_and_the_ledger_still_records_the_refusal(
        deployment: Deployment) -> None:
    with with_model(deployment, ModelScript(hang=4.0), timeout=1.5,
                    deadline_seconds=0.5) as service:
        with service.client(deployment.keys["sam"]) as client:
            started = time.monotonic()
            response = client.post("/v1/query", json={"query": QUESTION})
            assert time.monotonic() - started < 1.4
        assert response.status_code == 504
        problem = response.json()
        assert problem["type"] == "urn:affidavit:problem:deadline-exceeded"
        entry = ledger_record(deployment, problem["request_id"])
    record = json.loads(entry.payload)
    assert record["output_state"] == "BLOCKED"
    assert any(r.startswith("PROVIDER_FAILED") for r in record["reasons"])


def test_a_stream_past_its_deadline_ends_with_a_problem_event_and_is_still_recorded(
        deployment: Deployment) -> None:
    with with_model(deployment, ModelScript(hang=3.0), timeout=1.5,
                    deadline_seconds=0.5) as service:
        events, request_id = stream(service, deployment.keys["sam"])
        entry = ledger_record(deployment, request_id)
    data = [e for e in events if isinstance(e, dict)]
    assert [e["type"] for e in data] == ["error"]
    assert data[0]["problem"]["type"] == "urn:affidavit:problem:deadline-exceeded"
    assert data[0]["problem"]["request_id"] == request_id
    assert json.loads(entry.payload)["output_state"] == "BLOCKED"
