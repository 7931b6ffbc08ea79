"""The OpenTelemetry SDK side of :mod:`affidavit.observability.traces`: providers, sampler,
exporters.

Imported only when an exporter is configured, so the default install needs only the API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

if TYPE_CHECKING:
    from affidavit.observability.traces import TelemetrySettings


def install(settings: TelemetrySettings) -> dict[str, Any]:
    """Set the global tracer and meter providers; return them for flushing."""
    resource = Resource.create({"service.name": "affidavit"})
    spans, points = _exporters(settings)
    tracer_provider = TracerProvider(
        resource=resource, sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)))
    tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    reader = PeriodicExportingMetricReader(
        points, export_interval_millis=max(1.0, settings.metric_interval * 1000))
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    return {"tracer_provider": tracer_provider, "meter_provider": meter_provider}


def _exporters(settings: TelemetrySettings) -> tuple[SpanExporter, MetricExporter]:
    if settings.exporter == "console":
        return ConsoleSpanExporter(), ConsoleMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    base = settings.endpoint.rstrip("/")
    return (OTLPSpanExporter(endpoint=base + "/v1/traces"),
            OTLPMetricExporter(endpoint=base + "/v1/metrics"))
