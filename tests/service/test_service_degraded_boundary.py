"""DEGRADED_BOUNDARY through the service: an answer from a degraded run says so on every
claim and never names a quarantined document; the ledger view names one only to a reader
who may read that whole document, and a file that never reached the store to nobody."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.authz import StoreAuthorizer
from affidavit.config.settings import VectorSettings
from affidavit.index.boundary import BoundaryFailure
from affidavit.ingest.run import Ingestor
from affidavit.service.api.run_views import RunScreen
from affidavit.sources import source_for
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore
from tests.retrieval.governed_corpus import document, governed_settings
from tests.service.conftest import build_deployment

QUESTION = "Which hotel bookings does the travel desk approve for a review trip?"
HIDDEN_EDIT = "finance/q3-results.md"
NEVER_STORED = "layoffs-plan-2027.md"


def test_quarantined_names_reach_only_readers_of_them(tmp_path: Path) -> None:
    deployment = build_deployment(tmp_path)
    corpus = tmp_path / "corpus"
    (corpus / HIDDEN_EDIT).write_bytes(b"\xff\xfe not text any more")  # a failed edit
    (corpus / NEVER_STORED).write_bytes(b"\xff\xfe\x00 never labelled")
    store = SQLiteStore(deployment.db)
    try:
        summary = Ingestor(store, deployment.settings).run(
            [source_for(str(corpus), deployment.settings, source_system="files")])
    finally:
        store.close()
    assert summary.status == "DEGRADED"
    with deployment.serve() as service:
        with service.client(deployment.keys["sam"]) as sam:
            asked = sam.post("/v1/query", json={"query": QUESTION})
            sams_view = sam.get(f"/v1/ledger/{asked.json()['request_id']}")
        with service.client(deployment.keys["farid"]) as farid:
            own = farid.post("/v1/query", json={"query": QUESTION})
            farids_view = farid.get(f"/v1/ledger/{own.json()['request_id']}")
    assert asked.status_code == sams_view.status_code == own.status_code == 200
    claims = asked.json()["claims"]
    assert claims and all(c["annotations"] == ["DEGRADED_BOUNDARY"] for c in claims)
    for response in (asked, sams_view):
        assert "q3-results" not in response.text and "layoffs" not in response.text
    assert "layoffs" not in own.text  # farid may read the finance document: it may answer
    boundary = sams_view.json()["record"]["boundary"]
    assert boundary["degraded"] is True and boundary["excluded"] == []
    assert boundary["annotations"] == ["DEGRADED_BOUNDARY"]
    # Farid reads the finance document (its previous version still serves): its path only.
    assert farids_view.json()["record"]["boundary"]["excluded"] == [HIDDEN_EDIT]
    assert "layoffs" not in farids_view.text


def test_a_run_view_names_what_a_failed_boundary_took_back_only_to_who_answers_for_it(
        tmp_path: Path) -> None:
    settings = governed_settings(vectors=VectorSettings(backend="hash", dimensions=32))
    store = SQLiteStore(tmp_path / "taken-back.db")
    secret = document("merger-memo", "The board minutes record the merger vote.",
                      acl=("group:board#member",))
    with pytest.raises(BoundaryFailure):
        Ingestor(store, settings).run([StaticSource([secret])])
    run = store.list_runs(settings.tenant, limit=1)[0]
    summary = json.loads(run.summary_json)
    assert summary["boundary"]["withdrawn"] == ["merger-memo.txt"]
    alice = StoreAuthorizer(store, settings).context_for(settings.tenant, "user:alice")
    shown, _ = RunScreen(store, alice, "user:alice").run_view(summary, [], "user:mallory")
    assert "merger-memo" not in json.dumps(shown)
    assert shown["boundary"]["failed"] == "BOUNDARY_TOO_FEW_VECTORS"
    own, _ = RunScreen(store, alice, "user:alice").run_view(summary, [], "user:alice")
    assert own["boundary"]["withdrawn"] == ["merger-memo.txt"]
