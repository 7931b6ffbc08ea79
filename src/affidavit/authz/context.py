"""Authorization context: who is asking, expanded once per request.

The default :class:`StoreAuthorizer` reads tuples and grants from the settings and from the
store on every call (no cache), so a removed tuple or a revoked grant takes effect on the very
next request. An external engine (OpenFGA, SpiceDB) fits behind the same
:class:`Authorizer` protocol without any change to retrieval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from affidavit.authz.tuples import EVERYONE, parse_principal, parse_tuple
from affidavit.config import PUBLIC, Settings
from affidavit.errors import AffidavitError, AuthorizationError
from affidavit.records import AuthzContext, canonical_json, stable_hash
from affidavit.store.base import RelationTuple, Store

MAX_GROUP_DEPTH = 32


class Authorizer(Protocol):
    """Turns (tenant, principal) into the context retrieval filters with."""

    def context_for(self, tenant: str, principal: str | None) -> AuthzContext: ...


def expand_tokens(principal: str, tuples: Iterable[RelationTuple]) -> frozenset[str]:
    """The principal, every group it belongs to (transitively), and the tenant-wide token."""
    members: dict[str, set[str]] = {}
    for rel in tuples:
        if rel.object.startswith("group:") and rel.relation == "member":
            members.setdefault(rel.subject, set()).add(f"{rel.object}#member")
    tokens = {principal, EVERYONE}
    frontier = [principal]
    for _ in range(MAX_GROUP_DEPTH):
        nxt: list[str] = []
        for subject in frontier:
            for group in sorted(members.get(subject, ())):
                if group not in tokens:
                    tokens.add(group)
                    nxt.append(group)
        if not nxt:
            break
        frontier = nxt
    return frozenset(tokens)


def granted_labels(tokens: Iterable[str], grants: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """Union of the labels granted to any of the tokens; PUBLIC always. Never by severity."""
    labels = {PUBLIC}
    for token in tokens:
        labels.update(grants.get(token, ()))
    return frozenset(labels)


def policy_version(tuples: Iterable[RelationTuple], grants: Mapping[str, Iterable[str]]) -> str:
    """A hash of the whole policy a decision was made under; recorded in the ledger."""
    data = {
        "tuples": sorted(str(t) for t in tuples),
        "grants": {k: sorted(set(v)) for k, v in sorted(grants.items())},
    }
    return stable_hash("policy", canonical_json(data))[:16]


class StoreAuthorizer:
    """The in-database authorizer: settings tuples and grants plus the store's own."""

    def __init__(self, store: Store, settings: Settings):
        self.store = store
        self.settings = settings

    def config_tuples(self) -> list[RelationTuple]:
        return [parse_tuple(text, source="config") for text in self.settings.authz.tuples]

    def all_tuples(self, tenant: str) -> list[RelationTuple]:
        return [*self.config_tuples(), *self.store.list_tuples(tenant)]

    def all_grants(self, tenant: str) -> dict[str, set[str]]:
        grants: dict[str, set[str]] = {}
        for subject, labels in self.settings.grants.items():
            grants.setdefault(subject, set()).update(labels)
        for subject, labels in self.store.list_grants(tenant).items():
            grants.setdefault(subject, set()).update(labels)
        return grants

    def context_for(self, tenant: str, principal: str | None) -> AuthzContext:
        who = parse_principal(principal)
        try:
            if not self.store.tenant_exists(tenant):
                raise AuthorizationError(f"unknown tenant {tenant!r}")
            tuples = self.all_tuples(tenant)
            grants = self.all_grants(tenant)
        except AuthorizationError:
            raise
        except AffidavitError as exc:
            raise AuthorizationError(f"authorization data unavailable: {exc}") from exc
        tokens = expand_tokens(who, tuples)
        return AuthzContext(
            tenant=tenant,
            principal=who,
            tokens=tokens,
            granted_labels=granted_labels(tokens, grants),
            policy_version=policy_version(tuples, grants),
        )
