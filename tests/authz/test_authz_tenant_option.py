"""``--tenant`` names the tenant a command acts on; it does not move the home tenant. The
settings file's top-level ``[acl]``, ``[authz]`` and ``[grants]`` belong to the tenant the
file (or the environment) configures, whichever tenant a command names: another tenant
gets its own ``[tenants.<id>]`` policy, or none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.cli.main import main
from affidavit.config.loader import load

SETTINGS = """
tenant = "acme"
[grants]
"user:farid" = ["FINANCIAL"]
[tenants.initech.grants]
"user:farid" = ["INTERNAL"]
"""
FORECAST = ("---\nclassification: FINANCIAL\nacl: [\"user:farid\"]\n---\n# forecast\n\n"
            "The fourth quarter forecast for {tenant} shows revenue item CNRY-{tenant}-4Q.\n")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AFFIDAVIT_TENANT", raising=False)
    monkeypatch.delenv("AFFIDAVIT_CONFIG", raising=False)
    monkeypatch.delenv("AFFIDAVIT_DB", raising=False)
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    for tenant in ("acme", "globex", "initech"):
        folder = tmp_path / tenant
        folder.mkdir()
        (folder / "forecast.md").write_text(FORECAST.format(tenant=tenant), encoding="utf-8")
        assert main(["--tenant", tenant, "ingest", str(folder), "--quiet"]) == 0
    return tmp_path


def found(capsys: pytest.CaptureFixture[str], tenant: str) -> str:
    capsys.readouterr()
    code = main(["--tenant", tenant, "search", "fourth quarter forecast revenue",
                 "--as", "user:farid", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.dumps(json.loads(out))


def test_tenant_option_does_not_carry_the_home_tenant_policy(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "CNRY-acme-4Q" in found(capsys, "acme")  # the home tenant: top-level grants
    assert "CNRY-globex-4Q" not in found(capsys, "globex")  # no policy of its own
    # initech grants farid INTERNAL only: the home tenant's FINANCIAL grant does not apply.
    assert "CNRY-initech-4Q" not in found(capsys, "initech")


def test_the_home_tenant_is_the_configured_one_whatever_the_command_line_names(
        workspace: Path) -> None:
    named = load(overrides={"tenant": "globex"})
    assert named.tenant == "globex" and named.home == "acme"
    assert named.policy_for("globex").grants == {}
    assert named.policy_for("acme").grants == {"user:farid": ("FINANCIAL",)}
    # The environment configures, as the file does.
    from_env = load(environ={"AFFIDAVIT_TENANT": "globex"})
    assert from_env.home == "globex"


def test_served_tenant_of_service_workers_does_not_carry_the_home_tenant_policy(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``affidavit serve --tenant globex --workers N`` hands its tenant to the workers
    it starts through the environment, beside the configured home tenant."""
    from affidavit.service.app import SERVED_TENANT_VARIABLE, app_from_environment

    monkeypatch.setenv(SERVED_TENANT_VARIABLE, "globex")
    settings = app_from_environment().state.affidavit.settings
    assert settings.tenant == "globex" and settings.home == "acme"
    assert settings.policy_for("globex").grants == {}
