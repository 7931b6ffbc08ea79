"""``POST /v1/ingest`` with a source URL: the run fetches in the background, through the
same transport (TLS verified, addresses vetted) as ``affidavit ingest URL``."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import trustme

from affidavit.config.settings import HttpsSettings
from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from tests.service.conftest import build_deployment
from tests.sources.sources_servers import HttpsServer

URL_CANARY = "CNRY-URL-7C3"
DOCUMENT = ("---\nclassification: INTERNAL\nacl: [\"group:staff#member\"]\n---\n# canteen\n\n"
            f"The canteen menu for item {URL_CANARY} changes every Monday.\n")


def wait_for_run(client: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while (status := client.get(f"/v1/ingest/{run_id}").json())["status"] == "RUNNING":
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    return dict(status)


def test_a_source_url_is_fetched_in_the_background_and_refused_addresses_stay_out(
        tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    served = tmp_path / "served"
    served.mkdir()
    (served / "canteen.md").write_text(DOCUMENT, encoding="utf-8")
    (tmp_path / "deployment").mkdir()
    deployment = build_deployment(tmp_path / "deployment")
    settings = deployment.settings.replace(https=HttpsSettings(
        ca_bundle=str(ca_file), timeout_seconds=5.0, allow_networks=("localhost",)))
    settings = settings.replace(ingest=replace(settings.ingest, fetch_attempts=1))
    store = SQLiteStore(deployment.db)
    try:
        key = issue_key(store, settings.tenant, "user:ines", role="ingester").key
    finally:
        store.close()
    with HttpsServer(served, ca) as server, deployment.serve(settings) as service:
        with service.client(key) as client:
            started = client.post("/v1/ingest", json={"source": server.url("canteen.md")})
            assert started.status_code == 202, started.text
            done = wait_for_run(client, started.json()["run_id"])
            assert done["status"] == "COMPLETED" and done["summary"]["ingested"] == 1, done
            # The loopback address itself is not allowed: nothing of it is ingested.
            refused = client.post("/v1/ingest", json={
                "source": server.url("canteen.md", host="127.0.0.1")})
            outcome = wait_for_run(client, refused.json()["run_id"])
            assert outcome["status"] == "DEGRADED", outcome
            assert outcome["summary"]["ingested"] == 0
            assert [q["reason_code"] for q in outcome["quarantined"]] == ["SSRF_REFUSED"]
        with service.client(deployment.keys["sam"]) as client:
            hits = client.post("/v1/search", json={"query": "canteen menu Monday"}).json()
        assert any(URL_CANARY in h["text"] for h in hits["hits"])
