"""The request contract of spec 003 §8.1, over HTTP and on the command line: every field the
spec names has a defined behaviour for each of its values, recorded in the ledger, and a
field the service does not know is refused by name, never dropped.

An advisory answer (``model_role`` advisory, or ``response_mode`` narrative) is never more
than NARRATIVE_ONLY; ``inference_profile`` deep_reasoning asks the model for stability
draws; ``subject_scope`` drops evidence of sources whose ACTIVE SIRE Subject is not in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from affidavit.config.settings import ProviderSettings
from tests.e2e.conftest import Run, as_json, example_workspace, run  # noqa: F401
from tests.service.conftest import Deployment, RunningService, sse_events
from tests.service.model_server import ModelScript, model_server

TRAVEL = "Who approves hotel bookings for review trips?"
PROBLEM_JSON = "application/problem+json"


def ask(service: RunningService, key: str, **body: Any) -> dict[str, Any]:
    with service.client(key) as client:
        response = client.post("/v1/query", json={"query": TRAVEL, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def record_of(service: RunningService, key: str, request_id: str) -> dict[str, Any]:
    with service.client(key) as client:
        record: dict[str, Any] = client.get(f"/v1/ledger/{request_id}").json()["record"]
    return record


# --------------------------------------------------------------------------- unknown fields


@pytest.mark.parametrize("path", ["/v1/query", "/v1/query/stream", "/v1/search"])
@pytest.mark.parametrize("field", ["modelrole", "principal", "subject"])
def test_an_unknown_field_is_refused_with_a_problem_naming_it(
        service: RunningService, deployment: Deployment, path: str, field: str) -> None:
    with service.client(deployment.keys["sam"]) as client:
        response = client.post(path, json={"query": TRAVEL, field: "advisory"})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith(PROBLEM_JSON)
    problem = response.json()
    assert problem["type"] == "urn:affidavit:problem:invalid-request"
    assert problem["unknown_fields"] == [field]
    assert field in problem["detail"]


@pytest.mark.parametrize("field,value", [("model_role", "supreme"),
                                         ("response_mode", "poetic"),
                                         ("inference_profile", "fast"),
                                         ("subject_scope", [""])])
def test_a_value_outside_the_spec_is_refused(service: RunningService, deployment: Deployment,
                                             field: str, value: Any) -> None:
    with service.client(deployment.keys["sam"]) as client:
        response = client.post("/v1/query", json={"query": TRAVEL, field: value})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith(PROBLEM_JSON)


# --------------------------------------------------------------------------- model role, mode


def test_an_authoritative_governed_request_can_be_authorized(
        service: RunningService, deployment: Deployment) -> None:
    key = deployment.keys["sam"]
    answer = ask(service, key, model_role="authoritative", response_mode="governed",
                 inference_profile="reliability")
    assert answer["output_state"] == "AUTHORIZED", answer
    record = record_of(service, key, answer["request_id"])
    assert record["role"] == "authoritative"
    assert record["request"] == {"model_role": "authoritative", "response_mode": "governed",
                                 "inference_profile": "reliability", "subject_scope": []}


@pytest.mark.parametrize("body", [{"model_role": "advisory"},
                                  {"role": "advisory"},
                                  {"response_mode": "narrative"},
                                  {"model_role": "authoritative", "response_mode": "narrative"}])
def test_an_advisory_request_is_never_more_than_narrative_only(
        service: RunningService, deployment: Deployment, body: dict[str, str]) -> None:
    key = deployment.keys["sam"]
    answer = ask(service, key, **body)
    assert answer["output_state"] == "NARRATIVE_ONLY", answer
    assert "ADVISORY_ROLE_CEILING" in answer["reasons"]
    record = record_of(service, key, answer["request_id"])
    assert record["role"] == "advisory"
    for name, value in body.items():
        assert record["request"]["model_role" if name == "role" else name] == value


def test_model_role_and_role_that_disagree_are_refused(
        service: RunningService, deployment: Deployment) -> None:
    with service.client(deployment.keys["sam"]) as client:
        response = client.post("/v1/query", json={"query": TRAVEL, "model_role": "advisory",
                                                  "role": "authoritative"})
    assert response.status_code == 422


def test_an_advisory_stream_ends_narrative_only(
        service: RunningService, deployment: Deployment) -> None:
    with service.client(deployment.keys["sam"]) as client, client.stream(
            "POST", "/v1/query/stream", json={"query": TRAVEL, "model_role": "advisory"}) as r:
        events = [e for e in sse_events(r.iter_lines()) if isinstance(e, dict)]
    assert events[-1]["type"] == "envelope"
    assert events[-1]["output_state"] == "NARRATIVE_ONLY"


# --------------------------------------------------------------------------- subject scope


def test_a_subject_scope_drops_evidence_of_sources_outside_it(
        service: RunningService, deployment: Deployment) -> None:
    key = deployment.keys["sam"]
    unscoped = ask(service, key)
    record = record_of(service, key, unscoped["request_id"])
    subjects = sorted({sire["subject"] for sire in record["sire"].values()})
    assert subjects, record["sire"]
    outside = ask(service, key, subject_scope=["no such subject"])
    assert outside["output_state"] == "REQUIRES_SPEC" and "NO_EVIDENCE" in outside["reasons"]
    gates = record_of(service, key, outside["request_id"])["gates"]
    scope_gate = next(g for g in gates if g["gate"] == "subject_scope")
    assert scope_gate["kept"] == [] and scope_gate["dropped"]
    assert {d["reason"] for d in scope_gate["dropped"]} == {"SUBJECT_OUT_OF_SCOPE"}
    # The subjects of the evidence itself, written as a person would, keep it.
    inside = ask(service, key, subject_scope=[s.replace("_", " ").title() for s in subjects])
    assert inside["output_state"] == unscoped["output_state"], inside
    gates = record_of(service, key, inside["request_id"])["gates"]
    assert next(g for g in gates if g["gate"] == "subject_scope")["kept"]


# --------------------------------------------------------------------------- inference profile


def test_reliability_and_deep_reasoning_without_a_model_record_that_nothing_changed(
        service: RunningService, deployment: Deployment) -> None:
    key = deployment.keys["sam"]
    for profile in ("reliability", "deep_reasoning"):
        answer = ask(service, key, inference_profile=profile)
        record = record_of(service, key, answer["request_id"])
        assert record["request"]["inference_profile"] == profile
        assert record["inference_profile"]["name"] == profile
        assert record["inference_profile"]["stability_draws"] == 0
        assert record["inference_profile"]["effect"].startswith("none:")


@contextmanager
def with_model(deployment: Deployment, script: ModelScript) -> Iterator[RunningService]:
    with model_server(script) as model:
        base = deployment.settings
        settings = base.replace(
            answer=replace(base.answer, provider="openai", deep_reasoning_draws=2),
            provider=ProviderSettings(base_url=model.base_url, model="scripted",
                                      timeout_seconds=10.0, max_retries=0, logprobs=False))
        with deployment.serve(settings) as running:
            yield running


def test_deep_reasoning_asks_a_model_for_stability_draws(deployment: Deployment) -> None:
    script = ModelScript(deltas=["The travel desk approves hotel bookings for every review "
                                 "trip."])
    key = deployment.keys["sam"]
    with with_model(deployment, script) as service:
        plain = ask(service, key)
        calls_plain = len(script.requests)
        deep = ask(service, key, inference_profile="deep_reasoning")
        calls_deep = len(script.requests) - calls_plain
        plain_record = record_of(service, key, plain["request_id"])
        deep_record = record_of(service, key, deep["request_id"])
    assert calls_deep == calls_plain + 2
    assert deep_record["inference_profile"] == {
        "name": "deep_reasoning", "stability_draws": 2, "effect": "stability draws raised to 2"}
    assert "l3_stability" in deep_record["proof"]["layers_ran"]
    assert "l3_stability" not in plain_record["proof"]["layers_ran"]


# --------------------------------------------------------------------------- the CLI


def _ask(cli: Run, *options: str) -> tuple[dict[str, Any], dict[str, Any]]:
    _, out, _ = cli("ask", "What is the nightly hotel limit?", "--as", "user:sam.reed",
                    "--json", *options)
    answer = as_json(out)
    code, shown, err = cli("ledger", "show", answer["request_id"], "--as", "user:sam.reed",
                           "--json")
    assert code == 0, err
    record: dict[str, Any] = as_json(shown)["record"]
    return answer, record


@pytest.mark.parametrize("options,state", [
    ((), "AUTHORIZED"),
    (("--model-role", "authoritative", "--response-mode", "governed"), "AUTHORIZED"),
    (("--model-role", "advisory"), "NARRATIVE_ONLY"),
    (("--response-mode", "narrative"), "NARRATIVE_ONLY"),
    (("--model-role", "authoritative", "--response-mode", "narrative"), "NARRATIVE_ONLY"),
])
def test_the_cli_takes_the_model_role_and_response_mode(
        example_workspace: Run, options: tuple[str, ...], state: str) -> None:  # noqa: F811
    answer, record = _ask(example_workspace, *options)
    assert answer["output_state"] == state, answer
    assert record["role"] == ("advisory" if state == "NARRATIVE_ONLY" else "authoritative")


@pytest.mark.parametrize("profile", ["reliability", "deep_reasoning"])
def test_the_cli_takes_the_inference_profile(example_workspace: Run,  # noqa: F811
                                             profile: str) -> None:
    answer, record = _ask(example_workspace, "--inference-profile", profile)
    assert answer["output_state"] == "AUTHORIZED"
    assert record["request"]["inference_profile"] == profile
    assert record["inference_profile"]["name"] == profile


def test_the_cli_takes_a_subject_scope(example_workspace: Run) -> None:  # noqa: F811
    _, unscoped = _ask(example_workspace)
    subjects = sorted({sire["subject"] for sire in unscoped["sire"].values()})
    outside, record = _ask(example_workspace, "--subject", "no such subject")
    assert outside["output_state"] == "REQUIRES_SPEC"
    assert record["request"]["subject_scope"] == ["no such subject"]
    inside, record = _ask(example_workspace,
                          *(arg for s in subjects for arg in ("--subject", s)))
    assert inside["output_state"] == "AUTHORIZED"
    assert record["request"]["subject_scope"] == subjects
