"""Attacks on the ingestion-run views (``/v1/ingest/{id}``, ``/v1/ingest/{id}/boundary``,
``/v1/admin/runs/{id}``, ``/v1/admin/quarantine``): a run names documents (aliases, source
ids, quarantine messages, the documents a policy change relabelled, the documents its
boundary left out), and a file name is derived text that carries its document's label.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from tests.service.conftest import NOW, Deployment, RunningService, build_deployment

# Paths of the canary corpus that user:sam (staff, INTERNAL only) may not read.
UNREADABLE_TO_SAM = ("board/minutes", "hr/case-017", "finance/q3-results",
                     "legal/contracts/supplier")
NOTE = b"# rota\n\nThe printer rota for the third floor changes in spring.\n"
ROTA_META = {"rota.md": {"classification": "INTERNAL", "acl": ["group:staff#member"]}}
SECRET_NAME = "acme-takeover-plan.md"


@pytest.fixture(scope="module")
def runs_deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    deployment = build_deployment(tmp_path_factory.mktemp("attack-runs"))
    store = SQLiteStore(deployment.db)
    try:
        tenant = deployment.settings.tenant
        deployment.keys["sam-ingester"] = issue_key(store, tenant, "user:sam",
                                                    role="ingester").key
        deployment.keys["admin"] = issue_key(store, tenant, "user:ada", role="admin").key
        deployment.keys["helen-ingester"] = issue_key(store, tenant, "user:helen",
                                                      role="ingester").key
        # The changed policy below labels "bookings" paragraphs PII; sam may read those.
        store.grant(tenant, "user:sam", ["PII"], at=NOW)
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def changed_policy_service(runs_deployment: Deployment) -> Iterator[RunningService]:
    """The deployment served under a sensitivity policy with one more keyword rule, which
    every document of the canary corpus matches: the next run relabels them all."""
    settings = runs_deployment.settings
    keywords = {**settings.sensitivity.keywords, "PII": ("bookings",)}
    changed = settings.replace(sensitivity=replace(settings.sensitivity, keywords=keywords))
    with runs_deployment.serve(changed) as running:
        yield running


def _upload(client: httpx.Client, files: dict[str, bytes],
            metadata: dict[str, Any]) -> str:
    started = client.post("/v1/ingest", files=[("files", (n, c)) for n, c in files.items()],
                          data={"metadata": json.dumps(metadata)})
    assert started.status_code == 202, started.text
    return str(started.json()["run_id"])


def _finished(client: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        body: dict[str, Any] = client.get(f"/v1/ingest/{run_id}").json()
        if body["status"] != "RUNNING" or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def _run_bodies(client: httpx.Client, run_id: str) -> list[str]:
    return [client.get(f"/v1/ingest/{run_id}").text,
            client.get(f"/v1/ingest/{run_id}/boundary").text,
            client.get(f"/v1/admin/runs/{run_id}").text,
            client.get("/v1/admin/quarantine", params={"all": True}).text,
            client.get("/v1/admin/quarantine", params={"run_id": run_id}).text]


def test_a_run_names_to_its_caller_only_documents_the_caller_may_read(
        changed_policy_service: RunningService, runs_deployment: Deployment) -> None:
    with changed_policy_service.client(runs_deployment.keys["sam-ingester"]) as client:
        run_id = _upload(client, {"rota.md": NOTE}, ROTA_META)
        final = _finished(client, run_id)
        bodies = _run_bodies(client, run_id)
    assert final["status"] == "COMPLETED", final
    # The relabelling this run did is named where the caller may read the document ...
    assert "handbook.md" in final["summary"]["relabelled"], final
    # ... and nowhere else.
    for body in bodies:
        leaked = [name for name in UNREADABLE_TO_SAM if name in body]
        assert not leaked, (leaked, body)


def test_a_failed_submission_is_named_only_to_the_principal_that_submitted_it(
        changed_policy_service: RunningService, runs_deployment: Deployment) -> None:
    keys = runs_deployment.keys
    broken = b"---\nacl: [\n---\n# plan\n\nThe plan.\n"
    with changed_policy_service.client(keys["admin"]) as client:
        run_id = _upload(client, {SECRET_NAME: broken}, {})
        final = _finished(client, run_id)
    assert final["status"] == "DEGRADED", final
    assert [q["alias"] for q in final["quarantined"]] == [f"upload/{SECRET_NAME}"]
    with changed_policy_service.client(keys["sam-ingester"]) as client:
        bodies = _run_bodies(client, run_id)
        runs = client.get("/v1/admin/runs").json()["runs"]
        bodies += [client.get(f"/v1/admin/runs/{r['run_id']}").text for r in runs]
    for body in bodies:
        assert "acme-takeover" not in body, body


def test_an_entry_of_a_document_the_submitter_may_not_read_shows_only_its_reason_code(
        changed_policy_service: RunningService, runs_deployment: Deployment) -> None:
    keys = runs_deployment.keys
    board_only = {"plan.md": {"classification": "INTERNAL", "acl": ["group:board#member"]}}
    with changed_policy_service.client(keys["admin"]) as client:
        first = _finished(client, _upload(client, {"plan.md": NOTE}, board_only))
    assert first["status"] == "COMPLETED", first
    # sam sends a file of the same name: it claims the board's document, and fails.
    broken = b"---\nacl: [\n---\n# plan\n\nThe plan.\n"
    with changed_policy_service.client(keys["sam-ingester"]) as client:
        final = _finished(client, _upload(client, {"plan.md": broken}, {}))
        bodies = _run_bodies(client, final["run_id"])
    assert final["status"] == "DEGRADED", final
    (entry,) = final["quarantined"]
    assert entry == {"alias": "[withheld]", "source_id": "[withheld]",
                     "reason_code": "MALFORMED_FRONT_MATTER", "message": "[withheld]"}, entry
    for body in bodies:
        assert "plan.md" not in body, body


def test_a_quarantine_entry_the_caller_may_not_see_named_cannot_be_released_by_guessing(
        changed_policy_service: RunningService, runs_deployment: Deployment) -> None:
    keys = runs_deployment.keys
    broken = b"---\nacl: [\n---\n# memo\n\nThe memo.\n"
    with changed_policy_service.client(keys["admin"]) as client:
        run_id = _finished(client, _upload(client, {"board-memo.md": broken}, {}))["run_id"]
    guess = {"run_id": run_id, "alias": "upload/board-memo.md"}
    wrong = {"run_id": run_id, "alias": "upload/other-memo.md"}
    with changed_policy_service.client(keys["sam-ingester"]) as client:
        right_guess = client.post("/v1/admin/quarantine/release", json=guess)
        wrong_guess = client.post("/v1/admin/quarantine/release", json=wrong)
    # The answer to a right guess reads like the answer to a wrong one, and releases nothing.
    assert right_guess.status_code == wrong_guess.status_code == 404, right_guess.text
    assert right_guess.json()["detail"] == wrong_guess.json()["detail"]
    with changed_policy_service.client(keys["admin"]) as client:
        entries = client.get("/v1/admin/quarantine", params={"run_id": run_id}).json()
    assert [q["alias"] for q in entries["quarantined"]] == ["upload/board-memo.md"]


def test_a_quarantine_message_quoting_refused_bytes_reaches_only_who_answers_for_the_run(
        changed_policy_service: RunningService, runs_deployment: Deployment) -> None:
    keys = runs_deployment.keys
    staff = {"notes.md": {"classification": "INTERNAL", "acl": ["group:staff#member"]}}
    with changed_policy_service.client(keys["sam-ingester"]) as client:
        _finished(client, _upload(client, {"notes.md": NOTE}, staff))
        # A new version the parser refuses; its error quotes the front matter.
        broken = b"---\ntitle: \"Zephyrcorp takeover\n---\n# notes\n\nThe notes.\n"
        final = _finished(client, _upload(client, {"notes.md": broken}, {}))
    assert final["status"] == "DEGRADED", final
    assert "Zephyrcorp" in final["quarantined"][0]["message"], "the submitter sees why"
    with changed_policy_service.client(keys["helen-ingester"]) as client:
        bodies = _run_bodies(client, final["run_id"])
        seen = client.get(f"/v1/ingest/{final['run_id']}").json()
    # helen may read the served version, so the entry is named, but not the refused bytes.
    assert [q["alias"] for q in seen["quarantined"]] == ["upload/notes.md"], seen
    for body in bodies:
        assert "Zephyrcorp" not in body, body
