"""Uploads have owners: over the service a file name is a path, not an identity. A
submission supersedes a document only when its submitter may read all of the current head
and is its owner (the principal that first submitted it) or an administrator; an upload
without a ``source_id`` is its submitter's alone; a refusal names nothing of what it
protects; an admitted supersession is a policy event."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from affidavit.ingest.run import Ingestor
from affidavit.ingest.run import RunSummary as IngestRunSummary
from affidavit.ingest.supersession import SUPERSESSION_REFUSED, Submitter, upload_source_id
from affidavit.records import DocumentMetadata, SourceDocument, node_id_for, sha256_hex
from affidavit.service import issue_key
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore
from tests.service.conftest import NOW, Deployment, RunningService, build_deployment

STAFF = {"classification": "INTERNAL", "acl": ["group:staff#member"]}
FINANCE = {"classification": "FINANCIAL", "acl": ["group:finance#member"]}


def note(code: str) -> bytes:
    return f"# rota\n\nThe printer rota for the third floor lists item {code}.\n".encode()


@pytest.fixture(scope="module")
def owners(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    deployment = build_deployment(tmp_path_factory.mktemp("upload-owners"))
    store = SQLiteStore(deployment.db)
    try:
        tenant = deployment.settings.tenant
        for name, principal, role in (("sam", "user:sam", "ingester"),
                                      ("helen", "user:helen", "ingester"),
                                      ("farid", "user:farid", "ingester"),
                                      ("grace", "user:grace", "admin"),
                                      ("ada", "user:ada", "admin")):
            deployment.keys[f"{name}-up"] = issue_key(store, tenant, principal, role=role).key
        store.grant(tenant, "user:ada", ["INTERNAL"], at=NOW)  # ada: no document access
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def service(owners: Deployment) -> Iterator[RunningService]:
    with owners.serve() as running:
        yield running


def upload(service: RunningService, key: str, name: str, content: bytes,
           metadata: dict[str, Any]) -> dict[str, Any]:
    """Upload one file and wait for its run to finish; the run's final view."""
    with service.client(key) as client:
        started = client.post("/v1/ingest", files=[("files", (name, content))],
                              data={"metadata": json.dumps({name: metadata})})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        deadline = time.monotonic() + 60
        while True:
            body: dict[str, Any] = client.get(f"/v1/ingest/{run_id}").json()
            if body["status"] != "RUNNING" or time.monotonic() > deadline:
                return body
            time.sleep(0.05)


def head_digest(owners: Deployment, source_id: str) -> str | None:
    store = SQLiteStore(owners.db, create=False)
    try:
        head = store.head(owners.settings.tenant, node_id_for("upload", source_id))
        return None if head is None else head.raw_digest
    finally:
        store.close()


def searched(service: RunningService, key: str, query: str) -> str:
    with service.client(key) as client:
        response = client.post("/v1/search", json={"query": query})
        assert response.status_code == 200, response.text
        return response.text


def refusals(run: dict[str, Any]) -> list[tuple[str, str]]:
    return [(q["reason_code"], q["message"]) for q in run["quarantined"]]


def test_upload_is_scoped_to_its_submitter_without_a_source_id(
        service: RunningService, owners: Deployment) -> None:
    mine = upload(service, owners.keys["sam-up"], "rota.md", note("ROTA-SAM-1"), STAFF)
    theirs = upload(service, owners.keys["helen-up"], "rota.md", note("ROTA-HELEN-1"), STAFF)
    assert mine["status"] == theirs["status"] == "COMPLETED", (mine, theirs)
    # Two documents: helen's file of the same name did not replace sam's.
    assert head_digest(owners, upload_source_id("user:sam", "rota.md")) == sha256_hex(
        note("ROTA-SAM-1"))
    assert head_digest(owners, upload_source_id("user:helen", "rota.md")) == sha256_hex(
        note("ROTA-HELEN-1"))
    found = searched(service, owners.keys["sam-up"], "printer rota third floor")
    assert "ROTA-SAM-1" in found and "ROTA-HELEN-1" in found


def test_upload_cannot_supersede_a_document_its_submitter_cannot_read(
        service: RunningService, owners: Deployment) -> None:
    meta = {**FINANCE, "source_id": "q4-forecast"}
    first = upload(service, owners.keys["farid-up"], "q4.md", note("FORECAST-1"), meta)
    assert first["status"] == "COMPLETED", first
    taken = upload(service, owners.keys["sam-up"], "q4.md", note("TAKEOVER-1"),
                   {**STAFF, "source_id": "q4-forecast"})
    assert taken["status"] == "DEGRADED", taken
    assert [code for code, _ in refusals(taken)] == [SUPERSESSION_REFUSED]
    assert head_digest(owners, "q4-forecast") == sha256_hex(note("FORECAST-1"))
    # An administrator who may not read it is refused too.
    by_admin = upload(service, owners.keys["ada-up"], "q4.md", note("TAKEOVER-2"),
                      {**STAFF, "source_id": "q4-forecast"})
    assert [code for code, _ in refusals(by_admin)] == [SUPERSESSION_REFUSED]
    assert head_digest(owners, "q4-forecast") == sha256_hex(note("FORECAST-1"))


