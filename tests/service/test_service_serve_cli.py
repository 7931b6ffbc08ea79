"""``affidavit serve`` starts the service from the command line, on the configured store."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from affidavit.cli.main import main


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_answers_with_keys_created_on_the_command_line(
        tmp_path: Path, monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    assert main(["init"]) == 0
    code = subprocess.run([sys.executable, "-m", "affidavit.cli.main", "keys", "create",
                           "--principal", "user:alice", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    key = json.loads(code.stdout)["key"]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AFFIDAVIT_")}
    server = subprocess.Popen([sys.executable, "-m", "affidavit.cli.main", "serve", "--port",
                               str(port)], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.post(f"http://127.0.0.1:{port}/v1/search",
                                      json={"query": "anything"},
                                      headers={"Authorization": f"Bearer {key}"})
                break
            except httpx.TransportError:
                assert server.poll() is None, "affidavit serve exited"
                assert time.monotonic() < deadline, "the service did not start"
                time.sleep(0.2)
        anonymous = httpx.post(f"http://127.0.0.1:{port}/v1/search", json={"query": "x"})
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert response.status_code == 200 and response.json() == {"hits": []}
    assert anonymous.status_code == 401
