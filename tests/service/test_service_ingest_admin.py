"""Ingestion runs, administration and SIRE review over HTTP, each behind its role; the
acting principal (an approver, a releaser) always comes from the credential."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from tests.service.conftest import NOW, Deployment, RunningService, build_deployment

UPLOAD_CANARY = "CNRY-UPLOAD-FIN-42"
UPLOAD = ("# supplier payments\n\nThe supplier payment run for item "
          f"{UPLOAD_CANARY} settles on Friday.\n").encode()
NOTE = b"# rota\n\nThe printer rota for the third floor changes in spring.\n"


@pytest.fixture(scope="module")
def admin_deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    deployment = build_deployment(tmp_path_factory.mktemp("admin"))
    store = SQLiteStore(deployment.db)
    tenant = deployment.settings.tenant
    try:
        for name, principal, role in (("admin", "user:ada", "admin"),
                                      ("ingester", "user:ines", "ingester"),
                                      ("reviewer", "user:rita", "reviewer"),
                                      ("reviewer-sam", "user:sam", "reviewer"),
                                      ("other-admin", "user:otto", "admin")):
            target = "other" if name == "other-admin" else tenant
            deployment.keys[name] = issue_key(store, target, principal, role=role).key
        store.grant(tenant, "user:rita", ["INTERNAL"], at=NOW)
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def admin_service(admin_deployment: Deployment) -> Iterator[RunningService]:
    with admin_deployment.serve() as running:
        yield running


def upload(client: httpx.Client, files: dict[str, bytes],
           metadata: dict[str, Any]) -> httpx.Response:
    return client.post("/v1/ingest", files=[("files", (n, c)) for n, c in files.items()],
                       data={"metadata": json.dumps(metadata)})


def wait_for_run(client: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        status = client.get(f"/v1/ingest/{run_id}")
        assert status.status_code == 200, status.text
        body: dict[str, Any] = status.json()
        if body["status"] != "RUNNING" or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def test_upload_returns_a_run_id_at_once_and_the_run_completes(
        admin_service: RunningService, admin_deployment: Deployment) -> None:
    keys = admin_deployment.keys
    metadata = {"payments.md": {"classification": "FINANCIAL",
                                "acl": ["group:finance#member", "user:rita", "user:sam"]},
                "rota.md": {"classification": "INTERNAL", "acl": ["group:staff#member"]}}
    with admin_service.client(keys["ingester"]) as client:
        started = upload(client, {"payments.md": UPLOAD, "rota.md": NOTE}, metadata)
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        final = wait_for_run(client, run_id)
        boundary = client.get(f"/v1/ingest/{run_id}/boundary")
    assert final["status"] == "COMPLETED", final
    assert final["summary"]["ingested"] == 2
    assert boundary.status_code == 200 and boundary.json()["dlq"] == []
    with admin_service.client(keys["farid"]) as client:
        hits = client.post("/v1/search", json={"query": "supplier payment run"}).json()["hits"]
    assert any(UPLOAD_CANARY in h["text"] for h in hits)
    # The upload's declared label holds: a staff member without FINANCIAL finds nothing.
    with admin_service.client(keys["sam"]) as client:
        body = client.post("/v1/search", json={"query": "supplier payment run"}).text
    assert UPLOAD_CANARY not in body


def test_a_quarantined_upload_makes_the_run_degraded_with_its_reason(
        admin_service: RunningService, admin_deployment: Deployment) -> None:
    with admin_service.client(admin_deployment.keys["admin"]) as client:
        started = upload(client, {"bad.md": NOTE}, {"bad.md": {"classification": "NOPE"}})
        assert started.status_code == 202, started.text
        final = wait_for_run(client, started.json()["run_id"])
        assert final["status"] == "DEGRADED"
        assert final["quarantined"][0]["reason_code"]
        dlq = client.get(f"/v1/ingest/{final['run_id']}/boundary").json()["dlq"]
        assert [d["alias"] for d in dlq] == ["upload/bad.md"]


def test_a_source_url_other_than_https_or_sftp_is_refused(
        admin_service: RunningService, admin_deployment: Deployment) -> None:
    with admin_service.client(admin_deployment.keys["ingester"]) as client:
        for source in ("file:///etc/passwd", "/etc", "http://127.0.0.1/x"):
            response = client.post("/v1/ingest", json={"source": source})
            assert response.status_code == 422, response.text
            assert response.json()["reason_code"] == "UNSUPPORTED_SCHEME"


ADMIN_CALLS = [("GET", "/v1/admin/authz", None), ("GET", "/v1/admin/keys", None),
               ("POST", "/v1/admin/keys", {"principal": "user:eve", "role": "admin"}),
               ("POST", "/v1/admin/authz/tuples", {"tuple": "group:board#member@user:sam"}),
               ("POST", "/v1/admin/authz/grants", {"subject": "user:sam",
                                                   "labels": ["RESTRICTED"]})]
INGEST_CALLS = [("GET", "/v1/admin/runs", None), ("GET", "/v1/admin/quarantine", None),
                ("POST", "/v1/ingest", {"source": "https://example.org/"})]
REVIEW_CALLS = [("GET", "/v1/review/sire", None)]


@pytest.mark.parametrize("who,calls", [
    ("sam", ADMIN_CALLS + INGEST_CALLS + REVIEW_CALLS),
    ("ingester", ADMIN_CALLS + REVIEW_CALLS), ("reviewer", ADMIN_CALLS + INGEST_CALLS)])
def test_each_admin_endpoint_refuses_a_role_that_does_not_cover_it(
        admin_service: RunningService, admin_deployment: Deployment, who: str,
        calls: list[tuple[str, str, dict[str, Any] | None]]) -> None:
    with admin_service.client(admin_deployment.keys[who]) as client:
        for method, path, body in calls:
            response = client.request(method, path, json=body)
            assert response.status_code == 403, (who, path, response.text)
            assert response.json()["type"] == "urn:affidavit:problem:role-refused"
    with admin_service.client(admin_deployment.keys["admin"]) as client:
        tuples = client.get("/v1/admin/authz").json()["tuples"]
    assert "group:board#member@user:sam" not in {t["tuple"] for t in tuples}


def test_admin_manages_tuples_grants_and_keys_of_its_own_tenant_only(
        admin_service: RunningService, admin_deployment: Deployment) -> None:
    keys = admin_deployment.keys
    with admin_service.client(keys["admin"]) as client:
        # A body naming a tenant is refused by name: the tenant is the credential's.
        named = client.post("/v1/admin/authz/tuples",
                            json={"tuple": "group:hr#member@user:zoe", "tenant": "other"})
        assert named.status_code == 422 and named.json()["unknown_fields"] == ["tenant"]
        added = client.post("/v1/admin/authz/tuples", json={"tuple": "group:hr#member@user:zoe"})
        assert added.json() == {"tuple": "group:hr#member@user:zoe", "added": True}
        granted = client.post("/v1/admin/authz/grants",
                              json={"subject": "user:zoe", "labels": ["pii"]})
        assert granted.json()["granted"] == 1
        listing = client.get("/v1/admin/authz").json()
        assert "group:hr#member@user:zoe" in {t["tuple"] for t in listing["tuples"]}
        assert listing["grants"]["user:zoe"] == ["PII"]
        created = client.post("/v1/admin/keys", json={"principal": "user:zoe"})
        assert created.status_code == 201
        zoe = created.json()
        assert zoe["key"].startswith("afd.") and zoe["role"] == "reader"
        listed = client.get("/v1/admin/keys").json()["keys"]
        assert zoe["key_id"] in {k["key_id"] for k in listed}
        assert all("key" not in k and "secret_hash" not in k for k in listed)
    with admin_service.client(zoe["key"]) as client:
        hits = client.post("/v1/search", json={"query": "quarterly review"}).json()["hits"]
        assert any("CNRY-HR-4F2A" in h["text"] for h in hits)
    with admin_service.client(keys["admin"]) as client:
        assert client.post(f"/v1/admin/keys/{zoe['key_id']}/revoke").status_code == 200
        removed = client.post("/v1/admin/authz/tuples/remove",
                              json={"tuple": "group:hr#member@user:zoe"})
        assert removed.status_code == 200
    with admin_service.client(zoe["key"]) as client:
        assert client.post("/v1/search", json={"query": "x"}).status_code == 401
    # The other tenant's admin sees none of it.
    with admin_service.client(keys["other-admin"]) as client:
        other = client.get("/v1/admin/authz").json()
        assert "user:zoe" not in json.dumps(other)
        assert zoe["key_id"] not in client.get("/v1/admin/keys").text
        assert client.post(f"/v1/admin/keys/{zoe['key_id']}/revoke").status_code == 404


def test_approving_sire_records_the_reviewer_from_the_credential(
        admin_service: RunningService, admin_deployment: Deployment) -> None:
    keys = admin_deployment.keys
    with admin_service.client(keys["ingester"]) as client:
        started = upload(client, {"review.md": NOTE.replace(b"rota", b"review rota")},
                         {"review.md": {"classification": "INTERNAL",
                                        "acl": ["user:rita"]}})
        assert wait_for_run(client, started.json()["run_id"])["status"] == "COMPLETED"
    with admin_service.client(keys["reviewer"]) as client:
        proposed = client.get("/v1/review/sire", params={"state": "PROPOSED"}).json()["sire"]
        target = next(r for r in proposed if r["alias"] == "upload/review.md")
        approved = client.post(f"/v1/review/sire/{target['sire_id']}/approve",
                               json={"by": "user:mallory", "principal": "user:mallory"})
    assert approved.status_code == 200, approved.text
    assert approved.json()["state"] == "ACTIVE"
    assert approved.json()["approved_by"] == "user:rita"
    # A reviewer who may not read the document cannot see or approve its record.
    with admin_service.client(keys["reviewer-sam"]) as client:
        listed = client.get("/v1/review/sire").json()["sire"]
        assert target["sire_id"] not in {r["sire_id"] for r in listed}
        again = client.post(f"/v1/review/sire/{target['sire_id']}/approve")
        assert again.status_code == 404


def test_quarantine_release_names_the_caller(
        admin_service: RunningService, admin_deployment: Deployment) -> None:
    with admin_service.client(admin_deployment.keys["ingester"]) as client:
        started = upload(client, {"broken.md": b"---\nacl: [\n---\n# x\n\ntext\n"}, {})
        final = wait_for_run(client, started.json()["run_id"])
        assert final["status"] == "DEGRADED", final
        entry = client.get("/v1/admin/quarantine", params={"run_id": final["run_id"]})
        assert [q["alias"] for q in entry.json()["quarantined"]] == ["upload/broken.md"]
        named = client.post("/v1/admin/quarantine/release",
                            json={"run_id": final["run_id"], "alias": "upload/broken.md",
                                  "by": "user:mallory"})
        assert named.status_code == 422 and named.json()["unknown_fields"] == ["by"]
        released = client.post("/v1/admin/quarantine/release",
                               json={"run_id": final["run_id"], "alias": "upload/broken.md"})
        assert released.json()["released_by"] == "user:ines"
        shown = client.get(f"/v1/admin/runs/{final['run_id']}").json()
        assert shown["quarantined"][0]["released_by"] == "user:ines"


def test_ingest_runs_of_another_tenant_read_like_unknown_ones(
        admin_service: RunningService, admin_deployment: Deployment) -> None:
    keys = admin_deployment.keys
    with admin_service.client(keys["ingester"]) as client:
        run_id = upload(client, {"t.md": NOTE}, {}).json()["run_id"]
        wait_for_run(client, run_id)
    with admin_service.client(keys["other-admin"]) as client:
        theirs = client.get(f"/v1/ingest/{run_id}")
        unknown = client.get("/v1/ingest/run-0000000000000000")
        assert theirs.status_code == unknown.status_code == 404
        assert client.get(f"/v1/admin/runs/{run_id}").status_code == 404
        assert run_id not in client.get("/v1/admin/runs").text


def test_no_canary_reaches_review_or_admin_views_of_a_credential_not_granted_it(
        admin_service: RunningService, admin_deployment: Deployment) -> None:
    forbidden = ["CNRY-BOARD-77D0", "lanternfish", "CNRY-FIN-9B1C", "moneywhistle",
                 UPLOAD_CANARY, "CNRY-HR-4F2A", "grumbleflax"]
    keys = admin_deployment.keys
    bodies: list[str] = []
    with admin_service.client(keys["reviewer-sam"]) as client:
        bodies += [client.get("/v1/review/sire").text,
                   client.get("/v1/review/sire", params={"state": "ACTIVE"}).text]
    with admin_service.client(keys["ingester"]) as client:
        runs = client.get("/v1/admin/runs").json()["runs"]
        bodies.append(json.dumps(runs))
        for run in runs:
            bodies += [client.get(f"/v1/admin/runs/{run['run_id']}").text,
                       client.get(f"/v1/ingest/{run['run_id']}").text,
                       client.get(f"/v1/ingest/{run['run_id']}/boundary").text]
        bodies.append(client.get("/v1/admin/quarantine", params={"all": True}).text)
    for body in bodies:
        leaked = [c for c in forbidden if c.casefold() in body.casefold()]
        assert not leaked, leaked
    assert len(bodies) > 4
