"""The metric set (spec 001), with stable names and units, exported two ways: through
OpenTelemetry (:mod:`affidavit.observability.traces`, when an exporter is configured) and in
Prometheus
text format from this process's own registry (the service's ``/metrics``).

=====================================  ==========  ============================================
name                                   unit        what
=====================================  ==========  ============================================
affidavit.stage.duration               s           one pipeline stage (``affidavit.stage``)
affidavit.answers                      {answer}    answers by ``affidavit.output_state``
affidavit.ingest.documents             {document}  ingested documents by ``affidavit.status``
affidavit.ingest.quarantine_ratio      1           quarantined / documents, this process
affidavit.ingest.unresolved_link_ratio 1           relative links to no known document / links
affidavit.document.tokens              {token}     tokens per ingested document
affidavit.document.cost_proxy          {token}     tokens per document sent to hosted models
affidavit.leak_test.pass_ratio         1           canary probes that leaked nothing / probes
=====================================  ==========  ============================================

Attribute values are fixed vocabularies (stage names, output states, statuses); never a
text, a path or a principal.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from opentelemetry import metrics as otel_metrics
from opentelemetry.metrics import CallbackOptions, Observation

if TYPE_CHECKING:
    from affidavit.config.settings import Settings
    from affidavit.store.protocol import Store

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
TOKEN_BUCKETS = (100.0, 500.0, 1_000.0, 5_000.0, 10_000.0, 50_000.0, 100_000.0, 500_000.0)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    unit: str
    kind: str  # counter | histogram | gauge
    description: str
    buckets: tuple[float, ...] = ()


SPECS: dict[str, MetricSpec] = {s.name: s for s in (
    MetricSpec("affidavit.stage.duration", "s", "histogram",
               "Duration of one pipeline stage", BUCKETS),
    MetricSpec("affidavit.answers", "{answer}", "counter", "Answers by output state"),
    MetricSpec("affidavit.ingest.documents", "{document}", "counter",
               "Documents ingested by outcome status"),
    MetricSpec("affidavit.ingest.quarantine_ratio", "1", "gauge",
               "Share of documents quarantined"),
    MetricSpec("affidavit.ingest.unresolved_link_ratio", "1", "gauge",
               "Share of relative links that name no known document"),
    MetricSpec("affidavit.document.tokens", "{token}", "histogram",
               "Tokens per ingested document", TOKEN_BUCKETS),
    MetricSpec("affidavit.document.cost_proxy", "{token}", "histogram",
               "Tokens per document sent to hosted models (embedding, classifier)",
               TOKEN_BUCKETS),
    MetricSpec("affidavit.leak_test.pass_ratio", "1", "gauge",
               "Share of canary probes that leaked nothing"),
)}

Labels = tuple[tuple[str, str], ...]


@dataclass
class _Series:
    value: float = 0.0
    count: int = 0
    # Observations per bucket: [i] holds those above bound i-1 and up to bound i, the last
    # those above every bound (the export cumulates them).
    buckets: list[int] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)  # the OpenTelemetry attributes
    instrument: object = None


class Registry:
    """This process's metric values, for the Prometheus text format."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._series: dict[tuple[str, Labels], _Series] = {}
        self._instruments: dict[str, object] = {}
        self._gauges: dict[tuple[str, Labels], float] = {}

    def _instrument(self, spec: MetricSpec) -> object:
        if spec.name not in self._instruments:
            m = otel_metrics.get_meter("affidavit")
            if spec.kind == "counter":
                self._instruments[spec.name] = m.create_counter(
                    spec.name, unit=spec.unit, description=spec.description)
            elif spec.kind == "histogram":
                self._instruments[spec.name] = m.create_histogram(
                    spec.name, unit=spec.unit, description=spec.description)
            else:
                self._instruments[spec.name] = m.create_observable_gauge(
                    spec.name, unit=spec.unit, description=spec.description,
                    callbacks=[self._observer(spec.name)])
        return self._instruments[spec.name]

    def _observer(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            with self._lock:
                return [Observation(v, dict(labels))
                        for (n, labels), v in self._gauges.items() if n == name]
        return observe

    def add(self, name: str, amount: float = 1.0, attributes: Mapping[str, str] | None = None
            ) -> None:
        spec = SPECS[name]
        labels: Labels = tuple(sorted(attributes.items())) if attributes else ()
        series = self._series.get((name, labels))
        if series is None:
            instrument = self._instrument(spec)
            with self._lock:
                series = self._series.setdefault((name, labels), _Series(
                    buckets=[0] * (len(spec.buckets) + 1), attributes=dict(labels),
                    instrument=instrument))
        with self._lock:
            series.value += amount
            series.count += 1
            if spec.buckets:  # the first bucket whose bound holds it (cumulated on export)
                series.buckets[bisect_left(spec.buckets, amount)] += 1
        if spec.kind == "counter":
            series.instrument.add(amount, series.attributes)  # type: ignore[attr-defined]
        else:
            series.instrument.record(amount, series.attributes)  # type: ignore[attr-defined]

    def set_gauge(self, name: str, value: float, attributes: Mapping[str, str] | None = None
                  ) -> None:
        self._instrument(SPECS[name])
        with self._lock:
            self._gauges[(name, tuple(sorted((attributes or {}).items())))] = value

    def counter_total(self, name: str, **attributes: str) -> float:
        with self._lock:
            return sum(s.value for (n, labels), s in self._series.items() if n == name
                       and all(dict(labels).get(k) == v for k, v in attributes.items()))

    def prometheus_text(self) -> str:
        """Every metric in Prometheus text format (0.0.4), with HELP, TYPE and UNIT."""
        lines: list[str] = []
        with self._lock:
            for spec in SPECS.values():
                lines.extend(self._family(spec))
        return "\n".join(lines) + "\n"

    def _family(self, spec: MetricSpec) -> list[str]:
        base = prometheus_name(spec)
        kind = {"counter": "counter", "histogram": "histogram", "gauge": "gauge"}[spec.kind]
        family = base[:-len("_total")] if spec.kind == "counter" else base
        out = [f"# HELP {family} {spec.description}", f"# TYPE {family} {kind}",
               f"# UNIT {family} {spec.unit}"]
        if spec.kind == "gauge":
            for (name, labels), value in sorted(self._gauges.items()):
                if name == spec.name:
                    out.append(f"{base}{_labels(labels)} {_number(value)}")
            return out
        for (name, labels), series in sorted(self._series.items()):
            if name != spec.name:
                continue
            if spec.kind == "counter":
                out.append(f"{base}{_labels(labels)} {_number(series.value)}")
                continue
            hits = 0
            for bound, in_bucket in zip(spec.buckets, series.buckets, strict=False):
                hits += in_bucket
                out.append(f"{base}_bucket{_labels(labels, le=_number(bound))} {hits}")
            out.append(f"{base}_bucket{_labels(labels, le='+Inf')} {series.count}")
            out.append(f"{base}_sum{_labels(labels)} {_number(series.value)}")
            out.append(f"{base}_count{_labels(labels)} {series.count}")
        return out


def prometheus_name(spec: MetricSpec) -> str:
    """``affidavit.stage.duration`` (s) -> ``affidavit_stage_duration_seconds``."""
    base = spec.name.replace(".", "_")
    suffix = {"s": "_seconds", "1": "", "{answer}": "", "{document}": "",
              "{token}": "_tokens"}.get(spec.unit, "")
    if suffix and not base.endswith(suffix):
        base += suffix
    return base + "_total" if spec.kind == "counter" else base


def _labels(labels: Labels, **extra: str) -> str:
    pairs = [*labels, *extra.items()]
    if not pairs:
        return ""
    escaped = (f'{k.replace(".", "_")}="{_escape(v)}"' for k, v in pairs)
    return "{" + ",".join(escaped) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


REGISTRY = Registry()
"""The process's registry: every recording function below writes here and to OpenTelemetry."""


def record_stage(stage: str, seconds: float) -> None:
    REGISTRY.add("affidavit.stage.duration", seconds, {"affidavit.stage": stage})


def record_answer(output_state: str) -> None:
    REGISTRY.add("affidavit.answers", 1, {"affidavit.output_state": output_state})


def record_document(status: str) -> None:
    """One document's outcome (INGESTED, UNCHANGED, QUARANTINED)."""
    REGISTRY.add("affidavit.ingest.documents", 1, {"affidavit.status": status})
    total = REGISTRY.counter_total("affidavit.ingest.documents")
    quarantined = REGISTRY.counter_total("affidavit.ingest.documents",
                                         **{"affidavit.status": "QUARANTINED"})
    REGISTRY.set_gauge("affidavit.ingest.quarantine_ratio", quarantined / total)


def record_derived(store: Store, tenant: str, settings: Settings, alias: str,
                   links: Sequence[str], *, tokens: int) -> None:
    """A derived document's tokens, its cost proxy and its unresolved relative links.

    The cost proxy counts the tokens a hosted model would bill for this document: once for
    the embedding backend when vectors are computed at ingest, once for the model
    classifier when it is enabled (zero on the offline defaults)."""
    billed = int(settings.vectors.backend != "none" and settings.vectors.compute == "ingest")
    billed += int(settings.sensitivity.model.enabled)
    REGISTRY.add("affidavit.document.tokens", tokens)
    REGISTRY.add("affidavit.document.cost_proxy", tokens * billed)
    known = _known_aliases(store, tenant)
    known.add(alias)
    relative = [t for t in (_relative_target(alias, link) for link in links) if t]
    if relative:
        record_links(len(relative), sum(1 for t in relative if t not in known))


_aliases: dict[tuple[int, str], set[str]] = {}


def _known_aliases(store: Store, tenant: str) -> set[str]:
    """The paths of the tenant's documents, read once per store and then kept up to date
    by the documents this process derives (a metric's view: not re-read per document, nor
    for each in-memory derivation of a requalification)."""
    base = getattr(store, "underlying", store)  # a derivation's view: its store
    key = (id(base), tenant)
    if key not in _aliases:
        _aliases[key] = {h.alias for h in base.heads(tenant)}
    return _aliases[key]


def _relative_target(alias: str, link: str) -> str | None:
    """The path a relative link names, from the linking document's path; None for a URL,
    an anchor or a link that climbs out of the source."""
    target = link.split("#", 1)[0].split("?", 1)[0]
    if not target or "://" in target or target.startswith(("mailto:", "/")):
        return None
    parts: list[str] = list(PurePosixPath(alias).parent.parts)
    for part in PurePosixPath(target).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


_links = {"all": 0, "unresolved": 0}


def record_links(total: int, unresolved: int) -> None:
    """A document's relative links and how many name no document the store knows."""
    with REGISTRY._lock:
        _links["all"] += total
        _links["unresolved"] += unresolved
        ratio = _links["unresolved"] / _links["all"] if _links["all"] else 0.0
    REGISTRY.set_gauge("affidavit.ingest.unresolved_link_ratio", ratio)


def record_leak_test(passed: int, probes: int) -> None:
    REGISTRY.set_gauge("affidavit.leak_test.pass_ratio", passed / probes if probes else 1.0)
