"""``GET /metrics``: this process's metrics in Prometheus text format, for the admin role
of the deployment's own tenant.

The values carry fixed vocabularies only (stage names, output states, statuses; see
:mod:`affidavit.observability.metrics`); the admin role is required all the same, because rates of
quarantine and answer states describe a tenant's corpus and traffic. They are the whole
process's, every tenant's counted together, so only an admin of the deployment's own tenant
(the ``tenant`` setting, its operator's) reads them: another tenant's admin would learn
when and how much its neighbours ask and ingest.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

from affidavit.errors import RoleRefused
from affidavit.observability.metrics import REGISTRY
from affidavit.service.api.schemas import PROBLEMS
from affidavit.service.api.state import AdminCaller, service_state

router = APIRouter(tags=["admin"])

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/metrics", responses=PROBLEMS, response_class=PlainTextResponse)
async def prometheus_metrics(request: Request, caller: AdminCaller) -> PlainTextResponse:
    """Every metric of the set, with its HELP, TYPE and UNIT lines."""
    if caller.tenant != service_state(request).settings.tenant:
        raise RoleRefused("process metrics are read by an admin of the deployment's tenant")
    return PlainTextResponse(REGISTRY.prometheus_text(), media_type=PROMETHEUS_TEXT)
