"""``GET /metrics`` after traffic: every metric of the set with its unit, in Prometheus text
format, for the admin role only; no query, principal or document text in it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from affidavit.observability.metrics import SPECS, prometheus_name
from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from tests.service.conftest import Deployment, RunningService, build_deployment

QUESTION = "What is the nightly hotel limit for review trips?"


@pytest.fixture(scope="module")
def metered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Deployment,
                                                                        RunningService]]:
    deployment = build_deployment(tmp_path_factory.mktemp("metrics"))
    store = SQLiteStore(deployment.db)
    try:
        deployment.keys["admin"] = issue_key(store, deployment.settings.tenant, "user:ada",
                                             role="admin").key
    finally:
        store.close()
    with deployment.serve() as running:
        yield deployment, running


def test_metrics_after_traffic_name_every_metric_with_its_unit(
        metered: tuple[Deployment, RunningService]) -> None:
    deployment, service = metered
    with service.client(deployment.keys["sam"]) as client:
        assert client.post("/v1/query", json={"query": QUESTION}).status_code == 200
        assert client.get("/metrics").status_code == 403  # not an admin
    with service.client(deployment.keys["admin"]) as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    for spec in SPECS.values():
        family = prometheus_name(spec).removesuffix("_total")
        assert f"# UNIT {family} {spec.unit}\n" in text, spec.name
        assert f"# TYPE {family} " in text, spec.name
    samples = {line.split("{")[0].split(" ")[0] for line in text.splitlines()
               if line and not line.startswith("#")}
    assert {"affidavit_stage_duration_seconds_bucket", "affidavit_answers_total",
            "affidavit_ingest_documents_total", "affidavit_ingest_quarantine_ratio",
            "affidavit_document_tokens_bucket", "affidavit_document_cost_proxy_tokens_count",
            } <= samples
    assert 'affidavit_stage="query.ask"' in text
    assert 'affidavit_output_state="' in text
    for secret in (QUESTION, "hotel", "user:sam", "user:ada"):
        assert secret not in text
