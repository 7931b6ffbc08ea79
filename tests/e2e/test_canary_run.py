"""``affidavit canary run`` plants a canary per label and finds no leak through search, ask
or the reader as principals without the grant; a policy that lets one through is caught."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from affidavit.cli.main import main
from affidavit.config.loader import load
from tests.e2e.conftest import EXAMPLES, Run, as_json


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Run]:
    """The CLI in an empty directory (the canary's ledger records live in the scratch
    tenant, where the shared fixture's teardown would not look for them)."""
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    yield invoke


def test_a_canary_run_probes_every_label_and_surface_and_passes(run: Run,
                                                               tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "affidavit.toml", tmp_path / "affidavit.toml")
    assert run("init")[0] == 0
    code, out, err = run("canary", "run", "--json")
    assert code == 0, out + err
    report = as_json(out)
    labels = [x for x in load(tmp_path / "affidavit.toml", environ={}).sensitivity.labels
              if x != "PUBLIC"]
    assert report["probes"] == len(labels) * 2 * 3
    assert report["pass_ratio"] == 1.0 and report["control_missing"] == []
    assert "CNRY" not in out  # tokens are never printed
    assert run("ledger", "verify", "--tenant", "canary-scratch")[0] == 0
    # The scratch tenant's grants are on the policy trail, by the canary actor.
    trail = as_json(run("audit", "list", "--json", "--tenant", "canary-scratch")[1])
    assert {e["actor"] for e in trail if e["kind"] == "grant.add"} == {"system:canary"}


def test_a_canary_run_catches_a_policy_that_leaks(run: Run, tmp_path: Path) -> None:
    settings = (EXAMPLES / "affidavit.toml").read_text(encoding="utf-8")
    # A scratch-tenant policy that wrongly admits the outsider to every label.
    leaky = ('\n[tenants.canary-scratch.authz]\n'
             'tuples = ["group:canary-holders#member@user:canary-outsider"]\n'
             '[tenants.canary-scratch.grants]\n"user:canary-outsider" = ["SECRET"]\n')
    (tmp_path / "affidavit.toml").write_text(settings + leaky, encoding="utf-8")
    assert run("init")[0] == 0
    code, out, _ = run("canary", "run", "--json")
    assert code == 1
    leaks = as_json(out)["leaks"]
    assert {(x["label"], x["principal"]) for x in leaks} == {
        ("SECRET", "user:canary-outsider")}
    assert {x["surface"] for x in leaks} >= {"search", "reader"}
