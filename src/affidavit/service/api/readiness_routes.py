"""``GET /v1/admin/readiness``: whether the caller's tenant is fit to answer, for its admin.

Each check has a fixed name, a status (``ok``, ``warning``, ``error``) and a detail built
from settings and fixed text only (no document content). The tenant is not ready, and the
answer is HTTP 503, when any check is an error. Today's check:

* ``sire_exclusion_gate``: a gate that excludes nothing (spec 003 §11.3) is a warning, and
  an error under ``[sire] require_excludes = true`` (:mod:`affidavit.identity.exclusion_check`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from affidavit.engine.query import Engine
from affidavit.identity.exclusion_check import exclusion_gate_warning
from affidavit.service.api.schemas import PROBLEMS
from affidavit.service.api.state import AdminCaller, service_state

router = APIRouter(tags=["admin"])


def readiness(engine: Engine) -> dict[str, Any]:
    """The readiness report of the engine's tenant."""
    warning = exclusion_gate_warning(engine.store, engine.settings, engine.tenant)
    status = "ok" if warning is None else (
        "error" if engine.settings.sire.require_excludes else "warning")
    checks = [{"name": "sire_exclusion_gate", "status": status,
               "detail": warning or "the exclusion gate has Excluded terms to enforce"}]
    return {"tenant": engine.tenant, "ready": all(c["status"] != "error" for c in checks),
            "checks": checks}


@router.get("/v1/admin/readiness", responses={
    **PROBLEMS, 503: {"description": "the tenant is not ready: a check is an error"}})
async def tenant_readiness(request: Request, caller: AdminCaller) -> JSONResponse:
    """The readiness checks of the caller's tenant; 503 when any of them is an error."""
    report = await service_state(request).call(caller, readiness)
    return JSONResponse(report, status_code=200 if report["ready"] else 503)
