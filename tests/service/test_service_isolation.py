"""Tenant isolation, bodies that try to name someone else, and the canaries of the
permissions suite checked through every endpoint of the HTTP surface."""

from __future__ import annotations

import pytest

from tests.canary.conftest import CANARIES, RESTRICTED_DOC, canaries_except
from tests.service.conftest import OTHER_CANARY, Deployment, RunningService, sse_events

QUESTIONS = ["What did the quarterly review find open?",
             "Which items were open in the hotel bookings review?"]
# Search answers never echo the query, so probes may name the canary words themselves.
SEARCHES = ["quarterly review item open", *(word for pair in CANARIES.values() for word in pair)]
IMPERSONATION = {"principal": "user:grace", "as": "user:grace", "as_principal": "user:grace",
                 "tenant": "other", "tenant_id": "other", "org_id": "other",
                 "user": "user:grace", "groups": ["board", "finance"]}


def every_response(service: RunningService, key: str) -> list[str]:
    """The bodies of every endpoint for every question, as ``key`` sees them."""
    bodies: list[str] = []
    with service.client(key) as client:
        for probe in SEARCHES:
            bodies.append(client.post("/v1/search", json={"query": probe}).text)
        for question in QUESTIONS:
            body = {"query": question}
            asked = client.post("/v1/query", json=body)
            bodies.append(asked.text)
            with client.stream("POST", "/v1/query/stream", json=body) as streamed:
                bodies.append("".join(streamed.iter_text()))
            request_id = asked.json()["request_id"]
            bodies.append(client.get(f"/v1/ledger/{request_id}").text)
            bodies.append(client.get(f"/v1/ledger/{request_id}/claims").text)
            bodies.append(client.post(f"/v1/ledger/{request_id}/verify").text)
    return bodies


READABLE = {"sam": [], "helen": ["hr/case-017.md"], "farid": ["finance/q3-results.md"],
            "dana": ["legal/contracts/supplier.md"], "nobody": [], "olga": [],
            "grace": [RESTRICTED_DOC]}


@pytest.mark.invariant
@pytest.mark.parametrize("who", sorted(READABLE))
def test_no_canary_reaches_a_credential_that_may_not_read_it(
        service: RunningService, deployment: Deployment, who: str) -> None:
    bodies = every_response(service, deployment.keys[who])
    forbidden = canaries_except(*READABLE[who])
    if who != "olga":
        forbidden.append(OTHER_CANARY)
    for body in bodies:
        leaked = [c for c in forbidden if c in body]
        assert not leaked, f"{who} received {leaked}"
    # The probes do reach what the credential may read: the check above is not vacuous.
    for doc in READABLE[who]:
        assert any(CANARIES[doc][0] in body for body in bodies), f"{who} cannot find {doc}"


@pytest.mark.invariant
def test_restricted_text_never_appears_in_an_answer_even_to_its_reader(
        service: RunningService, deployment: Deployment) -> None:
    code, word = CANARIES[RESTRICTED_DOC]
    with service.client(deployment.keys["grace"]) as client:
        found = client.post("/v1/search", json={"query": f"quarterly review {word}"})
        asked = client.post("/v1/query", json={"query": f"What did the review of {word} find?"})
        with client.stream("POST", "/v1/query/stream",
                           json={"query": f"What did the review of {word} find?"}) as streamed:
            events = "".join(streamed.iter_text())
    assert code in found.text  # authorized people may still find it
    assert code not in asked.text and code not in events


def test_a_body_naming_another_principal_or_tenant_is_refused_by_name(
        service: RunningService, deployment: Deployment) -> None:
    # Who asks comes from the credential; a body that names anyone is refused, not obeyed
    # and not silently dropped either.
    with service.client(deployment.keys["nobody"]) as client:
        refused = [client.post(path, json={"query": QUESTIONS[0], **IMPERSONATION})
                   for path in ("/v1/search", "/v1/query", "/v1/query/stream")]
        asked = client.post("/v1/query", json={"query": QUESTIONS[0]}).json()
        record = client.get(f"/v1/ledger/{asked['request_id']}").json()["record"]
    for response in refused:
        assert response.status_code == 422
        assert set(response.json()["unknown_fields"]) == set(IMPERSONATION)
        assert not [c for c in [*canaries_except(), OTHER_CANARY] if c in response.text]
    assert record["principal"] == "user:nobody"
    assert record["authz"]["tenant"] == deployment.settings.tenant


def test_the_tenant_comes_from_the_credential(service: RunningService,
                                              deployment: Deployment) -> None:
    query = {"query": "quarterly review of travel bookings hotel"}
    with service.client(deployment.keys["olga"]) as client:
        theirs = client.post("/v1/search", json=query).text
    with service.client(deployment.keys["sam@other"]) as client:
        same_name_other_tenant = client.post("/v1/search", json=query).text
    with service.client(deployment.keys["sam"]) as client:
        home = client.post("/v1/search", json=query).text
    assert OTHER_CANARY in theirs and OTHER_CANARY in same_name_other_tenant
    assert OTHER_CANARY not in home


def test_an_id_from_another_tenant_reads_like_an_unknown_id(
        service: RunningService, deployment: Deployment) -> None:
    with service.client(deployment.keys["sam@other"]) as client:
        other = client.post("/v1/query", json={"query": "Who approves hotel bookings?"}).json()
    with service.client(deployment.keys["sam"]) as client:
        answers = [client.get(f"/v1/ledger/{other['request_id']}"),
                   client.get(f"/v1/ledger/{other['request_id']}/claims"),
                   client.post(f"/v1/ledger/{other['request_id']}/verify")]
        unknown = client.get("/v1/ledger/req-ffffffffffffffffffff")
    for response in answers:
        assert response.status_code == 404
        assert response.json()["type"] == unknown.json()["type"]
        assert set(response.json()) == set(unknown.json())


def test_stream_events_parse_for_every_credential(service: RunningService,
                                                  deployment: Deployment) -> None:
    with service.client(deployment.keys["olga"]) as client, client.stream(
            "POST", "/v1/query/stream", json={"query": "Who approves hotel bookings?"}) as r:
        events = [e for e in sse_events(r.iter_lines()) if isinstance(e, dict)]
    assert events[-1]["type"] == "envelope"
