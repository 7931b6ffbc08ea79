"""The deployment kit (Dockerfile, compose.yaml, the systemd unit, docs/deploy.md) says what
the code does. No image is built here (the registries of container images are out of reach
on the test machines); what can be checked without one is: the files parse, the image
installs with the README's command, every command they run exists in the CLI with the
options they pass, and the ports, settings and health endpoints they name are the real
ones."""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path
from typing import Any

import yaml
from tests.project.test_project_shape import ROOT, readme_commands

from affidavit.cli.main import build_parser
from affidavit.config import loader as config
from affidavit.service import create_app
from affidavit.store import SQLiteStore


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text(encoding="utf-8")


def _parses_as_cli(argv: list[str]) -> None:
    """``argv`` (after ``affidavit``) is accepted by the real argument parser."""
    args = build_parser().parse_args(argv)
    assert args.command == argv[0]


def test_dockerfile_is_multi_stage_non_root_and_installs_as_the_readme_does() -> None:
    text = _dockerfile()
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, flags=re.M)
    assert len(stages) >= 2 and stages[0][1] == "build"
    assert "COPY --from=build /opt/affidavit /opt/affidavit" in text
    user = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert user and not user[-1].startswith(("root", "0"))
    run_main, _ = readme_commands()
    readme_install = re.search(r"pip install (\S+)", run_main)
    assert readme_install is not None
    install = re.search(r"pip install --no-cache-dir '(\S+)\[postgres\]'", text)
    assert install is not None and install.group(1) == readme_install.group(1)
    entry = re.search(r'^ENTRYPOINT \["affidavit"\]', text, flags=re.M)
    cmd = re.search(r"^CMD (\[.*\])", text, flags=re.M)
    assert entry and cmd
    _parses_as_cli(yaml.safe_load(cmd.group(1)))
    assert "EXPOSE 8080" in text and "/healthz" in text


def test_compose_starts_database_migration_service_and_workers_in_order() -> None:
    services = _compose()["services"]
    assert set(services) == {"db", "migrate", "api", "worker"}
    assert "pgvector" in services["db"]["image"]
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    for name in ("api", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == \
            "service_completed_successfully"
        assert "healthcheck" in services[name] or name == "worker"
    for name in ("migrate", "api", "worker"):
        _parses_as_cli(services[name]["command"])
        env = services[name]["environment"]
        # the variables the settings loader reads (config._env_items / AFFIDAVIT_CONFIG)
        assert env["AFFIDAVIT_DB"].startswith("postgresql://")
        assert env["AFFIDAVIT_CONFIG"] == "/etc/affidavit/affidavit.toml"
    assert "pgdata" in _compose()["volumes"]
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    api = build_parser().parse_args(services["api"]["command"])
    assert services["api"]["ports"] == [f"127.0.0.1:{api.port}:{api.port}"]
    assert _compose()["networks"]["backend"]["internal"] is True


def test_example_settings_load_and_the_health_routes_exist(tmp_path: Path) -> None:
    settings = config.load(ROOT / "deploy" / "affidavit.toml.example",
                           environ={"AFFIDAVIT_DB": str(tmp_path / "x.db")})
    assert settings.store.db == str(tmp_path / "x.db")
    app = create_app(settings, lambda: SQLiteStore(tmp_path / "x.db"))
    assert {"/healthz", "/readyz"} <= set(app.openapi()["paths"])


def test_systemd_unit_runs_real_commands() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(ROOT / "deploy" / "affidavit.service", encoding="utf-8")
    service = unit["Service"]
    assert service["User"] == "affidavit"
    for key in ("ExecStart", "ExecStartPre"):
        argv = shlex.split(service[key])
        assert argv[0] == "/opt/affidavit/bin/affidavit"
        _parses_as_cli(argv[1:])


def test_deploy_guide_names_only_real_commands_and_files() -> None:
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for name in ("Dockerfile", "compose.yaml", "deploy/affidavit.toml.example",
                 "deploy/affidavit.service"):
        assert name in text and (ROOT / name).exists()
    for line in re.findall(r"^(?:docker compose exec api |sudo -u affidavit .*?/bin/)?"
                           r"affidavit ([a-z].*?)(?:\s+#.*)?$", text, flags=re.M):
        argv = shlex.split(line)
        if "<" in line:  # placeholders: parse the command and its flags only
            argv = [a for a in argv if not a.startswith("<")]
        _parses_as_cli(argv)
