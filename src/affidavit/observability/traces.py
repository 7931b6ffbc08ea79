"""OpenTelemetry spans and metrics, named after the pipeline's stages (spec 001).

Only the OpenTelemetry *API* is a default dependency: until :func:`configure` installs an
exporter, every span and instrument is the API's no-op and nothing leaves the process. The
SDK and the OTLP exporter come with the ``telemetry`` extra.

What may be an attribute: stage names, counts, durations, labels, output states, model ids,
and identifiers hashed with :func:`id_hash` (``affidavit.source_id_hash``,
``affidavit.raw_digest_prefix``, ``affidavit.principal_hash``). Never a document's text, a
query, a title, a path or a principal's name: spans and metrics travel to systems outside
the permission model (DESIGN.md, "What a chunk means for the promises").

Failures too: every span starts in :class:`span`, which turns off the SDK's own exception
recording (an event holding the message and stack trace, and the message as the status
description) and records a failure as ``error.type`` (the class name) and
``affidavit.reason_code`` only. An exception's message can quote the document it refused.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace

from affidavit.config.settings import TelemetrySettings
from affidavit.errors import ConfigurationError, reason_code_of
from affidavit.observability.metrics import record_answer, record_stage

EXPORTERS = ("none", "otlp", "console")
__all__ = ["ERROR_TYPE", "EXPORTERS", "HASH_KEY_ENV", "REASON_CODE", "AttributeValue",
           "TelemetrySettings", "add_evaluation", "configure", "count_answer", "error_attributes",
           "extract_format", "fetched", "flush", "id_hash", "mark_current_failed",
           "mark_failed", "meter", "set_attributes", "span", "stage", "traced", "tracer",
           "tracing"]
_SCOPE = "affidavit"
_lock = threading.Lock()
_installed: dict[str, Any] = {}

AttributeValue = str | bool | int | float | Sequence[str]
P = ParamSpec("P")
R = TypeVar("R")


HASH_KEY_ENV = "AFFIDAVIT_TELEMETRY_HASH_KEY"
"""The environment variable holding the deployment's secret key for :func:`id_hash`."""


@functools.cache
def _hash_key() -> bytes:
    """The key of :func:`id_hash`: the deployment's secret when set (the same hashes in every
    process), else a random key of this process. Never a setting: settings are recorded."""
    configured = os.environ.get(HASH_KEY_ENV, "")
    return configured.encode("utf-8") if configured else secrets.token_bytes(32)


