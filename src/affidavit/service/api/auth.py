"""Who the caller is: a verified credential, never the request body.

Three ways in, tried in this order: ``Authorization: Bearer`` with an API key
(:mod:`affidavit.authz.keys`) or an OIDC token (:mod:`affidavit.service.api.oidc`); else, when
configured, an identity header set by a reverse proxy, believed only from the configured
proxy addresses. The credential fixes the principal, the tenant and the role; its groups
(OIDC) join the tenant's policy for that request only, through :class:`CredentialAuthorizer`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from starlette.datastructures import Headers

from affidavit.audit.replay import ReplayCache
from affidavit.authz import StoreAuthorizer, parse_principal, parse_tuple
from affidavit.authz.keys import ROLES, looks_like_key, resolve_key
from affidavit.config.settings import Settings
from affidavit.errors import (
    AuthenticationError,
    AuthorizationError,
    ConfigurationError,
    InputRejected,
    RoleRefused,
)
from affidavit.service.api.oidc import OidcVerifier
from affidavit.store.protocol import RelationTuple, Store

PERMISSIONS: Mapping[str, frozenset[str]] = {
    "reader": frozenset({"query", "search", "ledger"}),
    "ingester": frozenset({"query", "search", "ledger", "ingest"}),
    "reviewer": frozenset({"query", "search", "ledger", "review"}),
    "admin": frozenset({"query", "search", "ledger", "ingest", "review", "admin"}),
}
"""What each role may call; an endpoint names one permission."""


@dataclass(frozen=True)
class Credential:
    """A verified caller: the principal, tenant and role every endpoint acts for."""

    principal: str
    tenant: str
    role: str
    method: str
    # who the rate limit counts: the API key, the token subject or the proxied principal
    limit_key: str
    groups: tuple[str, ...] = field(default=())

    def may(self, permission: str) -> bool:
        return permission in PERMISSIONS.get(self.role, frozenset())


_CURRENT: ContextVar[Credential | None] = ContextVar("affidavit_credential", default=None)


@contextmanager
def credential_scope(credential: Credential) -> Iterator[None]:
    """Run the enclosed engine calls as ``credential`` (its groups apply inside)."""
    token = _CURRENT.set(credential)
    try:
        yield
    finally:
        _CURRENT.reset(token)


class CredentialAuthorizer(StoreAuthorizer):
    """The store's policy, plus the group memberships the current credential carries."""

    def all_tuples(self, tenant: str) -> list[RelationTuple]:
        tuples = super().all_tuples(tenant)
        credential = _CURRENT.get()
        if credential is None or credential.tenant != tenant:
            return tuples
        return [*tuples, *(parse_tuple(f"group:{g}#member@{credential.principal}",
                                       source="token") for g in credential.groups)]

    def request_facts(self, tenant: str) -> tuple[str, ...]:
        credential = _CURRENT.get()
        if credential is None or credential.tenant != tenant:
            return ()
        return ("groups", *sorted(credential.groups))


class Authenticator:
    """Turns request headers into a :class:`Credential`, or AuthenticationError."""

    def __init__(self, settings: Settings, store: Store, oidc: OidcVerifier | None = None):
        self.settings = settings
        self.store = store
        self._trail = ReplayCache()
        oidc_settings = settings.service.oidc
        self.oidc = oidc or (OidcVerifier(oidc_settings) if oidc_settings.issuer else None)
        for key, role in (("service.oidc.default_role", oidc_settings.default_role),
                          ("service.proxy.role", settings.service.proxy.role)):
            if role not in ROLES:
                raise ConfigurationError(f"unknown role {role!r}", key=key)

    def authenticate(self, headers: Mapping[str, str], client_host: str | None) -> Credential:
        authorization = headers.get("authorization")
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AuthenticationError("use Authorization: Bearer <key or token>")
            return self._bearer(token.strip())
        proxied = self._proxied(headers, client_host)
        if proxied is not None:
            return proxied
        raise AuthenticationError("no credential: send Authorization: Bearer <key or token>")

    def _bearer(self, token: str) -> Credential:
        if looks_like_key(token):
            tenant, record = resolve_key(self.store, token, trail=self._trail)
            return Credential(record.principal, tenant, record.role, "api_key",
                              f"key:{tenant}:{record.key_id}")
        if self.oidc is None:
            raise AuthenticationError("the API key is not valid")
        verified = self.oidc.verify(token)
        settings = self.settings.service.oidc
        principal = _principal(f"user:{verified.subject}")
        tenant = self.settings.tenant
        if settings.tenant_claim:
            claimed = verified.claims.get(settings.tenant_claim)
            if not isinstance(claimed, str) or not claimed.strip():
                raise AuthenticationError("the bearer token names no tenant")
            tenant = claimed.strip()
            if tenant not in (settings.tenants or (self.settings.tenant,)):
                # The same words as for no tenant: a refusal names no tenant that exists.
                raise AuthenticationError("the bearer token names no tenant")
        role = settings.default_role
        if settings.role_claim and isinstance(verified.claims.get(settings.role_claim), str):
            role = str(verified.claims[settings.role_claim])
            if role not in ROLES:
                raise AuthenticationError("the bearer token names an unknown role")
        groups = _groups(verified.claims.get(settings.groups_claim))
        return Credential(principal, tenant, role, "oidc", f"oidc:{tenant}:{principal}",
                          groups)

    def _proxied(self, headers: Mapping[str, str], client_host: str | None
                 ) -> Credential | None:
        proxy = self.settings.service.proxy
        if not proxy.header or client_host not in proxy.trusted_proxies:
            return None
        if _forwarded_from(headers, client_host):
            # The server may have taken the peer address from a forwarding header, which
            # any client can write: only the connection itself vouches for the proxy.
            return None
        value = headers.get(proxy.header.lower())
        if not value:
            return None
        principal = _principal(value if ":" in value else f"user:{value}")
        tenant = (headers.get(proxy.tenant_header.lower()) or "").strip() \
            if proxy.tenant_header else ""
        tenant = tenant or self.settings.tenant
        return Credential(principal, tenant, proxy.role, "proxy",
                          f"proxy:{tenant}:{principal}")


FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")
"""Headers from which a server (uvicorn's proxy_headers) may rewrite the peer address."""


def _forwarded_from(headers: Mapping[str, str], client_host: str) -> bool:
    """Whether ``client_host`` appears in a forwarding header of the request: then it may
    be a value a client wrote rather than the address it connected from."""
    for name in FORWARDING_HEADERS:
        # Every occurrence: a server joins repeated forwarding headers into one list.
        values = (headers.getlist(name) if isinstance(headers, Headers)
                  else [headers.get(name) or ""])
        if any(client_host in value for value in values):
            return True
    return False


def require_permission(credential: Credential, permission: str) -> None:
    """RoleRefused unless the credential's role covers ``permission``."""
    if not credential.may(permission):
        raise RoleRefused(f"the role {credential.role!r} may not call this endpoint")


def _principal(text: str) -> str:
    try:
        return parse_principal(text)
    except AuthorizationError as exc:
        raise AuthenticationError("the credential names no valid principal") from exc


def _groups(value: Any) -> tuple[str, ...]:
    """Group names from a claim; names that are not valid group ids are left out (fewer
    memberships can only hide documents, never show more)."""
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    kept: list[str] = []
    for name in names:
        if not isinstance(name, str):
            continue
        try:
            parse_tuple(f"group:{name}#member@user:x", source="token")
        except InputRejected:
            continue
        kept.append(name)
    return tuple(sorted(set(kept)))
