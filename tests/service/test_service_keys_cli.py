"""``affidavit keys``: the key is printed once, only its hash is stored, list and revoke."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.authz.keys import resolve_key
from affidavit.cli.main import main
from affidavit.store import SQLiteStore


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    assert main(["init"]) == 0
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().out


def test_keys_create_prints_the_key_once_and_stores_only_a_hash(
        workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "keys", "create", "--principal", "user:alice", "--tenant", "acme",
                    "--role", "reviewer", "--expires", "2099-01-01", "--json")
    assert code == 0
    created = json.loads(out)
    assert created["role"] == "reviewer" and created["tenant"] == "acme"
    assert created["expires_at"].startswith("2099-01-01")
    store = SQLiteStore(workdir / ".affidavit" / "affidavit.db")
    try:
        tenant, record = resolve_key(store, created["key"])
        assert (tenant, record.principal) == ("acme", "user:alice")
    finally:
        store.close()
    secret = created["key"].split(".")[3]
    code, listed = run(capsys, "keys", "list", "--tenant", "acme", "--json")
    assert code == 0 and secret not in listed
    assert [k["key_id"] for k in json.loads(listed)] == [created["key_id"]]
    assert "secret_hash" not in listed and "salt" not in listed


def test_keys_revoke_marks_the_key_revoked(workdir: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run(capsys, "keys", "create", "--principal", "user:bob", "--json")
    key_id = json.loads(out)["key_id"]
    assert run(capsys, "keys", "revoke", key_id)[0] == 0
    assert run(capsys, "keys", "revoke", key_id)[0] != 0
    listed = json.loads(run(capsys, "keys", "list", "--json")[1])
    assert listed[0]["revoked_at"]


def test_keys_create_refuses_a_malformed_principal(workdir: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "keys", "create", "--principal", "alice")[0] != 0
