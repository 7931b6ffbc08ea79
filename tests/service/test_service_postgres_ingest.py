"""On PostgreSQL an upload is queued for ``affidavit worker`` processes, and the document
reader reads through row-level security like every other endpoint."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from affidavit.ingest.worker import Worker, WorkerOptions
from affidavit.service import issue_key
from affidavit.store.postgres.store import PostgresStore
from tests.pg_fixture import PgCluster
from tests.service.conftest import Deployment, RunningService, build_deployment

pytestmark = pytest.mark.postgres

CANARY = "CNRY-PG-UPLOAD-FIN-8"


@pytest.fixture(scope="module")
def pg_deployment(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory
                  ) -> Deployment:
    root = Path(tmp_path_factory.mktemp("pg-ingest"))
    deployment = build_deployment(root, dsn=pg_cluster.new_database("ingest"))
    store = deployment.open_store()
    try:
        deployment.keys["ingester"] = issue_key(store, deployment.settings.tenant, "user:ines",
                                                role="ingester").key
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def pg_service(pg_deployment: Deployment) -> Iterator[RunningService]:
    with pg_deployment.serve() as running:
        yield running


def test_postgres_upload_is_queued_for_workers_and_completes(
        pg_service: RunningService, pg_deployment: Deployment) -> None:
    body = f"# payments\n\nThe payment run for item {CANARY} settles on Friday.\n".encode()
    metadata = '{"pay.md": {"classification": "FINANCIAL", "acl": ["group:finance#member"]}}'
    with pg_service.client(pg_deployment.keys["ingester"]) as client:
        started = client.post("/v1/ingest", files=[("files", ("pay.md", body))],
                              data={"metadata": metadata})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        queued = client.get(f"/v1/ingest/{run_id}").json()
        assert (queued["status"], queued["queued"]) == ("RUNNING", True)
        assert pg_deployment.dsn is not None
        store = PostgresStore(pg_deployment.dsn)
        try:
            Worker(store, pg_deployment.settings, options=WorkerOptions(once=True)).run()
        finally:
            store.close()
        deadline = time.monotonic() + 30
        while (status := client.get(f"/v1/ingest/{run_id}").json())["status"] == "RUNNING":
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
    assert status["status"] == "COMPLETED" and status["summary"]["ingested"] == 1
    with pg_service.client(pg_deployment.keys["farid"]) as client:
        hits = client.post("/v1/search", json={"query": "payment run Friday"}).json()["hits"]
        doc = next(h["doc_id"] for h in hits if CANARY in h["text"])
        view = client.get(f"/v1/documents/{doc}").json()
    assert view["complete"] and CANARY in view["sections"][0]["text"]
    for who in ("sam", "olga"):
        with pg_service.client(pg_deployment.keys[who]) as client:
            response = client.get(f"/v1/documents/{doc}")
            assert response.status_code == 404 and CANARY not in response.text
