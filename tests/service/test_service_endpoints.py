"""Every endpoint of the service core, over HTTP, as the credential's principal."""

from __future__ import annotations

from typing import Any

from tests.service.conftest import Deployment, RunningService, sse_events

TRAVEL = "Who approves hotel bookings for review trips?"


def ask(service: RunningService, key: str, query: str = TRAVEL, **body: Any) -> Any:
    with service.client(key) as client:
        response = client.post("/v1/query", json={"query": query, **body})
    assert response.status_code == 200, response.text
    return response.json()


def test_query_returns_a_governed_answer_with_its_ledger_record(
        service: RunningService, deployment: Deployment) -> None:
    data = ask(service, deployment.keys["sam"])
    assert data["output_state"] in {"AUTHORIZED", "DEGRADED", "NARRATIVE_ONLY"}, data
    assert data["citations"] and data["claims"]
    assert data["request_id"].startswith("req-") and data["ledger_record_hash"]
    with service.client(deployment.keys["sam"]) as client:
        record = client.get(f"/v1/ledger/{data['request_id']}").json()
    assert record["record"]["principal"] == "user:sam"
    assert record["record_hash"] == data["ledger_record_hash"]


def test_search_returns_the_hits_of_the_cli(service: RunningService,
                                            deployment: Deployment) -> None:
    with service.client(deployment.keys["sam"]) as client:
        response = client.post("/v1/search", json={"query": "hotel bookings", "limit": 3})
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert hits and len(hits) <= 3
    assert {"chunk_id", "doc_id", "title", "text", "label", "score", "gates"} <= set(hits[0])
    assert all(hit["label"] == "INTERNAL" for hit in hits)


def test_search_hits_show_ranks_and_fused_scores_never_tenant_wide_statistics(
        service: RunningService, deployment: Deployment) -> None:
    with service.client(deployment.keys["sam"]) as client:
        hits = client.post("/v1/search", json={"query": "hotel bookings"}).json()["hits"]
    assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1))
    raw = {"lexical_score", "lexical_rank", "vector_score", "vector_rank", "fused_score"}
    assert all(not raw & set(hit) for hit in hits)


def test_stream_sends_tokens_then_verification_then_one_envelope(
        service: RunningService, deployment: Deployment) -> None:
    with service.client(deployment.keys["sam"]) as client, client.stream(
            "POST", "/v1/query/stream", json={"query": TRAVEL}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [e for e in sse_events(response.iter_lines()) if isinstance(e, dict)]
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "envelope" and kinds.count("envelope") == 1
    assert "token" in kinds and kinds.index("verification") > max(
        i for i, k in enumerate(kinds) if k == "token")
    final = events[-1]
    streamed = "".join(e["text"] for e in events if e["type"] == "token")
    assert final["tokens_invalidated"] is False and final["answer"] == streamed
    assert final["ledger_summary"]["record_hash"]
    assert final["request_id"] == response.headers["x-request-id"]


def test_ledger_claims_and_verify_endpoints(service: RunningService,
                                            deployment: Deployment) -> None:
    data = ask(service, deployment.keys["sam"])
    with service.client(deployment.keys["sam"]) as client:
        claims = client.get(f"/v1/ledger/{data['request_id']}/claims").json()
        verified = client.post(f"/v1/ledger/{data['request_id']}/verify")
    assert claims["withheld"] is False
    assert [c["text"] for c in claims["claims"]] == [c["text"] for c in data["claims"]]
    assert all("layers" in c and "support" in c for c in claims["claims"])
    assert verified.status_code == 200, verified.text
    assert verified.json()["passed"] is True, verified.json()


def test_someone_elses_ledger_record_reads_like_an_unknown_id(
        service: RunningService, deployment: Deployment) -> None:
    data = ask(service, deployment.keys["sam"])
    with service.client(deployment.keys["helen"]) as client:
        theirs = [client.get(f"/v1/ledger/{data['request_id']}{suffix}")
                  for suffix in ("", "/claims")]
        theirs.append(client.post(f"/v1/ledger/{data['request_id']}/verify"))
        unknown = client.get("/v1/ledger/req-00000000000000000000")
    for response in theirs:
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["type"] == unknown.json()["type"]
        assert data["answer"] not in response.text


def test_the_service_runs_sqlite_in_wal_mode(service: RunningService,
                                             deployment: Deployment) -> None:
    import sqlite3

    ask(service, deployment.keys["sam"])
    with sqlite3.connect(deployment.db) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
