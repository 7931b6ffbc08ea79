"""Every way a credential can fail, and what a valid one fixes: principal, tenant, role."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import APIRouter

from affidavit.service import issue_key
from affidavit.service.api.state import AdminCaller
from affidavit.store import SQLiteStore
from tests.service.conftest import Deployment, RunningService

admin_router = APIRouter()


@admin_router.get("/v1/test-admin-only")
def admin_only(caller: AdminCaller) -> dict[str, str]:
    return {"principal": caller.principal}


@pytest.fixture(scope="module")
def with_admin_route(deployment: Deployment) -> Iterator[RunningService]:
    with deployment.serve(routers=[admin_router]) as running:
        yield running


def search_status(service: RunningService, headers: dict[str, str]) -> tuple[int, Any]:
    with service.client(headers=headers) as client:
        response = client.post("/v1/search", json={"query": "hotel bookings"})
    return response.status_code, response.json()


def assert_unauthenticated(service: RunningService, headers: dict[str, str]) -> None:
    with service.client(headers=headers) as client:
        response = client.post("/v1/search", json={"query": "hotel bookings"})
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["type"] == "urn:affidavit:problem:unauthenticated"


def test_no_credential_is_refused(service: RunningService) -> None:
    assert_unauthenticated(service, {})


def test_another_scheme_is_refused(service: RunningService, deployment: Deployment) -> None:
    assert_unauthenticated(service, {"Authorization": f"Basic {deployment.keys['sam']}"})


def test_unknown_and_tampered_keys_are_refused(service: RunningService,
                                               deployment: Deployment) -> None:
    key = deployment.keys["sam"]
    prefix, tenant, key_id, secret = key.split(".")
    other_tenant = deployment.keys["olga"].split(".")[1]
    for forged in (f"{prefix}.{tenant}.{key_id}.{secret[:-1]}x",
                   f"{prefix}.{tenant}.{'0' * 16}.{secret}",
                   f"{prefix}.{other_tenant}.{key_id}.{secret}",
                   f"{prefix}.{tenant}.{key_id}", "afd.", "not-a-key-or-a-token"):
        assert_unauthenticated(service, {"Authorization": f"Bearer {forged}"})


def test_a_revoked_key_is_refused_from_the_next_request(service: RunningService,
                                                        deployment: Deployment) -> None:
    store = SQLiteStore(deployment.db)
    try:
        issued = issue_key(store, deployment.settings.tenant, "user:sam")
        assert search_status(service, {"Authorization": f"Bearer {issued.key}"})[0] == 200
        assert store.revoke_api_key(deployment.settings.tenant, issued.record.key_id, at="now")
    finally:
        store.close()
    assert_unauthenticated(service, {"Authorization": f"Bearer {issued.key}"})


def test_an_expired_key_is_refused(service: RunningService, deployment: Deployment) -> None:
    store = SQLiteStore(deployment.db)
    try:
        yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
        tomorrow = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
        expired = issue_key(store, deployment.settings.tenant, "user:sam", expires=yesterday)
        valid = issue_key(store, deployment.settings.tenant, "user:sam", expires=tomorrow)
    finally:
        store.close()
    assert_unauthenticated(service, {"Authorization": f"Bearer {expired.key}"})
    assert search_status(service, {"Authorization": f"Bearer {valid.key}"})[0] == 200


def test_only_a_salted_hash_of_the_key_is_stored(deployment: Deployment) -> None:
    secret = deployment.keys["sam"].split(".")[3]
    raw = deployment.db.read_bytes() + b"".join(
        p.read_bytes() for p in deployment.db.parent.glob("service.db-*"))
    assert secret.encode() not in raw
    store = SQLiteStore(deployment.db)
    try:
        records = store.list_api_keys(deployment.settings.tenant)
    finally:
        store.close()
    assert len({r.salt for r in records}) == len(records)
    assert all(secret not in r.secret_hash for r in records)


def test_a_role_without_the_permission_is_refused(with_admin_route: RunningService,
                                                  deployment: Deployment) -> None:
    with with_admin_route.client(deployment.keys["sam"]) as client:
        response = client.get("/v1/test-admin-only")
    assert response.status_code == 403
    assert response.json()["type"] == "urn:affidavit:problem:role-refused"
    store = SQLiteStore(deployment.db)
    try:
        admin = issue_key(store, deployment.settings.tenant, "user:root", role="admin")
    finally:
        store.close()
    with with_admin_route.client(admin.key) as client:
        assert client.get("/v1/test-admin-only").json() == {"principal": "user:root"}


def test_proxy_identity_header_is_believed_only_from_a_trusted_proxy(
        deployment: Deployment) -> None:
    from affidavit.config.settings import ProxyIdentitySettings

    header = {"X-Remote-User": "sam"}
    trusted = deployment.with_settings(proxy=ProxyIdentitySettings(
        header="X-Remote-User", trusted_proxies=("127.0.0.1",)))
    with deployment.serve(trusted) as service:
        status, data = search_status(service, header)
        assert status == 200 and data["hits"]
    untrusted = deployment.with_settings(proxy=ProxyIdentitySettings(
        header="X-Remote-User", trusted_proxies=("10.9.8.7",)))
    with deployment.serve(untrusted) as service:
        assert_unauthenticated(service, header)
    # Off by default: the header means nothing.
    with deployment.serve() as service:
        assert_unauthenticated(service, header)
