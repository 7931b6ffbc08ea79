"""The service application: :func:`create_app` builds it from settings and a store opener.

Areas are routers (``query_routes``, ``stream_routes``, ``ledger_routes``); another area is
a module with its own ``router`` added to :data:`ROUTERS`, or passed to :func:`create_app`
as ``routers=``. Routers get the shared state with ``service_state(request)`` and the caller
with ``Depends(caller_for("permission"))``; they never read a principal from a body.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp

from affidavit import __version__
from affidavit.config import loader as config_module
from affidavit.config.service import SERVED_TENANT_VARIABLE
from affidavit.config.settings import Settings
from affidavit.errors import LimitExceeded
from affidavit.observability.logs import configure_json_logs
from affidavit.observability.traces import configure as configure_telemetry
from affidavit.observability.traces import flush as flush_telemetry
from affidavit.service import console
from affidavit.service.api import (
    admin_routes,
    document_routes,
    health_routes,
    ingest_routes,
    ledger_routes,
    metrics_routes,
    query_routes,
    readiness_routes,
    refs_routes,
    stream_routes,
)
from affidavit.service.api.canary_schedule import canary_schedule
from affidavit.service.api.catch_up_schedule import catch_up_schedule
from affidavit.service.api.limits import BodySizeLimit
from affidavit.service.api.observability import RequestObservability
from affidavit.service.api.problems import install_problem_handlers, problem_for
from affidavit.service.api.state import ServiceState
from affidavit.store import open_store
from affidavit.store.protocol import Store

ROUTERS: tuple[APIRouter, ...] = (query_routes.router, stream_routes.router,
                                  ledger_routes.router, document_routes.router,
                                  ingest_routes.router, admin_routes.router,
                                  refs_routes.router, console.router, metrics_routes.router,
                                  health_routes.router, readiness_routes.router)

DESCRIPTION = """A governed retrieval-augmented generation engine over HTTP.

Every request is authenticated (`Authorization: Bearer` with an API key or an OIDC token);
the principal and the tenant come from the credential, never from the body. Errors are
`application/problem+json` with a stable `type` per error class."""


def create_app(settings: Settings, store_opener: Callable[[], Store], *,
               routers: Sequence[APIRouter] = ()) -> FastAPI:
    """The service for ``settings``; the store is opened on first use and closed at exit."""
    state = ServiceState(settings, store_opener)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with canary_schedule(state), catch_up_schedule(state):
            yield
        state.close()
        flush_telemetry()  # what the last requests traced, before the process ends

    app = FastAPI(title="Affidavit", version=__version__, description=DESCRIPTION,
                  lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url="/v1/openapi.json", **_own_telemetry_only())
    app.state.affidavit = state
    install_problem_handlers(app)

    def refuse(exc: LimitExceeded) -> ASGIApp:
        return problem_for(exc)

    app.add_middleware(BodySizeLimit, max_bytes=settings.service.max_body_bytes,
                       refuse=refuse)
    # Outermost: every request, refused ones included, has a span and an access log line.
    configure_telemetry(settings.telemetry)
    configure_json_logs()
    app.add_middleware(RequestObservability)
    for router in (*ROUTERS, *routers):
        app.include_router(router)
    return app


def _own_telemetry_only() -> dict[str, Any]:
    """Turn off FastAPI's built-in spans, metrics and logs (versions that have them): they
    record full URLs, client addresses and user agents; the service's own middleware
    (affidavit.service.api.observability) records only what the attribute policy allows."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "metrics": False, "logs": False,
                          "operation_spans": False}}


def store_opener_for(settings: Settings, base: Path) -> Callable[[], Store]:
    """Opens the settings' store, a relative path taken from ``base``; never creates it."""
    return lambda: open_store(settings.store.db, base=base, create=False,
                              settings=settings.store)


def app_from_environment() -> FastAPI:
    """The application uvicorn builds in each worker (``affidavit serve`` sets the
    environment: ``AFFIDAVIT_CONFIG``, ``AFFIDAVIT_DB``, ``AFFIDAVIT_SERVED_TENANT``)."""
    settings = config_module.load(None, overrides={"tenant": os.environ.get(
        SERVED_TENANT_VARIABLE)})
    return create_app(settings, store_opener_for(settings, Path.cwd()))
