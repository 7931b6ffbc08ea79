"""``/healthz`` and ``/readyz``: for load balancers and orchestrators, without credentials.

``/healthz`` says only that the process answers. ``/readyz`` runs the checks of
:mod:`affidavit.engine.readiness` (store reachable and migrated, ledger writable, model provider
reachable when one is configured) and answers 503 when any fails. Both bodies hold check
names, booleans and reason codes: nothing about the corpus, its tenants or its principals,
and not the explanations (which may name paths and hosts; ``affidavit doctor`` prints them
to the operator on the host).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from affidavit.engine.readiness import run_checks
from affidavit.service.api.state import service_state

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="the process is up")
async def healthz() -> JSONResponse:
    return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})


@router.get("/readyz", summary="the store, the ledger and the model can serve")
async def readyz(request: Request) -> JSONResponse:
    state = service_state(request)
    checks = await run_in_threadpool(run_checks, state.settings, Path.cwd(),
                                     lambda: state.store)
    ready = all(c.ok for c in checks)
    return JSONResponse({"status": "ready" if ready else "not_ready",
                         "checks": [c.public() for c in checks]},
                        status_code=200 if ready else 503,
                        headers={"Cache-Control": "no-store"})
