"""Authorization context: who is asking, expanded once per request.

The seam
--------
Retrieval never asks "may X read Y?". It takes one :class:`~affidavit.records.AuthzContext`
per request and filters inside every store query with it: a chunk is visible when its ACL
tokens meet ``context.tokens``, its label is in ``context.granted_labels`` and it belongs to
a head version. An :class:`Authorizer` is anything that produces that context, so another
policy engine plugs in here and nowhere else.

The default :class:`StoreAuthorizer` reads tuples and grants from the settings and from the
store (only the stored rows the policy audit trail put there, :mod:`affidavit.audit.replay`:
a row written straight into its table grants nothing), and keeps each principal's
expanded context only as long as the store's policy generation (bumped in the transaction
of every tuple or grant change) is unchanged: one small read per request, and a removed
tuple or a revoked grant takes effect on the very next request. Settings policy is per
tenant (:meth:`Settings.policy_for`): tuples and grants configured for one tenant are never
read for another. Its contexts carry the label epoch of the settings' sensitivity policy,
so that chunks labelled under another policy are not served.

Adding an external engine (OpenFGA, SpiceDB)
--------------------------------------------
Write a class with ``context_for(tenant, principal) -> AuthzContext`` that asks the engine,
in the tenant's store or namespace, for:

* the usersets the principal belongs to (OpenFGA ``ListObjects(type=group, relation=member,
  user=...)``, SpiceDB ``LookupResources``), as ``group:NAME#member`` tokens, plus the
  principal itself and ``*``;
* the ``doc:``, ``folder:`` and ``collection:`` objects it may ``view``, folder inheritance
  resolved by the engine (its model: ``define viewer: [user, group#member] or viewer from
  parent``), as the object strings of :mod:`affidavit.authz.tuples`;
* the labels granted to any of those subjects, always including ``PUBLIC``;
* a version of the policy it answered from (a consistency token or model id), recorded in
  the ledger.

Pass it to ``Engine(authorizer=...)``. Nothing in retrieval changes, and
:class:`FailClosedAuthorizer` (which the engine wraps around every authorizer) turns any
exception or malformed answer of the adapter into :class:`AuthorizationError`: no context,
no retrieval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Protocol

from affidavit.audit.replay import PolicyState, ReplayCache, grants_in_force, tuples_in_force
from affidavit.authz.expand import PolicyIndex, granted_labels, policy_version
from affidavit.authz.tuples import parse_principal, parse_tuple
from affidavit.config.settings import PUBLIC, Settings
from affidavit.errors import AuthorizationError
from affidavit.index.epochs import serving_epoch
from affidavit.records import AuthzContext
from affidavit.store.protocol import RelationTuple, Store


class Authorizer(Protocol):
    """Turns (tenant, principal) into the context retrieval filters with."""

    def context_for(self, tenant: str, principal: str | None) -> AuthzContext: ...


def build_context(tenant: str, principal: str, tuples: Iterable[RelationTuple],
                  grants: Mapping[str, Iterable[str]]) -> AuthzContext:
    """The context of one principal under one policy (pure)."""
    policy = list(tuples)
    index = PolicyIndex.build(policy)
    subjects = index.subjects(principal)
    return AuthzContext(
        tenant=tenant,
        principal=principal,
        tokens=subjects | index.viewed(subjects),
        granted_labels=granted_labels(subjects, grants),
        policy_version=policy_version(policy, grants),
    )


class StoreAuthorizer:
    """The in-database authorizer: settings tuples and grants plus the store's own."""

    MAX_CACHED_CONTEXTS = 4096
    """Principals whose expanded context is kept; the oldest is dropped beyond this."""

    def __init__(self, store: Store, settings: Settings):
        self.store = store
        self.settings = settings
        # (tenant, principal) -> (policy generation it was expanded under, context). The
        # settings' own tuples and grants are fixed for this authorizer's life.
        self._contexts: dict[tuple[str, ...], tuple[int, AuthzContext]] = {}
        # tenant -> its serving epoch, computed once: it depends on the settings alone.
        self._serving: dict[str, str] = {}
        self._trail = ReplayCache()

    def serving_epoch(self, tenant: str) -> str:
        """The epochs a context of ``tenant`` is pinned to (index.epochs.serving_epoch)."""
        if tenant not in self._serving:
            self._serving[tenant] = serving_epoch(self.settings, tenant)
        return self._serving[tenant]

    def config_tuples(self, tenant: str | None = None) -> list[RelationTuple]:
        """Tuples the settings declare for ``tenant`` (default: the home tenant)."""
        policy = self.settings.policy_for(tenant or self.settings.tenant)
        return [parse_tuple(text, source="config") for text in policy.authz.tuples]

    def all_tuples(self, tenant: str) -> list[RelationTuple]:
        """The tenant's settings tuples and the stored tuples its policy trail put there."""
        stored = tuples_in_force(self.store.list_tuples(tenant), self._replayed(tenant))
        return [*self.config_tuples(tenant), *stored]

    def all_grants(self, tenant: str) -> dict[str, set[str]]:
        """Label grants by subject, from the tenant's settings and the stored grants its
        policy trail granted."""
        grants: dict[str, set[str]] = {}
        for subject, labels in self.settings.policy_for(tenant).grants.items():
            grants.setdefault(subject, set()).update(labels)
        stored = grants_in_force(self.store.list_grants(tenant), self._replayed(tenant))
        for subject, labels in stored.items():
            grants.setdefault(subject, set()).update(labels)
        return grants

    def _replayed(self, tenant: str) -> PolicyState:
        # Read after the rows: a change committed in between either is in both (its row and
        # its event commit together) or bumps the generation this context is cached under.
        return self._trail.state(self.store, tenant)

    def context_for(self, tenant: str, principal: str | None) -> AuthzContext:
        """The principal's context under the live policy; fail closed on any error."""
        who = parse_principal(principal)
        try:
            # Read before the policy itself: a context cached under this generation is then
            # never older than the generation says.
            generation = self.store.policy_generation(tenant)
            if generation is None:
                raise AuthorizationError(f"unknown tenant {tenant!r}")
            key = (tenant, who, *self.request_facts(tenant))
            cached = self._contexts.get(key)
            if cached is not None and cached[0] == generation:
                return cached[1]
            tuples = self.all_tuples(tenant)
            grants = self.all_grants(tenant)
        except AuthorizationError:
            raise
        except Exception as exc:
            raise AuthorizationError(
                f"authorization data unavailable ({type(exc).__name__})") from exc
        # Pinned to the epochs in force: only chunks derived under them are read.
        context = replace(build_context(tenant, who, tuples, grants),
                          label_epoch=self.serving_epoch(tenant))
        self._remember(key, generation, context)
        return context

    def request_facts(self, tenant: str) -> tuple[str, ...]:
        """What this request adds to the stored policy (e.g. a token's group claims): part
        of the cache key, so a context never outlives the request facts it was built from."""
        return ()

    def _remember(self, key: tuple[str, ...], generation: int,
                  context: AuthzContext) -> None:
        self._contexts.pop(key, None)
        if len(self._contexts) >= self.MAX_CACHED_CONTEXTS:
            self._contexts.pop(next(iter(self._contexts)))
        self._contexts[key] = (generation, context)


