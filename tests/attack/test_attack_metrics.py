"""Attacks on ``GET /metrics``: the values are the whole process's, every tenant's traffic
and ingestion counted together, so an admin of one tenant reading them learns when and how
much another tenant asks and ingests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from tests.service.conftest import OTHER_TENANT, Deployment, RunningService, build_deployment


@pytest.fixture(scope="module")
def metrics_deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    deployment = build_deployment(tmp_path_factory.mktemp("attack-metrics"))
    store = SQLiteStore(deployment.db)
    try:
        deployment.keys["home-admin"] = issue_key(store, deployment.settings.tenant,
                                                  "user:ada", role="admin").key
        deployment.keys["other-admin"] = issue_key(store, OTHER_TENANT, "user:otto",
                                                   role="admin").key
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def metrics_service(metrics_deployment: Deployment) -> Iterator[RunningService]:
    with metrics_deployment.serve() as running:
        yield running


def test_process_metrics_are_read_only_by_an_admin_of_the_deployments_own_tenant(
        metrics_service: RunningService, metrics_deployment: Deployment) -> None:
    keys = metrics_deployment.keys
    with metrics_service.client(keys["sam"]) as client:
        client.post("/v1/query", json={"query": "What do staff review every quarter?"})
    with metrics_service.client(keys["other-admin"]) as client:
        theirs = client.get("/metrics")
    assert theirs.status_code == 403, theirs.text
    assert "affidavit_answers_total" not in theirs.text
    with metrics_service.client(keys["home-admin"]) as client:
        ours = client.get("/metrics")
    assert ours.status_code == 200 and "affidavit_answers_total" in ours.text
