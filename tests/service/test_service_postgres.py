"""The service on PostgreSQL: keys resolve under row-level security, the tenant comes from
the credential, and the canaries stay where they belong."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.canary.conftest import CANARIES, canaries_except
from tests.pg_fixture import PgCluster
from tests.service.conftest import OTHER_CANARY, Deployment, RunningService, build_deployment

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pg_deployment(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory
                  ) -> Deployment:
    root = Path(tmp_path_factory.mktemp("pg-service"))
    return build_deployment(root, dsn=pg_cluster.new_database("service"))


@pytest.fixture(scope="module")
def pg_service(pg_deployment: Deployment) -> Iterator[RunningService]:
    with pg_deployment.serve() as running:
        yield running


def test_postgres_query_is_ledgered_and_readable_by_its_asker_only(
        pg_service: RunningService, pg_deployment: Deployment) -> None:
    with pg_service.client(pg_deployment.keys["sam"]) as client:
        asked = client.post("/v1/query", json={"query": "Who approves hotel bookings?"})
        assert asked.status_code == 200, asked.text
        request_id = asked.json()["request_id"]
        mine = client.get(f"/v1/ledger/{request_id}")
    with pg_service.client(pg_deployment.keys["sam@other"]) as client:
        other_tenant = client.get(f"/v1/ledger/{request_id}")
    assert mine.status_code == 200 and mine.json()["record"]["principal"] == "user:sam"
    assert other_tenant.status_code == 404


def test_postgres_search_is_tenant_and_permission_scoped(
        pg_service: RunningService, pg_deployment: Deployment) -> None:
    probes = ["quarterly review item open", *(w for pair in CANARIES.values() for w in pair)]
    seen: dict[str, str] = {}
    for who in ("helen", "olga", "sam"):
        with pg_service.client(pg_deployment.keys[who]) as client:
            seen[who] = " ".join(client.post("/v1/search", json={"query": q}).text
                                 for q in probes)
    assert CANARIES["hr/case-017.md"][0] in seen["helen"]
    assert not [c for c in [*canaries_except("hr/case-017.md"), OTHER_CANARY]
                if c in seen["helen"]]
    assert OTHER_CANARY in seen["olga"]
    assert not [c for c in canaries_except() if c in seen["olga"]]
    assert not [c for c in [*canaries_except(), OTHER_CANARY] if c in seen["sam"]]


def test_postgres_rejects_a_key_moved_to_another_tenant(
        pg_service: RunningService, pg_deployment: Deployment) -> None:
    prefix, _, key_id, secret = pg_deployment.keys["sam"].split(".")
    moved = ".".join((prefix, pg_deployment.keys["olga"].split(".")[1], key_id, secret))
    with pg_service.client(moved) as client:
        assert client.post("/v1/search", json={"query": "hotel"}).status_code == 401
