"""Service limits answer with problems: body size, query length, the per-key rate limit."""

from __future__ import annotations

from tests.service.conftest import Deployment


def test_a_body_over_the_limit_is_refused_with_413(deployment: Deployment) -> None:
    settings = deployment.with_settings(max_body_bytes=2_000)
    with deployment.serve(settings) as service, service.client(deployment.keys["sam"]) as client:
        response = client.post("/v1/search", json={"query": "hotel " * 1_000})
        small = client.post("/v1/search", json={"query": "hotel bookings"})
        # A body streamed without a length is counted as it arrives.
        chunked = client.post("/v1/search", content=iter([b'{"query": "', b"x" * 5_000,
                                                          b'"}']),
                              headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and chunked.status_code == 413
    assert response.json()["type"] == "urn:affidavit:problem:body-too-large"
    assert response.headers["content-type"] == "application/problem+json"
    assert small.status_code == 200


def test_a_query_over_the_length_limit_is_refused(deployment: Deployment) -> None:
    settings = deployment.with_settings(max_query_chars=40)
    with deployment.serve(settings) as service, service.client(deployment.keys["sam"]) as client:
        responses = [client.post(path, json={"query": "hotel bookings " * 5})
                     for path in ("/v1/search", "/v1/query", "/v1/query/stream")]
    for response in responses:
        assert response.status_code == 413
        assert response.json()["type"] == "urn:affidavit:problem:query-too-long"


def test_the_rate_limit_is_per_key_and_says_when_to_retry(deployment: Deployment) -> None:
    settings = deployment.with_settings(rate_limit_per_minute=3)
    with deployment.serve(settings) as service:
        with service.client(deployment.keys["sam"]) as client:
            statuses = [client.post("/v1/search", json={"query": "hotel"}).status_code
                        for _ in range(4)]
            limited = client.post("/v1/search", json={"query": "hotel"})
        with service.client(deployment.keys["helen"]) as client:
            other_key = client.post("/v1/search", json={"query": "hotel"})
    assert statuses == [200, 200, 200, 429]
    assert limited.status_code == 429
    assert limited.json()["type"] == "urn:affidavit:problem:rate-limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert other_key.status_code == 200


def test_a_malformed_body_is_a_problem_that_does_not_echo_it(deployment: Deployment) -> None:
    with deployment.serve() as service, service.client(deployment.keys["sam"]) as client:
        response = client.post("/v1/query", json={"query": 12345, "role": "CNRY-ECHO-0000"})
    assert response.status_code == 422
    assert response.json()["type"] == "urn:affidavit:problem:invalid-request"
    assert "CNRY-ECHO-0000" not in response.text
