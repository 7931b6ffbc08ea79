"""What every request of one service process shares: settings, the store, the engines
(one per tenant), the authenticator, the rate limiter and the threads that run the engine.

The engine is synchronous; each call runs on the service's own thread pool inside the
caller's credential scope. A call that outlives its deadline is answered with a problem,
but keeps running to its end, so its ledger record is still written.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.errors import LimitExceeded
from affidavit.observability.traces import id_hash
from affidavit.service.api.auth import (
    Authenticator,
    Credential,
    CredentialAuthorizer,
    credential_scope,
    require_permission,
)
from affidavit.service.api.limits import RateLimiter
from affidavit.store.protocol import Store

T = TypeVar("T")

ENGINE_THREADS = 16


class ServiceState:
    """Shared by every request of one process; the store opens on first use."""

    def __init__(self, settings: Settings, store_opener: Callable[[], Store]):
        self.settings = settings
        self._store_opener = store_opener
        self._store: Store | None = None
        self._authenticator: Authenticator | None = None
        self._engines: dict[str, Engine] = {}
        self._lock = threading.Lock()
        self.limiter = RateLimiter(settings.service.rate_limit_per_minute)
        self.executor = ThreadPoolExecutor(ENGINE_THREADS, thread_name_prefix="affidavit-engine")

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                self._store = self._store_opener()
            return self._store

    @property
    def authenticator(self) -> Authenticator:
        store = self.store
        with self._lock:
            if self._authenticator is None:
                self._authenticator = Authenticator(self.settings, store)
            return self._authenticator

    def engine_for(self, tenant: str) -> Engine:
        """The tenant's engine; its authorizer adds the current credential's groups."""
        store = self.store
        with self._lock:
            engine = self._engines.get(tenant)
            if engine is None:
                engine = Engine(store, self.settings, tenant=tenant,
                                authorizer=CredentialAuthorizer(store, self.settings),
                                memory_index=self.settings.service.memory_index)
                self._engines[tenant] = engine
            return engine

    def submit(self, credential: Credential, work: Callable[[Engine], T]) -> asyncio.Future[T]:
        """Run ``work`` on the engine of the credential's tenant, as that credential."""

        def run() -> T:
            with credential_scope(credential):
                return work(self.engine_for(credential.tenant))

        # The request's context (its trace span above all) goes with the work to the thread.
        context = contextvars.copy_context()
        return asyncio.get_running_loop().run_in_executor(self.executor, context.run, run)

    async def call(self, credential: Credential, work: Callable[[Engine], T]) -> T:
        """:meth:`submit`, awaited up to the deadline (LimitExceeded after it)."""
        future = self.submit(credential, work)
        deadline = self.settings.service.deadline_seconds
        try:
            # shield: the work itself is never cancelled, only the wait for it.
            return await asyncio.wait_for(asyncio.shield(future), timeout=deadline)
        except TimeoutError:
            raise LimitExceeded("deadline", f"no answer within {deadline:g} seconds") from None

    def close(self) -> None:
        self.executor.shutdown(wait=True)
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


def service_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.affidavit
    return state


_bearer = HTTPBearer(auto_error=False, description="An API key (afd....) or an OIDC token")
# Declares the security scheme in the OpenAPI document; the header is read by caller_for.
_BearerHeader = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def caller_for(permission: str) -> Callable[..., Credential]:
    """A dependency: the verified caller, if its role covers ``permission`` and it is
    within its rate limit. The request body plays no part in it."""

    def dependency(request: Request, _: _BearerHeader) -> Credential:
        state = service_state(request)
        host = request.client.host if request.client else None
        credential = state.authenticator.authenticate(request.headers, host)
        require_permission(credential, permission)
        state.limiter.check(credential.limit_key)
        # For the access log line (affidavit.service.api.observability): a hash, never the name.
        request.state.principal_hash = id_hash(credential.principal)
        return credential

    return dependency


# The verified caller of an endpoint, by the permission it needs: ``caller: QueryCaller``.
QueryCaller = Annotated[Credential, Depends(caller_for("query"))]
SearchCaller = Annotated[Credential, Depends(caller_for("search"))]
LedgerCaller = Annotated[Credential, Depends(caller_for("ledger"))]
IngestCaller = Annotated[Credential, Depends(caller_for("ingest"))]
ReviewCaller = Annotated[Credential, Depends(caller_for("review"))]
AdminCaller = Annotated[Credential, Depends(caller_for("admin"))]
