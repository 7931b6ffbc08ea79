"""On PostgreSQL an upload is drained by ``affidavit worker`` processes: the worker holds
a queued submission to the same rule as the service's own thread (the check is inside the
ingest): it supersedes a document only for a submitter that may read all of it and owns it
or administers the tenant."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from affidavit.ingest.supersession import SUPERSESSION_REFUSED
from affidavit.ingest.worker import Worker, WorkerOptions
from affidavit.records import node_id_for, sha256_hex
from affidavit.service import issue_key
from affidavit.store.postgres.store import PostgresStore
from tests.pg_fixture import PgCluster
from tests.service.conftest import Deployment, RunningService, build_deployment

pytestmark = pytest.mark.postgres

FORECAST = b"# forecast\n\nThe fourth quarter forecast lists item CNRY-PG-OWNER-1.\n"
TAKEOVER = b"# forecast\n\nThe fourth quarter forecast lists item CNRY-PG-TAKEN-1.\n"
META = {"classification": "FINANCIAL", "acl": ["group:finance#member"],
        "source_id": "pg-forecast"}


@pytest.fixture(scope="module")
def pg_owners(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    root = Path(tmp_path_factory.mktemp("pg-owners"))
    deployment = build_deployment(root, dsn=pg_cluster.new_database("owners"))
    store = deployment.open_store()
    try:
        tenant = deployment.settings.tenant
        deployment.keys["farid-up"] = issue_key(store, tenant, "user:farid",
                                                role="ingester").key
        deployment.keys["sam-up"] = issue_key(store, tenant, "user:sam", role="ingester").key
    finally:
        store.close()
    return deployment


def drained(service: RunningService, deployment: Deployment, key: str,
            content: bytes, metadata: dict[str, Any]) -> dict[str, Any]:
    """Upload one file, let a worker drain the queue, and return the run's final view."""
    assert deployment.dsn is not None
    with service.client(key) as client:
        started = client.post("/v1/ingest", files=[("files", ("forecast.md", content))],
                              data={"metadata": json.dumps({"forecast.md": metadata})})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        store = PostgresStore(deployment.dsn)
        try:
            Worker(store, deployment.settings, options=WorkerOptions(once=True)).run()
        finally:
            store.close()
        deadline = time.monotonic() + 30
        while (status := client.get(f"/v1/ingest/{run_id}").json())["status"] == "RUNNING":
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
    return status


def test_a_worker_does_not_let_an_upload_supersede_a_document_its_submitter_cannot_read(
        pg_owners: Deployment) -> None:
    assert pg_owners.dsn is not None
    with pg_owners.serve() as service:
        first = drained(service, pg_owners, pg_owners.keys["farid-up"], FORECAST, META)
        taken = drained(service, pg_owners, pg_owners.keys["sam-up"], TAKEOVER,
                        {**META, "classification": "INTERNAL",
                         "acl": ["group:staff#member"]})
    assert first["status"] == "COMPLETED", first
    assert [q["reason_code"] for q in taken["quarantined"]] == [SUPERSESSION_REFUSED], taken
    store = PostgresStore(pg_owners.dsn)
    try:
        tenant = pg_owners.settings.tenant
        node = node_id_for("upload", "pg-forecast")
        head = store.head(tenant, node)
        owner = store.first_submitter(tenant, node)
    finally:
        store.close()
    assert head is not None and head.raw_digest == sha256_hex(FORECAST)
    assert owner == "user:farid"
