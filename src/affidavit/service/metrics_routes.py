"""``GET /metrics``: this process's metrics in Prometheus text format, for the admin role.

The values carry fixed vocabularies only (stage names, output states, statuses; see
:mod:`affidavit.metrics`); the admin role is required all the same, because rates of
quarantine and answer states describe a tenant's corpus and traffic.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from affidavit.metrics import REGISTRY
from affidavit.service.schemas import PROBLEMS
from affidavit.service.state import AdminCaller

router = APIRouter(tags=["admin"])

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/metrics", responses=PROBLEMS, response_class=PlainTextResponse)
async def prometheus_metrics(caller: AdminCaller) -> PlainTextResponse:
    """Every metric of the set, with its HELP, TYPE and UNIT lines."""
    return PlainTextResponse(REGISTRY.prometheus_text(), media_type=PROMETHEUS_TEXT)
