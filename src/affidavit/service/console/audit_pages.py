"""Console pages for auditors, reviewers and administrators: the ledger (records, claims,
chain status, replay), review (SIRE proposals, ingest runs and quarantine) and the
permissions explainer with its JSON twin."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from affidavit.errors import AffidavitError, NotFound, RoleRefused
from affidavit.service.api.ingest_routes import ingest_jobs
from affidavit.service.api.state import service_state
from affidavit.service.console import review as review_views
from affidavit.service.console.render import SECURITY_HEADERS, html, page, who
from affidavit.service.console.session import Visitor, check_csrf
from affidavit.service.console.views import (
    AUDITOR_ROLES,
    answer_view,
    chain_status,
    ledger_rows,
    replay_record,
)

router = APIRouter(prefix="/ui", include_in_schema=False)

LAYER_NAMES = ("l1_confidence", "l3_stability", "embedding", "nli")


# ---------------------------------------------------------------------- ledger

@router.get("/ledger")
async def ledger(request: Request) -> Response:
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        state = service_state(request)
        rows = await state.call(caller, lambda engine: ledger_rows(engine, caller))
        chain = await state.call(caller, lambda engine: chain_status(engine, caller))
        return html("ledger.html", me=await who(request, caller), visitor=visitor,
                    active="ledger", rows=rows, chain=chain,
                    everyone=caller.role in AUDITOR_ROLES)
    return await page(request, "ledger", build)


async def _record_page(request: Request, visitor: Visitor, request_id: str,
                       replayed: dict[str, object] | None = None) -> Response:
    caller = visitor.credential
    answer = await service_state(request).call(
        caller, lambda engine: answer_view(engine, caller, request_id))
    return html("record.html", me=await who(request, caller), visitor=visitor,
                active="ledger", answer=answer, replay=replayed,
                layer_names=LAYER_NAMES)


@router.get("/ledger/{request_id}")
async def ledger_record(request: Request, request_id: str) -> Response:
    return await page(request, "ledger",
                      lambda visitor: _record_page(request, visitor, request_id))


@router.post("/ledger/{request_id}/replay")
async def ledger_replay(request: Request, request_id: str) -> Response:
    async def build(visitor: Visitor) -> Response:
        check_csrf(visitor, str((await request.form()).get("csrf", "")))
        caller = visitor.credential
        replayed = await service_state(request).call(
            caller, lambda engine: replay_record(engine, caller, request_id))
        return await _record_page(request, visitor, request_id, replayed)
    return await page(request, "ledger", build)


# ---------------------------------------------------------------------- review

def _reviewer(visitor: Visitor) -> None:
    if not (visitor.may("review") or visitor.may("ingest")):
        raise RoleRefused(f"the role {visitor.credential.role!r} may not review")


async def _review_page(request: Request, visitor: Visitor, message: str | None = None
                       ) -> Response:
    _reviewer(visitor)
    caller = visitor.credential
    state = service_state(request)
    proposals = (await state.call(caller, lambda e: review_views.proposals(e, caller))
                 if visitor.may("review") else [])
    lapses = (await state.call(caller, lambda e: review_views.lapses(e, caller))
              if visitor.may("review") else [])
    jobs = ingest_jobs(request)
    runs = (await state.call(caller, lambda e: review_views.runs(
        e, caller, lambda run: jobs.submitter(caller.tenant, run)))
            if visitor.may("ingest") else [])
    return html("review.html", me=await who(request, caller), visitor=visitor,
                active="review", proposals=proposals, lapses=lapses, runs=runs,
                message=message)


@router.get("/review")
async def review(request: Request, message: str | None = None) -> Response:
    return await page(request, "query",
                      lambda visitor: _review_page(request, visitor, message))


def _back_to_review(message: str) -> Response:
    return RedirectResponse(f"/ui/review?message={quote(message)}", status_code=303,
                            headers=SECURITY_HEADERS)


@router.post("/review/sire/{sire_id}")
async def decide(request: Request, sire_id: str) -> Response:
    """Approve or reject as the signed-in reviewer (never a name from the form)."""
    async def build(visitor: Visitor) -> Response:
        form = await request.form()
        check_csrf(visitor, str(form.get("csrf", "")))
        approve = form.get("decision") == "approve"
        caller = visitor.credential
        record = await service_state(request).call(
            caller, lambda e: review_views.decide_proposal(e, caller, sire_id, approve))
        return _back_to_review(f"{record.state}: {record.sire_id} by {record.approved_by}")
    return await page(request, "review", build)


@router.post("/review/quarantine/release")
async def release(request: Request) -> Response:
    async def build(visitor: Visitor) -> Response:
        form = await request.form()
        check_csrf(visitor, str(form.get("csrf", "")))
        run_id, alias = str(form.get("run_id", "")), str(form.get("alias", ""))
        caller = visitor.credential
        jobs = ingest_jobs(request)
        released = await service_state(request).call(
            caller, lambda e: review_views.release(
                e, caller, run_id, alias, lambda run: jobs.submitter(caller.tenant, run)))
        if not released:
            raise NotFound("no unreleased quarantine entry with that run and alias")
        return _back_to_review(f"released {alias} from {run_id} as {caller.principal}")
    return await page(request, "ingest", build)


# ---------------------------------------------------------------------- permissions

@router.get("/permissions")
async def permissions(request: Request, principal: str = "", doc: str = "") -> Response:
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        explanation, error = None, None
        if principal.strip() and doc.strip():
            try:
                explanation = await service_state(request).call(
                    caller, lambda e: review_views.explain(e, caller, principal.strip(),
                                                           doc.strip()))
            except AffidavitError as exc:
                error = str(exc)
        return html("permissions.html", me=await who(request, caller), visitor=visitor,
                    active="permissions", principal=principal, doc=doc,
                    explanation=explanation, error=error)
    return await page(request, "admin", build)


@router.get("/permissions.json")
async def permissions_json(request: Request, principal: str, doc: str) -> Response:
    """The explainer's answer as ``affidavit authz explain --json`` prints it."""
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        explanation = await service_state(request).call(
            caller, lambda e: review_views.explain(e, caller, principal.strip(), doc.strip()))
        return JSONResponse(explanation.to_dict(), headers=SECURITY_HEADERS)
    return await page(request, "admin", build)
