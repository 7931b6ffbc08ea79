"""Settings of the HTTP service and of telemetry: ``[service]`` (with ``[service.oidc]`` and
``[service.proxy]``) and ``[telemetry]``. Part of :mod:`affidavit.config.settings`, which re-exports
them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OidcSettings:
    """OIDC bearer tokens (JWTs); off while ``issuer`` is empty."""

    issuer: str = ""
    audience: str = ""
    # the issuer's signing keys: a JWKS file, or an https URL fetched and cached
    jwks_file: str = ""
    jwks_url: str = ""
    jwks_cache_seconds: int = 300
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    leeway_seconds: int = 30
    # claim holding group names (each becomes group:NAME#member for that request)
    groups_claim: str = "groups"
    # claim holding the tenant; empty: every token belongs to the home tenant
    tenant_claim: str = ""
    # the tenants the tenant claim may name; empty: only the tenant the service serves
    # (``tenant``). A token naming any other is refused, whatever the store holds.
    tenants: tuple[str, ...] = ()
    # claim holding the service role; empty or absent: default_role
    role_claim: str = ""
    default_role: str = "reader"


@dataclass(frozen=True)
class ProxyIdentitySettings:
    """An identity header set by a reverse proxy; off while ``header`` is empty."""

    header: str = ""
    tenant_header: str = ""
    # only requests from these addresses may carry the header
    trusted_proxies: tuple[str, ...] = ()
    role: str = "reader"


@dataclass(frozen=True)
class ServiceSettings:
    """The HTTP service: its limits and how callers authenticate."""

    max_body_bytes: int = 1_048_576
    max_query_chars: int = 2_000
    rate_limit_per_minute: int = 120
    deadline_seconds: float = 120.0
    heartbeat_seconds: float = 10.0
    # Keep the tenant's postings and vectors in memory (rebuilt when its corpus changes),
    # with the authz filter inside scoring as on the SQL path: a long-running process reads
    # no chunk row per posting. SQLite stores only; PostgreSQL searches in the database.
    memory_index: bool = True
    oidc: OidcSettings = field(default_factory=OidcSettings)
    proxy: ProxyIdentitySettings = field(default_factory=ProxyIdentitySettings)


@dataclass(frozen=True)
class TelemetrySettings:
    """``[telemetry]``: where spans and metrics go (affidavit.observability.traces); ``none`` sends
    nothing anywhere."""

    exporter: str = "none"
    # OTLP over HTTP/protobuf: the collector's base URL (".../v1/traces" is appended)
    endpoint: str = "http://127.0.0.1:4318"
    # the share of new traces kept; a request that arrives sampled stays sampled
    sample_ratio: float = 1.0
    # seconds between metric exports
    metric_interval: float = 60.0
    # the service's scheduled leak test (affidavit canary run): seconds between runs, 0 off
    canary_interval_seconds: float = 0.0
    canary_tenant: str = "canary-scratch"


SERVED_TENANT_VARIABLE = "AFFIDAVIT_SERVED_TENANT"
"""The tenant ``affidavit serve`` serves, for its workers: applied as its --tenant was."""


ROLES = ("reader", "ingester", "reviewer", "admin")
"""The roles an API key may carry (:mod:`affidavit.authz.keys` decides what each may do). Kept
with the service's settings so that the command line can offer them as the choices of
``affidavit keys create --role`` without importing the key store and the authorizer."""
