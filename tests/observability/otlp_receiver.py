"""An OTLP/HTTP (protobuf) receiver on 127.0.0.1 that keeps every request body it gets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span


@dataclass
class Received:
    """Raw bodies by path, as the exporter sent them."""

    bodies: dict[str, list[bytes]] = field(default_factory=dict)

    def spans(self) -> list[Span]:
        out: list[Span] = []
        for body in self.bodies.get("/v1/traces", []):
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    out.extend(scope.spans)
        return out

    def metric_names(self) -> dict[str, str]:
        """Every exported metric's name and unit."""
        out: dict[str, str] = {}
        for body in self.bodies.get("/v1/metrics", []):
            request = ExportMetricsServiceRequest.FromString(body)
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        out[metric.name] = metric.unit
        return out

    def every_byte(self) -> bytes:
        return b"".join(b for bodies in self.bodies.values() for b in bodies)


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Received]]:
    received = Received()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                received.bodies.setdefault(self.path, []).append(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