def test_upload_cannot_supersede_a_document_it_does_not_own(
        service: RunningService, owners: Deployment) -> None:
    meta = {**STAFF, "source_id": "team-rota"}
    first = upload(service, owners.keys["helen-up"], "team.md", note("TEAM-1"), meta)
    assert first["status"] == "COMPLETED", first
    # sam may read it (staff), but it is helen's.
    taken = upload(service, owners.keys["sam-up"], "team.md", note("TEAM-SAM"), meta)
    assert [code for code, _ in refusals(taken)] == [SUPERSESSION_REFUSED]
    assert head_digest(owners, "team-rota") == sha256_hex(note("TEAM-1"))
    # Its owner supersedes it, and so does an administrator who may read it.
    edited = upload(service, owners.keys["helen-up"], "team.md", note("TEAM-2"), meta)
    assert edited["status"] == "COMPLETED", edited
    assert head_digest(owners, "team-rota") == sha256_hex(note("TEAM-2"))
    admin = upload(service, owners.keys["grace-up"], "team.md", note("TEAM-3"), meta)
    assert admin["status"] == "COMPLETED", admin
    assert head_digest(owners, "team-rota") == sha256_hex(note("TEAM-3"))


def test_a_refused_supersession_reads_the_same_whatever_the_document(
        service: RunningService, owners: Deployment) -> None:
    """Unreadable or only not owned: one reason, one message, nothing of the document."""
    upload(service, owners.keys["farid-up"], "plan.md", note("PLAN-SECRET-1"),
           {**FINANCE, "source_id": "plan-a", "title": "Acquisition of Initech"})
    upload(service, owners.keys["helen-up"], "plan.md", note("PLAN-OPEN-1"),
           {**STAFF, "source_id": "plan-b", "title": "Canteen menu"})
    unreadable = upload(service, owners.keys["sam-up"], "plan.md", note("X"),
                        {**STAFF, "source_id": "plan-a"})
    not_owned = upload(service, owners.keys["sam-up"], "plan.md", note("X"),
                       {**STAFF, "source_id": "plan-b"})
    assert refusals(unreadable) == refusals(not_owned)
    assert [code for code, _ in refusals(unreadable)] == [SUPERSESSION_REFUSED]
    text = json.dumps(unreadable)
    for hidden in ("PLAN-SECRET-1", "Initech", "FINANCIAL", "user:farid", "finance"):
        assert hidden not in text


def test_supersession_is_a_policy_event(service: RunningService, owners: Deployment) -> None:
    meta = {**STAFF, "source_id": "shift-plan"}
    upload(service, owners.keys["helen-up"], "shift.md", note("SHIFT-1"), meta)
    upload(service, owners.keys["helen-up"], "shift.md", note("SHIFT-2"), meta)
    store = SQLiteStore(owners.db, create=False)
    try:
        tenant = owners.settings.tenant
        node = node_id_for("upload", "shift-plan")
        head = store.head(tenant, node)
        events = [e for e in store.iter_policy_events(tenant)
                  if e.kind == "document.supersede"
                  and json.loads(e.after_json)["node_id"] == node]
    finally:
        store.close()
    assert head is not None and len(events) == 1
    event = events[0]
    assert event.actor == "user:helen"
    assert json.loads(event.after_json)["version_id"] == head.version_id
    assert json.loads(event.before_json)["owner"] == "user:helen"
    assert json.loads(event.after_json)["as_admin"] is False
    assert "SHIFT" not in event.before_json + event.after_json


def test_a_document_an_operator_ingested_is_superseded_by_a_submitter_only_as_admin(
        tmp_path: Path, owners: Deployment) -> None:
    """No principal submitted it, so no principal owns it: over the service only an
    administrator who may read it supersedes it (the check is in the ingest itself)."""
    settings = owners.settings
    store = SQLiteStore(tmp_path / "operator.db")

    def version(code: str, submitter: Submitter | None) -> IngestRunSummary:
        body = note(code)
        document = SourceDocument("files", "rota.md", sha256_hex(body), body, "rota.md",
                                  DocumentMetadata(classification="INTERNAL",
                                                   acl=("group:staff#member",)))
        return Ingestor(store, settings).run([StaticSource([document])], submitter=submitter)

    try:
        assert version("OPERATOR-1", None).count("ingested") == 1
        refused = version("SUBMITTED-1", Submitter("user:sam"))
        assert [q["reason_code"] for q in refused.to_dict()["quarantined"]] == [
            SUPERSESSION_REFUSED]
        assert version("ADMIN-1", Submitter("user:grace", administers=True)).count(
            "ingested") == 1
        head = store.head(settings.tenant, node_id_for("files", "rota.md"))
        assert head is not None and head.raw_digest == sha256_hex(note("ADMIN-1"))
    finally:
        store.close()
