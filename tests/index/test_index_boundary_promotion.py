"""A run whose boundary cannot be computed does not promote its chunks (spec 003 §10.1):
the run is FAILED and says why, the nodes it brought in are not served, and each node it
moved serves its previous head again, with that head's approval."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from tests.model_egress_server import RecordingModelServer, vector_for
from tests.retrieval.governed_corpus import document, governed_settings

from affidavit.config.settings import Settings, VectorSettings
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sires
from affidavit.index import HashEmbeddingBackend
from affidavit.index.boundary import (
    BOUNDARY_EMBEDDER_FAILED,
    BOUNDARY_TOO_FEW_VECTORS,
    BoundaryFailure,
)
from affidavit.index.openai_embeddings import _PROBE_TEXT
from affidavit.ingest.run import Ingestor
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore
from affidavit.store.protocol import Store

STAFF = ("group:staff#member",)
TRAVEL = "The travel policy covers the hotel and the flight for every review trip."
CRANE_OLD = "The harbour crane hire costs ninety pounds a day near the quay."
CRANE_NEW = "The harbour crane hire of Project Lighthouse now costs forty pounds a day."


def hash_settings() -> Settings:
    base = governed_settings(vectors=VectorSettings(backend="hash", dimensions=32))
    # The edit below turns the crane document RESTRICTED: never sent to the embedder.
    return base.replace(sensitivity=replace(base.sensitivity,
                                            restricted_keywords=("Project Lighthouse",)))


def served_texts(store: Store, settings: Settings) -> set[str]:
    """The chunk texts a reader with every grant finds, lexical channel only."""
    lexical = settings.replace(vectors=VectorSettings())
    hits = Engine(store, lexical).search("user:carol", "crane hire travel hotel quay pounds",
                                         limit=20)
    return {h.text for h in hits}


def run_record(store: Store, tenant: str) -> tuple[str, dict[str, Any]]:
    run = store.list_runs(tenant, limit=1)[0]
    return run.status, json.loads(run.summary_json)


def test_a_first_run_without_a_boundary_serves_nothing(tmp_path: Path) -> None:
    settings = hash_settings()
    store = SQLiteStore(tmp_path / "first.db")
    with pytest.raises(BoundaryFailure) as failed:
        Ingestor(store, settings).run([StaticSource([document("travel", TRAVEL, acl=STAFF)])])
    assert failed.value.reason_code == BOUNDARY_TOO_FEW_VECTORS
    status, summary = run_record(store, settings.tenant)
    assert status == "FAILED"
    assert summary["boundary"] == {
        "failed": BOUNDARY_TOO_FEW_VECTORS, "detail": failed.value.detail, "promoted": False,
        "restored": [], "withdrawn": ["travel.txt"], "embedded": 0}
    assert store.heads(settings.tenant) == []
    assert served_texts(store, settings) == set()


def test_an_edit_whose_boundary_fails_leaves_the_previous_head_serving(store: Store) -> None:
    settings = hash_settings()
    first = [document("travel", TRAVEL, acl=STAFF), document("crane", CRANE_OLD, acl=STAFF)]
    Ingestor(store, settings).run([StaticSource(first)])
    approve_sires(store, settings.tenant, [r.sire_id for r in store.list_sire(settings.tenant)],
                  by="user:curator", at=datetime.now(UTC).isoformat())
    before = {h.alias: h for h in store.heads(settings.tenant)}
    model = HashEmbeddingBackend(32).model_id
    vectors_before = store.head_vectors(settings.tenant, model)
    # The edit leaves one chunk vector in the corpus: no boundary can be locked.
    edited = [document("travel", TRAVEL, acl=STAFF), document("crane", CRANE_NEW, acl=STAFF)]
    with pytest.raises(BoundaryFailure) as failed:
        Ingestor(store, settings).run([StaticSource(edited)])
    assert failed.value.reason_code == BOUNDARY_TOO_FEW_VECTORS
    status, summary = run_record(store, settings.tenant)
    assert status == "FAILED" and summary["boundary"]["restored"] == ["crane.txt"]
    assert summary["boundary"]["promoted"] is False and summary["boundary"]["embedded"] == 1
    # The served vectors are again the ones the previous run locked its boundary over.
    assert store.head_vectors(settings.tenant, model) == vectors_before
    after = {h.alias: h for h in store.heads(settings.tenant)}
    assert after["travel.txt"] == before["travel.txt"]
    assert after["crane.txt"].raw_digest == before["crane.txt"].raw_digest
    texts = served_texts(store, settings)
    assert CRANE_OLD in texts and CRANE_NEW not in texts
    # The previous head's approval comes back with it: it still answers.
    states = {r.alias: r.state for r in store.list_sire(settings.tenant)}
    assert states == {"travel.txt": "ACTIVE", "crane.txt": "ACTIVE"}
    result = Engine(store, settings).ask("user:alice", "What does the crane hire cost?")
    entry = store.get_ledger(settings.tenant, result.ledger_record_id)
    assert entry is not None
    record = json.loads(entry.payload)
    assert record["boundary"]["status"] == "COMPLETED"
    assert record["plausibility"]["matches_serving_run"] is True


class EmbedderThatGoesDown(RecordingModelServer):
    """A real embeddings server on 127.0.0.1 that, once ``failing``, still answers the
    backend's dimension probe and refuses every text of the corpus (503)."""

    failing = False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        working, server = super()._handler(), self

        class Handler(working):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                if not server.failing:
                    super().do_POST()
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if body["input"] == [_PROBE_TEXT]:
                    self._reply({"data": [{"index": 0, "embedding": vector_for(_PROBE_TEXT)}]})
                    return
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


