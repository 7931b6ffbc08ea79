"""The service searches an in-memory copy of the postings on SQLite (``[service]
memory_index``, on by default): the same hits as the SQL path for every credential, and a
membership removed in the store hides a document on the very next request."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from affidavit.store.protocol import RelationTuple
from tests.canary.conftest import CANARIES
from tests.service.conftest import PEOPLE, build_deployment

QUERIES = ("hotel bookings travel review", "moneywhistle quarterly results",
           "grumbleflax case", "lanternfish board minutes", "quillocrat supplier contract")
FINANCE_CANARY = CANARIES["finance/q3-results.md"][0]
ZOE = RelationTuple("group:finance", "member", "user:zoe", "cli")


def _hits(client: httpx.Client, query: str) -> list[tuple[str, str]]:
    response = client.post("/v1/search", json={"query": query, "limit": 20})
    assert response.status_code == 200, response.text
    return [(hit["chunk_id"], hit["text"]) for hit in response.json()["hits"]]


@pytest.mark.invariant
def test_memory_index_gives_every_credential_the_sql_paths_hits(tmp_path: Path) -> None:
    deployment = build_deployment(tmp_path)
    assert deployment.settings.service.memory_index  # the default
    results: dict[bool, dict[tuple[str, str], list[tuple[str, str]]]] = {}
    for memory in (True, False):
        with deployment.serve(deployment.with_settings(memory_index=memory)) as service:
            results[memory] = {}
            for who in PEOPLE:
                with service.client(deployment.keys[who]) as client:
                    for query in QUERIES:
                        results[memory][(who, query)] = _hits(client, query)
    assert results[True] == results[False]
    # Not vacuous: someone finds something, and nobody finds what only finance may read.
    assert any(results[True].values())
    assert any(FINANCE_CANARY in text for hits in results[True].values() for _, text in hits)


@pytest.mark.invariant
def test_a_membership_removed_in_the_store_hides_the_document_on_the_next_request(
        tmp_path: Path) -> None:
    deployment = build_deployment(tmp_path)
    store = SQLiteStore(deployment.db, create=False)
    tenant = deployment.settings.tenant
    store.add_tuple(tenant, ZOE, at="2026-01-01T00:00:00+00:00")
    key = issue_key(store, tenant, "user:zoe").key
    try:
        with deployment.serve() as service, service.client(key) as client:
            query = "moneywhistle quarterly results"
            assert any(FINANCE_CANARY in text for _, text in _hits(client, query))
            assert store.remove_tuple(tenant, ZOE)
            assert not any(FINANCE_CANARY in text for _, text in _hits(client, query))
            store.add_tuple(tenant, ZOE, at="2026-01-01T00:00:01+00:00")
            assert any(FINANCE_CANARY in text for _, text in _hits(client, query))
    finally:
        store.close()
