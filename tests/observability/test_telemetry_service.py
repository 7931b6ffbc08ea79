"""``affidavit serve`` with the OTLP exporter: a request's W3C trace context is continued by
the service and its stages, and the JSON access log names ids, route and timings, never the
query, the principal or a document's text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from affidavit.observability.traces import HASH_KEY_ENV, id_hash
from tests.observability.otlp_receiver import otlp_receiver
from tests.observability.test_telemetry_otlp import CANARY, QUESTION, SENTENCE, SETTINGS
from tests.service.test_service_serve_cli import free_port

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0736aa"
HASH_KEY = "deployment-secret-for-telemetry-hashes"
PARENT = "00f067aa0ba902b7"


def _run(workdir: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "affidavit.cli.main", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 6), done.stderr
    return done.stdout


def _ask(port: int, key: str, server: subprocess.Popen[str]) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.post(f"http://127.0.0.1:{port}/v1/query", json={"query": QUESTION},
                              headers={"Authorization": f"Bearer {key}",
                                       "traceparent": f"00-{TRACE_ID}-{PARENT}-01"},
                              timeout=60)
        except httpx.TransportError:
            assert server.poll() is None, "affidavit serve exited"
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.2)


def test_the_service_continues_the_callers_trace_and_logs_no_content(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / f"levy-{CANARY}.md").write_text(
        f"---\nacl: [\"group:staff#member\"]\n---\n# Levy {CANARY}\n\n{SENTENCE}.\n",
        encoding="utf-8")
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    with otlp_receiver() as (endpoint, received):
        env = {k: v for k, v in os.environ.items() if not k.startswith("AFFIDAVIT_")}
        env.update({"AFFIDAVIT_TELEMETRY__EXPORTER": '"otlp"',
                    "AFFIDAVIT_TELEMETRY__ENDPOINT": f'"{endpoint}"', HASH_KEY_ENV: HASH_KEY})
        _run(tmp_path, env, "init")
        _run(tmp_path, env, "ingest", str(corpus))
        _run(tmp_path, env, "sire", "approve", "--all", "--by", "user:curator")
        key = json.loads(_run(tmp_path, env, "keys", "create", "--principal", "user:reader",
                              "--json"))["key"]
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "affidavit.cli.main", "serve", "--port",
                                   str(port)], cwd=tmp_path, env=env, text=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            response = _ask(port, key, server)
        finally:
            server.terminate()
            _, log = server.communicate(timeout=60)
    assert response.status_code == 200, response.text
    assert response.headers["x-request-id"].startswith("http-")
    spans = received.spans()
    # The service's span continues the caller's: same trace, the caller's span as parent.
    roots = [s for s in spans if s.parent_span_id.hex() == PARENT]
    assert len(roots) == 1, [(s.name, s.kind) for s in roots]
    (server_span,) = roots
    assert server_span.name == "POST /v1/query"
    assert server_span.trace_id.hex() == TRACE_ID
    ask = next(s for s in spans if s.name == "query.ask")
    by_id = {s.span_id: s for s in spans}
    assert ask.trace_id.hex() == TRACE_ID
    ancestor = ask
    while ancestor.parent_span_id in by_id:  # the framework may add spans in between
        ancestor = by_id[ancestor.parent_span_id]
    assert ancestor.span_id == server_span.span_id
    access = [json.loads(line) for line in log.splitlines()
              if line.startswith("{") and '"affidavit.access"' in line]
    (line,) = [a for a in access if a["route"] == "/v1/query"]
    assert line["trace_id"] == TRACE_ID and line["status"] == 200
    assert line["principal_hash"] == id_hash("user:reader", key=HASH_KEY.encode())
    assert line["request_id"] == response.headers["x-request-id"]
    assert isinstance(line["duration_ms"], float)
    for text in (CANARY, SENTENCE, QUESTION, "user:reader", key):
        assert text not in log, text
        assert text.encode() not in received.every_byte(), text
