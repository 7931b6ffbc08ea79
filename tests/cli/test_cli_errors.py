"""Each class of error ends the command with its own exit code and message, also as JSON.

usage 2, configuration 5, governance refusal 6, provider failure 7, store error 8 (the
table is in affidavit.cli.errors and the README).
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from affidavit.cli.errors import (
    EXIT_CONFIGURATION,
    EXIT_GOVERNANCE,
    EXIT_PROVIDER,
    EXIT_STORE,
    EXIT_USAGE,
)
from affidavit.cli.main import main
from tests.e2e.conftest import EXAMPLES, Run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "answer"))
from answer_fake_openai import FakeOpenAI, Scripted

HOTEL = "What is the nightly hotel limit?"


def _json_error(err: str) -> dict[str, object]:
    error = json.loads(err.strip().splitlines()[-1])["error"]
    assert isinstance(error, dict)
    return error


def test_usage_error_exit_2_also_as_json(run: Run) -> None:
    assert run("init")[0] == 0
    code, out, err = run("search", "x", "--as", "alice", "--json")
    assert code == EXIT_USAGE and out == ""
    assert _json_error(err)["kind"] == "usage" and _json_error(err)["exit_code"] == 2


def test_configuration_error_exit_5_names_the_key_and_file(run: Run, tmp_path: Path) -> None:
    (tmp_path / "affidavit.toml").write_text("[retreival]\ntop_k = 3\n")
    code, out, err = run("search", "x", "--as", "user:a")
    assert code == EXIT_CONFIGURATION and out == ""
    assert err.startswith("affidavit: configuration error: unknown section")
    assert "did you mean 'retrieval'" in err and str(tmp_path / "affidavit.toml") in err
    code, _, err = run("search", "x", "--as", "user:a", "--json")
    assert code == EXIT_CONFIGURATION and _json_error(err)["exit_code"] == EXIT_CONFIGURATION


def test_store_error_exit_8(run: Run, tmp_path: Path) -> None:
    (tmp_path / "bad.db").write_bytes(b"not a database at all, not even close" * 4)
    code, _, err = run("runs", "list", "--db", "bad.db")
    assert code == EXIT_STORE and "store error" in err
    code, _, err = run("runs", "list", "--db", "bad.db", "--json")
    assert code == EXIT_STORE and _json_error(err)["kind"] == "store"


def test_governance_refusal_exit_6_and_still_recorded(example_workspace: Run) -> None:
    code, out, err = example_workspace("ask", "What are Northwind's mortgage rates?", "--as",
                                       "user:sam.reed", "--json")
    assert code == EXIT_GOVERNANCE
    answer = json.loads(out)
    assert answer["output_state"] == "BLOCKED" and answer["ledger_record_id"]
    assert _json_error(err)["kind"] == "governance"
    code, _, err = example_workspace("ask", "xyzzy plugh frobnicate", "--as", "user:sam.reed")
    assert code == EXIT_GOVERNANCE and "answer REQUIRES_SPEC: NO_EVIDENCE" in err


def test_served_answer_exits_0(example_workspace: Run) -> None:
    code, out, _ = example_workspace("ask", "What was total revenue in Q3 2024?", "--as",
                                     "user:farid.nasser", "--json")
    assert json.loads(out)["output_state"] in ("AUTHORIZED", "PARTIAL", "NARRATIVE_ONLY")
    assert code == 0


# --------------------------------------------------------------------------- provider


@pytest.fixture
def provider_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[Run, FakeOpenAI]]:
    """The example corpus answered through a scripted OpenAI-compatible server."""
    fake = FakeOpenAI()
    fake.thread.start()
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    settings = (EXAMPLES / "affidavit.toml").read_text()
    settings += (f'\n[answer]\nprovider = "openai"\n\n[provider]\nbase_url = "{fake.base_url}"'
                 '\nmodel = "m"\nmax_retries = 0\ntimeout_seconds = 5.0\n'
                 'api_key_env = "NO_SUCH_KEY_ENV"\n')
    (tmp_path / "affidavit.toml").write_text(settings)
    shutil.copytree(EXAMPLES / "corpus", tmp_path / "corpus")

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    assert invoke("ingest", "corpus", "--quiet")[0] == 0
    assert invoke("sire", "approve", "--all", "--by", "tester")[0] == 0
    try:
        yield invoke, fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


@pytest.mark.parametrize(("status", "body", "shown"), [
    (401, {"error": {"message": "Incorrect API key provided."}},
     "HTTP 401: Incorrect API key provided."),
    (429, {"error": {"message": "Rate limit reached"}}, "HTTP 429: Rate limit reached"),
    (500, {"error": "upstream exploded"}, "HTTP 500: upstream exploded"),
])
def test_provider_http_failure_exit_7_with_url_status_and_message(
        provider_workspace: tuple[Run, FakeOpenAI], status: int, body: object,
        shown: str) -> None:
    run, fake = provider_workspace
    fake.defaults["/v1/chat/completions"] = Scripted(status=status, body=body)
    code, out, err = run("ask", HOTEL, "--as", "user:sam.reed")
    assert code == EXIT_PROVIDER
    assert "a governance check" in out  # the answer is withheld, and recorded
    assert err.startswith("affidavit: provider error: answer BLOCKED: PROVIDER_FAILED")
    assert f"{fake.base_url}/chat/completions" in err and shown in err
    code, _, err = run("ask", HOTEL, "--as", "user:sam.reed", "--json")
    error = _json_error(err)
    assert code == EXIT_PROVIDER and error["kind"] == "provider" and error["exit_code"] == 7
    assert shown in str(error["message"])


def test_provider_refusing_connections_exit_7(provider_workspace: tuple[Run, FakeOpenAI],
                                              tmp_path: Path) -> None:
    run, _ = provider_workspace
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = (tmp_path / "affidavit.toml").read_text()
    settings = settings.replace('base_url = "http://127.0.0.1:',
                                f'base_url = "http://127.0.0.1:{port}/v1"\n# was ')
    (tmp_path / "affidavit.toml").write_text(settings)
    code, _, err = run("ask", HOTEL, "--as", "user:sam.reed")
    assert code == EXIT_PROVIDER
    assert f"cannot reach the provider at http://127.0.0.1:{port}/v1/chat/completions" in err
