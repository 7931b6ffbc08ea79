"""The exclusion gate is never a silent no-op (spec 003 §11.3): with ``[sire]
default_excludes`` empty every source's Excluded set is empty and the gate purges nothing,
so ``ingest``, ``sire list``, ``whoami`` and the service's readiness report say so, and
``[sire] require_excludes = true`` makes it an error for ingest and ask."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from tests.e2e.conftest import EXAMPLES, Run, as_json, run  # noqa: F401
from tests.service.conftest import running_service

from affidavit.config import loader as config
from affidavit.service import issue_key
from affidavit.store import SQLiteStore

NO_EXCLUDES = re.compile(r'^default_excludes = .*$', re.MULTILINE)
WARNING = "exclusion gate of tenant 'harbourline' excludes nothing"


def _settings(tmp_path: Path, *, excludes: str | None, require: bool = False) -> None:
    """The example settings with another ``default_excludes`` line (None: the example's)."""
    text = (EXAMPLES / "affidavit.toml").read_text(encoding="utf-8")
    if excludes is not None:
        text = NO_EXCLUDES.sub(f"default_excludes = {excludes}", text)
    if require:
        text = text.replace("[sire]\n", "[sire]\nrequire_excludes = true\n", 1)
    (tmp_path / "affidavit.toml").write_text(text, encoding="utf-8")


def _ingest(cli: Run, tmp_path: Path) -> tuple[int, str, str]:
    if not (tmp_path / "corpus").exists():
        shutil.copytree(EXAMPLES / "corpus", tmp_path / "corpus")
    assert cli("init")[0] == 0
    return cli("ingest", "corpus", "--quiet")


def test_an_empty_gate_is_warned_by_ingest_sire_list_and_whoami(
        run: Run, tmp_path: Path) -> None:  # noqa: F811
    _settings(tmp_path, excludes="[]")
    code, _, err = _ingest(run, tmp_path)
    assert code == 0 and WARNING in err
    assert run("sire", "approve", "--all", "--by", "user:curator")[0] == 0
    code, _, err = run("sire", "list")
    assert code == 0 and WARNING in err
    code, _, err = run("whoami", "--as", "user:sam.reed")
    assert code == 0 and WARNING in err


def test_the_example_settings_ship_an_exclusion_list_and_warn_of_nothing(
        run: Run, tmp_path: Path) -> None:  # noqa: F811
    assert config.load(EXAMPLES / "affidavit.toml", environ={}).sire.default_excludes
    _settings(tmp_path, excludes=None)
    code, _, err = _ingest(run, tmp_path)
    assert code == 0 and "excludes nothing" not in err
    assert run("sire", "approve", "--all", "--by", "user:curator")[0] == 0
    code, out, err = run("sire", "list", "--json")
    assert "excludes nothing" not in err
    assert any(record["excluded"] for record in as_json(out))


def test_require_excludes_makes_ingest_refuse_an_empty_list(
        run: Run, tmp_path: Path) -> None:  # noqa: F811
    _settings(tmp_path, excludes="[]", require=True)
    code, out, err = _ingest(run, tmp_path)
    assert code != 0
    assert "sire.default_excludes" in err and "require_excludes" in err
    assert "ingested" not in out


def test_require_excludes_makes_ask_refuse_while_the_gate_excludes_nothing(
        run: Run, tmp_path: Path) -> None:  # noqa: F811
    _settings(tmp_path, excludes="[]")
    assert _ingest(run, tmp_path)[0] == 0
    assert run("sire", "approve", "--all", "--by", "user:curator")[0] == 0
    # Turned on after the sources were approved (each record replays under the settings
    # in force at teardown, so this workspace asks only under the final ones).
    _settings(tmp_path, excludes="[]", require=True)
    code, out, _ = run("ask", "What is the nightly hotel limit?", "--as", "user:sam.reed",
                       "--json")
    refused = as_json(out)
    assert code != 0 and refused["output_state"] == "BLOCKED"
    assert refused["reasons"][0].startswith("EXCLUSION_GATE_EMPTY")
    assert refused["ledger_record_id"] and refused["citations"] == []


def _readiness(tmp_path: Path) -> tuple[int, dict[str, Any]]:
    settings = config.load(tmp_path / "affidavit.toml", environ={})
    db = tmp_path / ".affidavit" / "affidavit.db"
    store = SQLiteStore(db)
    try:
        key = issue_key(store, settings.tenant, "user:root", role="admin").key
    finally:
        store.close()
    with running_service(settings, lambda: SQLiteStore(db, create=False)) as service, \
            service.client(key) as client:
        response = client.get("/v1/admin/readiness")
    return response.status_code, response.json()


def test_the_readiness_report_warns_of_an_empty_gate_and_fails_when_required(
        run: Run, tmp_path: Path) -> None:  # noqa: F811
    _settings(tmp_path, excludes="[]")
    assert _ingest(run, tmp_path)[0] == 0
    status, report = _readiness(tmp_path)
    assert status == 200 and report["ready"] is True
    (check,) = report["checks"]
    assert check["name"] == "sire_exclusion_gate" and check["status"] == "warning"
    assert WARNING in check["detail"]
    _settings(tmp_path, excludes="[]", require=True)
    status, report = _readiness(tmp_path)
    assert status == 503 and report["ready"] is False
    _settings(tmp_path, excludes=None, require=True)
    status, report = _readiness(tmp_path)
    assert status == 200 and report["checks"] == [
        {"name": "sire_exclusion_gate", "status": "ok",
         "detail": "the exclusion gate has Excluded terms to enforce"}]
