"""Without a tracer provider a stage makes no span and computes no span attributes (its
duration still goes to the process's metrics); with one, every stage is a recorded span.

Each case runs in its own interpreter: OpenTelemetry's global provider can be set only once
per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_a_provider_a_stage_makes_no_span_and_computes_no_attributes() -> None:
    out = run("""
        from opentelemetry import trace
        from affidavit.observability.metrics import REGISTRY
        from affidavit.observability.traces import stage, traced, tracing

        def attributes(result):
            raise AssertionError("span attributes computed for a span that records nothing")

        @traced("test.noop", attributes)
        def work():
            return 7

        assert not tracing()
        with stage("test.outer") as span:
            assert span is trace.get_current_span()
            assert not span.is_recording()
            assert work() == 7
        text = REGISTRY.prometheus_text()
        assert 'affidavit_stage="test.noop"' in text and 'affidavit_stage="test.outer"' in text
        print("ok")
    """)
    assert out.strip() == "ok"


def test_with_a_provider_every_stage_is_a_recorded_span_with_its_attributes() -> None:
    out = run("""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from affidavit.observability.traces import stage, traced, tracing

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        @traced("test.inner", lambda result: {"affidavit.hits": result})
        def work():
            return 3

        assert tracing()
        with stage("test.outer", {"affidavit.queries": 1}):
            work()
        spans = {s.name: s for s in exporter.get_finished_spans()}
        assert spans["test.inner"].attributes["affidavit.hits"] == 3
        assert spans["test.outer"].attributes["affidavit.queries"] == 1
        assert spans["test.inner"].parent.span_id == spans["test.outer"].context.span_id
        print("ok")
    """)
    assert out.strip() == "ok"
