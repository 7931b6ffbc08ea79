"""No content in telemetry, error paths included: every quarantine reason, provider
failures, a misconfigured provider, authentication and authorization failures, a request
over a limit, an unhandled bug and a stream whose ledger write fails all run with spans
exported over OTLP to a receiver on 127.0.0.1 and the service's logs captured. No exported
byte and no log line holds a document's text, the query or the principal's name: a failure
is its type and reason code, never its message or stack trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from affidavit.extract import REASON_CODES
from tests.observability.error_paths import (
    DOCUMENT_CANARY,
    PRINCIPAL,
    PRINCIPAL_CANARY,
    QUERY_CANARY,
    QUESTION,
)
from tests.observability.otlp_receiver import Received, otlp_receiver
from tests.observability.refused_documents import BUILDERS, RAISED_IN_GUARD

FORBIDDEN = (DOCUMENT_CANARY, QUERY_CANARY, PRINCIPAL_CANARY, PRINCIPAL, QUESTION)
ROOT = Path(__file__).resolve().parents[2]


def attributes(span: Span) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value") or "string_value")
            for kv in span.attributes}


@pytest.fixture(scope="module")
def error_paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Received, str]:
    """The exported spans and the stderr of one run of every error path."""
    workdir = tmp_path_factory.mktemp("error-paths")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AFFIDAVIT_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    with otlp_receiver() as (endpoint, received):
        done = subprocess.run([sys.executable, "-m", "tests.observability.error_paths",
                               str(workdir), endpoint], cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return received, done.stderr


def test_every_quarantine_reason_has_an_error_path_case() -> None:
    uncovered = set(REASON_CODES) - set(BUILDERS) - RAISED_IN_GUARD
    assert not uncovered, f"add a refused document for {sorted(uncovered)}"
    assert set(BUILDERS) | RAISED_IN_GUARD <= set(REASON_CODES)


def test_every_error_path_ran_and_its_spans_name_a_type_and_a_reason_code_only(
        error_paths: tuple[Received, str]) -> None:
    received, _ = error_paths
    spans = received.spans()
    codes = {attributes(s).get("affidavit.reason_code") for s in spans}
    assert set(REASON_CODES) <= codes, sorted(set(REASON_CODES) - codes)
    types = {attributes(s).get("error.type") for s in spans}
    assert {"InputRejected", "AuthorizationError", "AuthenticationError", "LimitExceeded",
            "ProviderError", "ConfigurationError", "LedgerWriteError", "RuntimeError"} <= types, \
        types
    failed = [s for s in spans if s.status.code == s.status.STATUS_CODE_ERROR]
    for span in failed:
        assert span.status.message == "", span.name
        assert {"error.type", "affidavit.reason_code"} <= set(attributes(span)), span.name
    assert not [e for s in spans for e in s.events if e.name == "exception"], \
        "an exception event carries the message and the stack trace"


def test_no_exported_byte_holds_document_text_query_or_principal(
        error_paths: tuple[Received, str]) -> None:
    received, _ = error_paths
    exported = received.every_byte()
    assert received.spans(), "the spans were exported"
    for text in FORBIDDEN:
        assert text.encode() not in exported, text
        assert text.lower().encode() not in exported.lower(), text


def test_no_log_line_holds_document_text_query_principal_or_a_traceback(
        error_paths: tuple[Received, str]) -> None:
    _, log = error_paths
    for text in FORBIDDEN:
        assert text.lower() not in log.lower(), text
    assert "Traceback" not in log
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    unhandled = [line for line in lines if line.get("error_type") == "RuntimeError"]
    assert unhandled and all(line["reason_code"] == "UNEXPECTED" for line in unhandled)
    assert any(line.get("logger") == "affidavit.access" and line.get("status") == 500
               for line in unhandled)
    refused = {line.get("error_type") for line in lines if line.get("status") in (401, 413)}
    assert {"AuthenticationError", "LimitExceeded"} <= refused, refused


def test_a_failed_span_says_type_and_reason_code_never_the_message() -> None:
    """Every span starts in the package's helper: the SDK's own exception recording (an
    event with message and stack trace, the message as status) is off in every one."""
    code = f"""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from affidavit.errors import InputRejected
        from affidavit.observability.traces import span, stage, traced

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        @traced("test.traced")
        def refuse():
            raise InputRejected("NO_TEXT_LAYER", "page one reads {DOCUMENT_CANARY}")

        for opened in (lambda: span("test.span"), lambda: stage("test.stage")):
            try:
                with opened():
                    raise KeyError("{DOCUMENT_CANARY}")
            except KeyError:
                pass
        try:
            refuse()
        except InputRejected:
            pass
        for finished in exporter.get_finished_spans():
            assert not finished.events, finished.events
            assert finished.status.status_code.name == "ERROR"
            assert not finished.status.description
            print(finished.name, finished.attributes["error.type"],
                  finished.attributes["affidavit.reason_code"])
        """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["test.span KeyError UNEXPECTED",
                                           "test.stage KeyError UNEXPECTED",
                                           "test.traced InputRejected NO_TEXT_LAYER"]
    assert DOCUMENT_CANARY not in done.stdout
