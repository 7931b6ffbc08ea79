"""Every admin change over HTTP is a policy event whose actor is the credential's principal,
never a name from the request body."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from affidavit.audit import verify_policy_chain
from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from tests.service.conftest import Deployment, RunningService, build_deployment


@pytest.fixture(scope="module")
def audited_deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    deployment = build_deployment(tmp_path_factory.mktemp("audit"))
    store = SQLiteStore(deployment.db)
    try:
        deployment.keys["admin"] = issue_key(store, deployment.settings.tenant, "user:ada",
                                             role="admin").key
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def audited_service(audited_deployment: Deployment) -> Iterator[RunningService]:
    with audited_deployment.serve() as running:
        yield running


def test_admin_changes_are_policy_events_by_the_caller(audited_deployment: Deployment,
                                                       audited_service: RunningService) -> None:
    calls = [("/v1/admin/authz/tuples", {"tuple": "group:board#member@user:sam"}),
             ("/v1/admin/authz/grants", {"subject": "user:sam", "labels": ["PII"]}),
             ("/v1/admin/authz/grants/revoke", {"subject": "user:sam", "labels": ["PII"]}),
             ("/v1/admin/authz/tuples/remove", {"tuple": "group:board#member@user:sam"}),
             ("/v1/admin/keys", {"principal": "user:zoe"})]
    tenant = audited_deployment.settings.tenant
    store = SQLiteStore(Path(audited_deployment.db))
    try:  # the deployment's own keys were issued (and recorded) before
        setup_seq, _ = store.policy_head(tenant)
    finally:
        store.close()
    with audited_service.client(audited_deployment.keys["admin"]) as client:
        # An "actor" in the body is refused by name: the actor is the key's principal.
        named = client.post("/v1/admin/authz/tuples",
                            json={"tuple": "group:board#member@user:sam", "actor": "user:mallory"})
        assert named.status_code == 422 and named.json()["unknown_fields"] == ["actor"]
        key_id = ""
        for path, body in calls:
            response = client.post(path, json=body)
            assert response.status_code in (200, 201), response.text
            key_id = response.json().get("key_id", key_id)
        assert client.post(f"/v1/admin/keys/{key_id}/revoke").status_code == 200
    store = SQLiteStore(Path(audited_deployment.db))
    try:
        events = list(store.iter_policy_events(tenant))
        assert verify_policy_chain(events, tenant=tenant).ok
    finally:
        store.close()
    changes = [(e.kind, e.actor) for e in events
               if e.seq > setup_seq and e.kind.startswith(("tuple.", "grant.", "api_key."))]
    assert changes == [("tuple.add", "user:ada"), ("grant.add", "user:ada"),
                       ("grant.revoke", "user:ada"), ("tuple.remove", "user:ada"),
                       ("api_key.create", "user:ada"), ("api_key.revoke", "user:ada")]
    assert all(e.actor != "user:mallory" for e in events)
