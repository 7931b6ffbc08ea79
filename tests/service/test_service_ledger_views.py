"""Ledger endpoints show a record as its asker may see it now: evidence whose access was
withdrawn since is withheld from the record, its claims and its re-execution report."""

from __future__ import annotations

from pathlib import Path

from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from affidavit.store.protocol import RelationTuple
from tests.canary.conftest import CANARIES
from tests.service.conftest import NOW, build_deployment

CODE, WORD = CANARIES["finance/q3-results.md"]
MEMBERSHIP = RelationTuple("group:finance", "member", "user:fiona", "cli")


def test_withdrawn_access_withholds_evidence_in_every_ledger_endpoint(tmp_path: Path) -> None:
    deployment = build_deployment(tmp_path)
    tenant = deployment.settings.tenant
    store = SQLiteStore(deployment.db)
    try:
        store.add_tuple(tenant, MEMBERSHIP, at=NOW)
        key = issue_key(store, tenant, "user:fiona").key
    finally:
        store.close()
    with deployment.serve() as service, service.client(key) as client:
        asked = client.post("/v1/query", json={"query": f"What did the review of {WORD} find?"})
        request_id = asked.json()["request_id"]
        before = client.get(f"/v1/ledger/{request_id}").text
        assert CODE in asked.text and CODE in before  # readable while she is a member
        store = SQLiteStore(deployment.db)
        try:
            assert store.remove_tuple(tenant, MEMBERSHIP)
        finally:
            store.close()
        record = client.get(f"/v1/ledger/{request_id}")
        claims = client.get(f"/v1/ledger/{request_id}/claims")
        verified = client.post(f"/v1/ledger/{request_id}/verify")
    assert record.status_code == claims.status_code == verified.status_code == 200
    assert record.json()["record"]["withheld_evidence"] >= 1
    assert claims.json()["withheld"] is True and claims.json()["claims"] == []
    for response in (record, claims, verified):
        assert CODE not in response.text and WORD not in response.text.replace(
            f"What did the review of {WORD} find?", "")