def test_an_embedder_that_fails_promotes_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "embedder.db")
    first = [document("travel", TRAVEL, acl=STAFF), document("crane", CRANE_OLD, acl=STAFF)]
    extra = document("budget", "The quarterly budget review covers every vendor invoice.",
                     acl=STAFF)
    edited = [document("travel", TRAVEL + " Receipts are kept.", acl=STAFF),
              document("crane", CRANE_OLD, acl=STAFF), extra]
    server = EmbedderThatGoesDown()
    with server.running():
        settings = governed_settings(vectors=VectorSettings(
            backend="openai", endpoint=server.base_url, model="emb"))
        Ingestor(store, settings).run([StaticSource(first)])
        before = {h.alias: h for h in store.heads(settings.tenant)}
        server.failing = True  # the next run cannot embed what it promoted
        with pytest.raises(BoundaryFailure) as failed:
            Ingestor(store, settings).run([StaticSource(edited)])
    assert failed.value.reason_code == BOUNDARY_EMBEDDER_FAILED
    status, summary = run_record(store, settings.tenant)
    assert status == "FAILED"
    assert summary["boundary"]["restored"] == ["travel.txt"]
    assert summary["boundary"]["withdrawn"] == ["budget.txt"]
    assert summary["boundary"]["embedded"] == 0  # the embedder is what failed
    after = {h.alias: h for h in store.heads(settings.tenant)}
    assert set(after) == {"travel.txt", "crane.txt"}
    assert after["travel.txt"].raw_digest == before["travel.txt"].raw_digest
    texts = served_texts(store, settings)
    assert TRAVEL in texts and TRAVEL + " Receipts are kept." not in texts


def test_a_failed_run_does_not_serve_as_the_boundary_answers_are_judged_against(
        tmp_path: Path) -> None:
    settings = hash_settings()
    store = SQLiteStore(tmp_path / "serving.db")
    first = [document("travel", TRAVEL, acl=STAFF), document("crane", CRANE_OLD, acl=STAFF)]
    good = Ingestor(store, settings).run([StaticSource(first)])
    for _ in range(4):  # more failed runs since than the first look back covers
        with pytest.raises(BoundaryFailure):
            Ingestor(store, settings).run([StaticSource([document("crane", CRANE_NEW,
                                                                  acl=STAFF)])])
    approve_sires(store, settings.tenant, [r.sire_id for r in store.list_sire(settings.tenant)],
                  by="user:curator", at=datetime.now(UTC).isoformat())
    result = Engine(store, settings).ask("user:alice", "What does the crane hire cost?")
    entry = store.get_ledger(settings.tenant, result.ledger_record_id)
    assert entry is not None
    assert json.loads(entry.payload)["boundary"]["run_id"] == good.run_id


def test_a_run_that_promotes_nothing_is_not_failed_for_want_of_vectors(tmp_path: Path) -> None:
    settings = hash_settings()
    store = SQLiteStore(tmp_path / "idle.db")
    only_restricted = [document("crane", CRANE_NEW, acl=STAFF)]
    with pytest.raises(BoundaryFailure):
        Ingestor(store, settings).run([StaticSource(only_restricted)])
    # Nothing is served and nothing changes: an empty run has nothing to take back.
    summary = Ingestor(store, settings).run([StaticSource([])])
    assert summary.status == "COMPLETED" and summary.boundary["digest"] is None



def test_a_requalification_in_a_failed_run_is_kept_not_withdrawn(tmp_path: Path) -> None:
    plain = governed_settings(vectors=VectorSettings(backend="hash", dimensions=32))
    store = SQLiteStore(tmp_path / "requalified.db")
    docs = [document("travel", TRAVEL, acl=STAFF), document("crane", CRANE_OLD, acl=STAFF)]
    Ingestor(store, plain).run([StaticSource(docs)])
    # A new keyword rule makes the crane document RESTRICTED: requalified at the next run
    # from its stored bytes, it leaves one vector, and that run cannot lock a boundary.
    stricter = plain.replace(sensitivity=replace(plain.sensitivity,
                                                 restricted_keywords=("harbour crane",)))
    with pytest.raises(BoundaryFailure) as failed:
        Ingestor(store, stricter).run([StaticSource(docs)])
    assert failed.value.reason_code == BOUNDARY_TOO_FEW_VECTORS
    _, summary = run_record(store, plain.tenant)
    assert summary["boundary"]["restored"] == summary["boundary"]["withdrawn"] == []
    labels = {h.alias: {c.label for c in store.version_chunks(plain.tenant, h.version_id)}
              for h in store.heads(plain.tenant)}
    # Still served, and never again with the label of the old policy.
    assert labels == {"travel.txt": {"INTERNAL"}, "crane.txt": {"RESTRICTED"}}
