"""Every request in a span and a log line: W3C trace context in, ids and timings out.

An incoming ``traceparent`` header makes the request's span a child of the caller's trace,
so the engine's stage spans (:mod:`affidavit.observability.traces`) join it. The span and the
``affidavit.access`` JSON log line name the route template (``/v1/ledger/{record_id}``,
never the path with its ids), the method, the status, the duration, the request id and the
principal's hash; never a body, a query or a header's value. A request that raised says
so by the exception's type and reason code (``error.type``, ``affidavit.reason_code`` on
the span; ``error_type``, ``reason_code`` in the log line), never by its message.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import MutableMapping
from typing import Any

from opentelemetry import propagate, trace
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from affidavit.errors import reason_code_of
from affidavit.observability.traces import span

ACCESS_LOG = logging.getLogger("affidavit.access")
REQUEST_ID_HEADER = b"x-request-id"


class RequestObservability:
    """ASGI middleware: a server span per HTTP request and one access log line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        parent = propagate.extract(carrier)
        ids = {"request": "http-" + uuid.uuid4().hex[:20]}
        status = {"code": 500}
        started = time.perf_counter()
        method = str(scope.get("method", ""))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
                headers = list(message.get("headers", []))
                named = [v for k, v in headers if k.lower() == REQUEST_ID_HEADER]
                if named:  # an answer's own request id (its ledger record's) is the one
                    ids["request"] = named[0].decode("latin-1")
                else:
                    headers.append((REQUEST_ID_HEADER, ids["request"].encode("ascii")))
                message = {**message, "headers": headers}
            await send(message)

        failure: list[BaseException] = []
        with span(f"{method} request", {"http.request.method": method}, context=parent,
                  kind=trace.SpanKind.SERVER) as current:
            try:
                await self.app(scope, receive, send_with_id)
            except BaseException as exc:
                failure.append(exc)
                raise
            finally:
                route = _route_template(scope)
                current.update_name(f"{method} {route}")
                current.set_attributes({"http.route": route,
                                        "http.response.status_code": status["code"]})
                context = current.get_span_context()
                ACCESS_LOG.info("request", extra={
                    "request_id": ids["request"], "trace_id": f"{context.trace_id:032x}",
                    "span_id": f"{context.span_id:016x}", "route": route, "method": method,
                    "status": status["code"],
                    "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                    "principal_hash": _state(scope).get("principal_hash", ""),
                    **_failure_fields(failure[0] if failure else _state(scope).get("failure"))})


def _failure_fields(error: object) -> dict[str, str]:
    """The log fields of a request that failed (raised, or answered a problem for an
    error: the problem handler leaves it in the request's state): its type and reason
    code."""
    if not isinstance(error, BaseException):
        return {}
    return {"error_type": type(error).__name__, "reason_code": reason_code_of(error)}


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


def _state(scope: Scope) -> MutableMapping[str, Any]:
    state = scope.get("state")
    return state if isinstance(state, MutableMapping) else {}
