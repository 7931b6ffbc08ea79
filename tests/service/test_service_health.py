"""``/healthz``, ``/readyz`` and ``affidavit doctor``: a real service on 127.0.0.1, a real
SQLite file, a scripted model server for the provider check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from affidavit.config import loader as config
from affidavit.store import SQLiteStore
from tests.service.conftest import Deployment, running_service
from tests.service.model_server import ModelScript, model_server


def _doctor(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "affidavit.cli.main", "doctor", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1"})


def test_healthz_and_readyz_need_no_credentials_and_reveal_no_corpus(
        deployment: Deployment) -> None:
    with running_service(deployment.settings, deployment.opener()) as service, \
            service.client() as client:
        health = client.get("/healthz")
        ready = client.get("/readyz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["status"] == "ready"
    assert [c["name"] for c in body["checks"]] == ["store", "ledger", "provider"]
    # names, booleans and reason codes only: no path, tenant, principal or document text
    assert set().union(*(c.keys() for c in body["checks"])) == {"name", "ok", "reason"}
    assert str(deployment.root) not in ready.text and "CNRY" not in ready.text


def test_readyz_fails_when_the_configured_model_is_unreachable(deployment: Deployment
                                                               ) -> None:
    with model_server(ModelScript()) as server:
        base_url = server.base_url
        settings = deployment.settings.replace(
            answer=deployment.settings.answer.__class__(provider="openai"),
            provider=deployment.settings.provider.__class__(base_url=base_url, model="m"))
        with running_service(settings, deployment.opener()) as service, \
                service.client() as client:
            up = client.get("/readyz")
    assert up.status_code == 200, up.text
    with running_service(settings, deployment.opener()) as service, service.client() as client:
        down = client.get("/readyz")  # the model server is gone now
    assert down.status_code == 503
    provider = next(c for c in down.json()["checks"] if c["name"] == "provider")
    assert provider == {"name": "provider", "ok": False, "reason": "PROVIDER_UNREACHABLE"}
    assert base_url not in down.text  # the host stays with the operator (doctor)


def test_readyz_fails_when_the_store_is_newer_than_this_release(tmp_path: Path) -> None:
    db = tmp_path / "newer.db"
    SQLiteStore(db).close()
    import sqlite3

    with sqlite3.connect(db) as conn:  # as a later release's migration would leave it
        conn.execute("INSERT INTO schema_migrations (version, name, applied_at) "
                     "VALUES (9999, 'from_a_later_release', '2030-01-01')")
    settings = config.load(None, cwd=tmp_path, overrides={"store.db": str(db)})
    with running_service(settings, lambda: SQLiteStore(db, create=False)) as service, \
            service.client() as client:
        ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["checks"][0] == {"name": "store", "ok": False,
                                         "reason": "STORE_NEWER_THAN_RELEASE"}


def test_doctor_explains_each_failure_and_exits_1(tmp_path: Path) -> None:
    missing = _doctor(tmp_path)
    assert missing.returncode == 1
    assert "STORE_MISSING" in missing.stdout and "affidavit init" in missing.stdout
    subprocess.run([sys.executable, "-m", "affidavit.cli.main", "init"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=60)
    ready = _doctor(tmp_path, "--json")
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert json.loads(ready.stdout)["ready"] is True


def test_doctor_reports_a_ledger_another_process_holds_locked(tmp_path: Path) -> None:
    import sqlite3

    subprocess.run([sys.executable, "-m", "affidavit.cli.main", "init"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=60)
    holder = sqlite3.connect(tmp_path / ".affidavit" / "affidavit.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = _doctor(tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 1 and "LEDGER_LOCKED" in result.stdout