class FailClosedAuthorizer:
    """Wraps any authorizer so that every failure is an :class:`AuthorizationError`.

    The principal is validated before the inner authorizer is called; an exception of any
    kind, or an answer that is not a context for exactly this tenant and principal, becomes
    an AuthorizationError whose message names only the exception type (an adapter's error
    text may quote data the caller must not see).
    """

    MAX_CHECKED = 4096
    """Contexts remembered as well-formed; all are forgotten beyond this."""

    def __init__(self, inner: Authorizer):
        self.inner = inner
        # Contexts found well-formed, by identity (each kept here, so its id cannot name
        # another object while it is a key). An authorizer that caches its contexts answers
        # with the same immutable object request after request: checking its thousands of
        # tokens again (180 us for 3,000) was most of such a request's cost.
        self._checked: dict[int, AuthzContext] = {}

    def context_for(self, tenant: str, principal: str | None) -> AuthzContext:
        """The inner authorizer's context, checked; AuthorizationError on anything else."""
        who = parse_principal(principal)
        try:
            context = self.inner.context_for(tenant, who)
        except AuthorizationError:
            raise
        except Exception as exc:
            raise AuthorizationError(f"authorizer failed ({type(exc).__name__})") from exc
        known = self._checked.get(id(context))
        if known is not None and known is context:
            # Well-formed already; whom it answers for is checked on every request.
            if context.tenant != tenant or context.principal != who:
                raise AuthorizationError("authorizer answered for another tenant or principal")
            return context
        checked = checked_context(context, tenant, who)
        if len(self._checked) >= self.MAX_CHECKED:
            self._checked.clear()
        self._checked[id(checked)] = checked
        return checked


def checked_context(context: object, tenant: str, principal: str) -> AuthzContext:
    """``context`` if it is a well-formed context of ``tenant`` and ``principal``."""
    if not isinstance(context, AuthzContext):
        raise AuthorizationError("authorizer returned no authorization context")
    if context.tenant != tenant or context.principal != principal:
        raise AuthorizationError("authorizer answered for another tenant or principal")
    well_formed = (
        isinstance(context.tokens, frozenset)
        and all(isinstance(t, str) and t for t in context.tokens)
        and isinstance(context.granted_labels, frozenset)
        and all(isinstance(label, str) for label in context.granted_labels)
        and PUBLIC in context.granted_labels
        and isinstance(context.policy_version, str) and bool(context.policy_version)
        and (context.label_epoch is None
             or (isinstance(context.label_epoch, str) and bool(context.label_epoch)))
    )
    if not well_formed:
        raise AuthorizationError("authorizer returned a malformed authorization context")
    return context


class StaticAuthorizer:
    """A test double and an example adapter: a fixed policy held in memory."""

    def __init__(self, tuples: Iterable[RelationTuple],
                 grants: Mapping[str, Iterable[str]] | None = None,
                 tenants: Iterable[str] = ("default",)):
        self.tuples = list(tuples)
        self.grants = {k: set(v) for k, v in (grants or {}).items()}
        self.tenants = frozenset(tenants)

    def context_for(self, tenant: str, principal: str | None) -> AuthzContext:
        """The context under the fixed policy; unknown tenants fail closed."""
        who = parse_principal(principal)
        if tenant not in self.tenants:
            raise AuthorizationError(f"unknown tenant {tenant!r}")
        return build_context(tenant, who, self.tuples, self.grants)