def id_hash(value: str, *, key: bytes | None = None) -> str:
    """A stable stand-in for a high-cardinality identifier (a principal, a source id).

    Keyed (HMAC-SHA256): an unkeyed hash of a guessable value, a principal's name or a
    file's path, lets anyone who reads the telemetry confirm a guess; without the key the
    hash says nothing about the value."""
    secret = _hash_key() if key is None else key
    return hmac.new(secret, value.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def tracer() -> trace.Tracer:
    provider = trace.get_tracer_provider()
    cached = _tracers.get(id(provider))
    if cached is None or cached[0] is not provider:
        cached = (provider, provider.get_tracer(_SCOPE))
        _tracers[id(provider)] = cached
    return cached[1]


_tracers: dict[int, tuple[trace.TracerProvider, trace.Tracer]] = {}


def tracing() -> bool:
    """Whether spans go anywhere: a tracer provider is installed (by :func:`configure`, by
    the host application or through ``OTEL_PYTHON_TRACER_PROVIDER``). Until then every span
    would be the API's no-op, and a stage skips making one (on the search path the no-op
    spans were an eighth of the time)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def meter() -> metrics.Meter:
    return metrics.get_meter(_SCOPE)


ERROR_TYPE = "error.type"
REASON_CODE = "affidavit.reason_code"


def error_attributes(error: BaseException) -> dict[str, str]:
    """All that telemetry says about a failure: the exception's class name and its reason
    code (:func:`affidavit.errors.reason_code_of`); never its message or traceback."""
    return {ERROR_TYPE: type(error).__name__, REASON_CODE: reason_code_of(error)}


def mark_failed(current: trace.Span, error: BaseException, *, status: bool = True) -> None:
    """Mark ``current`` failed by ``error``: its type and reason code, and (unless
    ``status`` is false: a refusal the caller caused) an ERROR status with no description
    (a description is the message)."""
    if current.is_recording():
        current.set_attributes(error_attributes(error))
        if status:
            current.set_status(trace.Status(trace.StatusCode.ERROR))


def mark_current_failed(error: BaseException, *, status: bool = True) -> None:
    """:func:`mark_failed` on the current span (a no-op outside one)."""
    mark_failed(trace.get_current_span(), error, status=status)


class span(AbstractContextManager[trace.Span]):  # lower case: called as a function
    """A span of this package, made current; a failure is recorded by :func:`mark_failed`.

    The one place a span starts: the SDK's ``record_exception`` and
    ``set_status_on_exception`` are off here, so no exception message or stack trace is
    exported (the HTTP middleware's server span uses this too)."""

    __slots__ = ("_attributes", "_context", "_current", "_kind", "_name", "_span", "_started")

    def __init__(self, name: str, attributes: Mapping[str, AttributeValue] | None = None, *,
                 context: otel_context.Context | None = None,
                 kind: trace.SpanKind = trace.SpanKind.INTERNAL):
        self._name, self._attributes = name, attributes
        self._context, self._kind = context, kind
        self._span: AbstractContextManager[trace.Span] | None = None
        self._current: trace.Span | None = None
        self._started = 0.0

    def __enter__(self) -> trace.Span:
        self._span = tracer().start_as_current_span(
            self._name, context=self._context, kind=self._kind,
            attributes=dict(self._attributes or {}), record_exception=False,
            set_status_on_exception=False)
        self._current = self._span.__enter__()
        return self._current

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool | None:
        if self._span is None or self._current is None:
            return None
        if error is not None:
            mark_failed(self._current, error)
        return self._span.__exit__(kind, error, traceback)


class stage(span):  # lower case: called as a function
    """One span of a pipeline stage, and its duration in the ``affidavit.stage.duration``
    histogram; an exception marks the span failed (type and reason code) and propagates.

    A class, not a generator: it is entered several times per search."""

    __slots__ = ()

    def __enter__(self) -> trace.Span:
        self._started = time.perf_counter()
        if not tracing():
            self._span = self._current = None
            # The current span (the caller's, or the invalid one): attributes set on it go
            # nowhere, as they would on a no-op span, and the trace context is unchanged.
            return trace.get_current_span()
        return super().__enter__()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool | None:
        try:
            return super().__exit__(kind, error, traceback)
        finally:
            record_stage(self._name, time.perf_counter() - self._started)


def traced(name: str, result_attributes: Callable[[Any], Mapping[str, AttributeValue]]
           | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run the decorated function inside :func:`stage` ``name``; ``result_attributes``
    adds attributes drawn from its result (counts, states: never text)."""
    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            with stage(name) as span:
                result = fn(*args, **kwargs)
                # Attributes (keyed hashes among them) are computed only for a span that
                # records them.
                if result_attributes is not None and span.is_recording():
                    span.set_attributes(dict(result_attributes(result)))
                return result
        return inner
    return wrap


def fetched(documents: Iterable[R]) -> Iterator[R]:
    """``documents`` as they come, each one's fetch from its source in an ``ingest.fetch``
    span (sources fetch lazily, as they are iterated)."""
    iterator = iter(documents)
    while True:
        with stage("ingest.fetch"):
            try:
                item = next(iterator)
            except StopIteration:
                return
        yield item


def extract_format(filename: str) -> str:
    """The format part of an ``extract.*`` span name: the suffix, lowercased, if it is a
    short word (a file name is derived text; only a known kind of suffix is named)."""
    suffix = filename.rpartition(".")[2].lower() if "." in filename else ""
    return suffix if suffix.isalnum() and len(suffix) <= 5 else "other"


def add_evaluation(name: str, label: str, score: float) -> None:
    """A verification result as a GenAI evaluation event on the current span: the
    evaluation's name, its status and score; never the claim's text."""
    trace.get_current_span().add_event("gen_ai.evaluation.result", {
        "gen_ai.evaluation.name": name, "gen_ai.evaluation.score.label": label,
        "gen_ai.evaluation.score.value": float(score)})


def set_attributes(attributes: Mapping[str, AttributeValue]) -> None:
    """Add attributes to the current span (a no-op outside one)."""
    trace.get_current_span().set_attributes(dict(attributes))


def count_answer(output_state: str) -> None:
    """One answer with this output state, for ``affidavit.answers``."""
    record_answer(output_state)


def configure(settings: TelemetrySettings) -> bool:
    """Install the exporter ``settings`` name, once per process; True when one is active.

    ``none`` installs nothing. Configuring again with other settings keeps the first:
    OpenTelemetry's global providers can be set only once."""
    if settings.exporter not in EXPORTERS:
        raise ConfigurationError(f"must be one of {', '.join(EXPORTERS)}",
                                 key="telemetry.exporter")
    if not 0.0 <= settings.sample_ratio <= 1.0:
        raise ConfigurationError("must be between 0 and 1", key="telemetry.sample_ratio")
    if settings.exporter == "none":
        return bool(_installed)
    with _lock:
        if not _installed:
            _installed.update(_install(settings))
    return True


def _install(settings: TelemetrySettings) -> dict[str, Any]:
    try:
        from affidavit.observability.sdk import install
    except ImportError as exc:
        raise ConfigurationError(
            f"exporter {settings.exporter!r} needs the 'telemetry' extra: "
            "pip install 'affidavit[telemetry]'", key="telemetry.exporter") from exc
    return install(settings)


def flush(timeout_millis: int = 10_000) -> None:
    """Export what is buffered now (tests, and a CLI command before it exits)."""
    for provider in (_installed.get("tracer_provider"), _installed.get("meter_provider")):
        if provider is not None:
            provider.force_flush(timeout_millis)
