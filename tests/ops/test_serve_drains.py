"""``affidavit serve`` drains on SIGTERM: a question in flight when the signal arrives is
answered, and on the ledger, before the process exits. A real server process, a real
signal, and a scripted model server on 127.0.0.1 that takes its time."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from affidavit.store import SQLiteStore
from tests.e2e.test_invariants import EXAMPLES
from tests.service.model_server import ModelScript, model_server
from tests.service.test_service_serve_cli import free_port


def _cli(cwd: Path, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "affidavit.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, check=True, timeout=300).stdout


def test_serve_answers_the_request_in_flight_before_it_stops(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "corpus", tmp_path / "corpus")
    with model_server(ModelScript(deltas=["The nightly hotel limit in London is GBP 185."],
                                  hang=3.0)) as model:
        settings = (EXAMPLES / "affidavit.toml").read_text(encoding="utf-8")
        settings += (f'\n[answer]\nprovider = "openai"\n\n[provider]\nbase_url = '
                     f'"{model.base_url}"\nmodel = "m"\nlogprobs = false\nmax_retries = 0\n')
        (tmp_path / "affidavit.toml").write_text(settings, encoding="utf-8")
        _cli(tmp_path, "ingest", "corpus", "--quiet")
        _cli(tmp_path, "sire", "approve", "--all", "--by", "Tester")
        key = json.loads(_cli(tmp_path, "keys", "create", "--principal", "user:sam.reed",
                              "--json"))["key"]
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("AFFIDAVIT_")}
        server = subprocess.Popen([sys.executable, "-m", "affidavit.cli.main", "serve", "--port",
                                   str(port)], cwd=tmp_path, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
            answers: list[httpx.Response] = []

            def ask() -> None:
                answers.append(httpx.post(base + "/v1/query", timeout=120,
                                          json={"query": "What is the nightly hotel limit?"},
                                          headers={"Authorization": f"Bearer {key}"}))

            asking = threading.Thread(target=ask)
            asking.start()
            time.sleep(1.0)  # the question is with the (slow) model now
            server.send_signal(signal.SIGTERM)
            asking.join(timeout=120)
            code = server.wait(timeout=60)
        finally:
            if server.poll() is None:
                server.kill()
    assert answers and answers[0].status_code == 200, answers
    record_id = answers[0].json()["ledger_record_id"]
    store = SQLiteStore(tmp_path / ".affidavit" / "affidavit.db", create=False)
    try:
        assert store.get_ledger("harbourline", record_id) is not None
    finally:
        store.close()
    # uvicorn re-raises the signal once drained, so the exit reads as the SIGTERM it was.
    assert code in (0, -signal.SIGTERM)
