"""Administration and review over HTTP, each behind a role, always in the credential's tenant.

* ``/v1/admin/authz``: relationship tuples and label grants (role admin);
* ``/v1/admin/keys``: API keys of the tenant (role admin; a key is shown once);
* ``/v1/admin/runs`` and ``/v1/admin/quarantine``: ingestion runs and their quarantine
  (roles ingester and admin);
* ``/v1/review/sire``: SIRE proposals as the reviewer may see them, and their approval,
  recorded with the reviewer's principal from the credential (roles reviewer and admin).

Who acts is never read from a body: approvals and releases name the credential's principal.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import Field

from affidavit.audit import changes as audited
from affidavit.authz import StoreAuthorizer, parse_tuple
from affidavit.authz import keys as api_keys
from affidavit.authz.keys import describe
from affidavit.authz.tuples import parse_subject
from affidavit.engine.query import Engine
from affidavit.errors import InputRejected, NotFound
from affidavit.identity.lifecycle import approve_sire
from affidavit.identity.sire_labels import sire_records_for
from affidavit.service.api.ingest_routes import ingest_jobs, run_screen
from affidavit.service.api.schemas import PROBLEMS, RequestBody
from affidavit.service.api.state import AdminCaller, IngestCaller, ReviewCaller, service_state
from affidavit.store.protocol import SireRecord

router = APIRouter(tags=["admin"])


class TupleBody(RequestBody):
    tuple: str = Field(min_length=1, description="object#relation@subject")


class GrantBody(RequestBody):
    subject: str = Field(min_length=1, description="user:alice or group:finance#member")
    labels: list[str] = Field(min_length=1)


class KeyBody(RequestBody):
    principal: str = Field(min_length=1)
    role: Literal["reader", "ingester", "reviewer", "admin"] = "reader"
    expires: str | None = Field(default=None, description="YYYY-MM-DD or an ISO time")


class ReleaseBody(RequestBody):
    run_id: str = Field(min_length=1)
    alias: str = Field(min_length=1)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# ---------------------------------------------------------------------- tuples and grants

@router.get("/v1/admin/authz", responses=PROBLEMS)
async def list_authz(request: Request, caller: AdminCaller) -> dict[str, Any]:
    """Every tuple (configured and stored, with its source) and every grant of the tenant."""
    def listing(engine: Engine) -> dict[str, Any]:
        authorizer = StoreAuthorizer(engine.store, engine.settings)
        tuples = sorted(authorizer.all_tuples(caller.tenant), key=str)
        grants = authorizer.all_grants(caller.tenant)
        return {"tuples": [{"tuple": str(t), "source": t.source} for t in tuples],
                "grants": {k: sorted(v) for k, v in sorted(grants.items())}}
    return await service_state(request).call(caller, listing)


@router.post("/v1/admin/authz/tuples", responses=PROBLEMS)
async def add_tuple(body: TupleBody, request: Request, caller: AdminCaller) -> dict[str, Any]:
    rel = parse_tuple(body.tuple)
    changed = await service_state(request).call(
        caller, lambda engine: audited.add_tuple(engine.store, caller.tenant, rel,
                                                 actor=caller.principal))
    return {"tuple": str(rel), "added": changed}


@router.post("/v1/admin/authz/tuples/remove", responses=PROBLEMS)
async def remove_tuple(body: TupleBody, request: Request,
                       caller: AdminCaller) -> dict[str, Any]:
    """Remove a stored tuple (tuples from the settings file are changed there)."""
    rel = parse_tuple(body.tuple)

    def remove(engine: Engine) -> bool:
        configured = engine.settings.policy_for(caller.tenant).authz.tuples
        if str(rel) in {str(parse_tuple(t)) for t in configured}:
            raise InputRejected("CONFIGURED_TUPLE", "the tuple is defined in the settings file")
        return audited.remove_tuple(engine.store, caller.tenant, rel, actor=caller.principal)

    if not await service_state(request).call(caller, remove):
        raise NotFound("no such tuple in the store")
    return {"tuple": str(rel), "removed": True}


def _grant_args(body: GrantBody, labels_known: tuple[str, ...]) -> tuple[str, list[str]]:
    labels = [label.upper() for label in body.labels]
    if any(label not in labels_known for label in labels):
        raise InputRejected("UNKNOWN_LABEL", "name configured labels only")
    return parse_subject(body.subject), labels


@router.post("/v1/admin/authz/grants", responses=PROBLEMS)
async def grant(body: GrantBody, request: Request, caller: AdminCaller) -> dict[str, Any]:
    state = service_state(request)
    subject, labels = _grant_args(body, state.settings.sensitivity.labels)
    added = await state.call(caller, lambda engine: audited.grant_labels(
        engine.store, caller.tenant, subject, labels, actor=caller.principal))
    return {"subject": subject, "granted": added}


@router.post("/v1/admin/authz/grants/revoke", responses=PROBLEMS)
async def revoke(body: GrantBody, request: Request, caller: AdminCaller) -> dict[str, Any]:
    state = service_state(request)
    subject, labels = _grant_args(body, state.settings.sensitivity.labels)
    removed = await state.call(caller, lambda engine: audited.revoke_labels(
        engine.store, caller.tenant, subject, labels, actor=caller.principal))
    return {"subject": subject, "revoked": removed}


# ---------------------------------------------------------------------- API keys

@router.post("/v1/admin/keys", status_code=201, responses=PROBLEMS)
async def create_key(body: KeyBody, request: Request, caller: AdminCaller) -> dict[str, Any]:
    """A key of the caller's tenant; ``key`` is shown in this response only."""
    issued = await service_state(request).call(caller, lambda engine: api_keys.issue_api_key(
        engine.store, caller.tenant, body.principal, role=body.role, expires=body.expires,
        actor=caller.principal))
    return issued.to_dict()


@router.get("/v1/admin/keys", responses=PROBLEMS)
async def list_keys(request: Request, caller: AdminCaller) -> dict[str, Any]:
    records = await service_state(request).call(
        caller, lambda engine: engine.store.list_api_keys(caller.tenant))
    return {"keys": [describe(r) for r in records]}


@router.post("/v1/admin/keys/{key_id}/revoke", responses=PROBLEMS)
async def revoke_key(key_id: str, request: Request, caller: AdminCaller) -> dict[str, Any]:
    revoked = await service_state(request).call(
        caller, lambda engine: api_keys.revoke_api_key(engine.store, caller.tenant, key_id,
                                                      actor=caller.principal))
    if not revoked:
        raise NotFound(f"no active key {key_id}")
    return {"key_id": key_id, "revoked": True}


# ---------------------------------------------------------------------- runs and quarantine

@router.get("/v1/admin/runs", responses=PROBLEMS)
async def list_runs(request: Request, caller: IngestCaller, limit: int = 50) -> dict[str, Any]:
    runs = await service_state(request).call(
        caller, lambda engine: engine.store.list_runs(caller.tenant, limit=min(limit, 500)))
    return {"runs": [{"run_id": r.run_id, "status": r.status, "started_at": r.started_at,
                      "finished_at": r.finished_at} for r in runs]}


@router.get("/v1/admin/runs/{run_id}", responses=PROBLEMS)
async def show_run(run_id: str, request: Request, caller: IngestCaller) -> dict[str, Any]:
    """The run, naming only the documents the caller may see (``run_views``)."""
    jobs = ingest_jobs(request)

    def show(engine: Engine) -> dict[str, Any]:
        run = engine.store.get_run(caller.tenant, run_id)
        if run is None:
            raise NotFound(f"no run {run_id}")
        summary, quarantined = run_screen(engine, caller).run_view(
            json.loads(run.summary_json or "{}"),
            engine.store.list_quarantine(caller.tenant, run.run_id),
            jobs.submitter(caller.tenant, run))
        return {"run_id": run.run_id, "status": run.status, "started_at": run.started_at,
                "finished_at": run.finished_at, "summary": summary,
                "quarantined": quarantined}
    return await service_state(request).call(caller, show)


@router.get("/v1/admin/quarantine", responses=PROBLEMS)
async def list_quarantine(request: Request, caller: IngestCaller, run_id: str | None = None,
                          all: bool = False) -> dict[str, Any]:
    """Quarantined documents (unreleased ones unless ``all``) the caller may see named."""
    jobs = ingest_jobs(request)

    def listing(engine: Engine) -> list[dict[str, Any]]:
        records = [q for q in engine.store.list_quarantine(caller.tenant, run_id)
                   if all or q.released_by is None]
        runs = {r: engine.store.get_run(caller.tenant, r) for r in {q.run_id for q in records}}
        submitters = {r: jobs.submitter(caller.tenant, run) if run is not None else None
                      for r, run in runs.items()}
        return run_screen(engine, caller).quarantine(
            (q, submitters[q.run_id]) for q in records)
    return {"quarantined": await service_state(request).call(caller, listing)}


@router.post("/v1/admin/quarantine/release", responses=PROBLEMS)
async def release_quarantine(body: ReleaseBody, request: Request,
                             caller: IngestCaller) -> dict[str, Any]:
    """Release an entry (recorded as released by the caller): the next ingest of its source
    tries it again. Only an entry the caller sees named can be released."""
    jobs = ingest_jobs(request)

    def release(engine: Engine) -> bool:
        run = engine.store.get_run(caller.tenant, body.run_id)
        screen = run_screen(engine, caller)
        named = run is not None and any(
            q.alias == body.alias and screen.names(q, jobs.submitter(caller.tenant, run))
            for q in engine.store.list_quarantine(caller.tenant, body.run_id))
        return named and audited.release_quarantine(
            engine.store, caller.tenant, body.run_id, body.alias, actor=caller.principal)

    released = await service_state(request).call(caller, release)
    if not released:
        raise NotFound("no unreleased quarantine entry with that run and alias")
    return {"run_id": body.run_id, "alias": body.alias, "released_by": caller.principal}


# ---------------------------------------------------------------------- SIRE review

def _sire_view(record: SireRecord) -> dict[str, Any]:
    return {"sire_id": record.sire_id, "doc_id": record.node_id, "alias": record.alias,
            "title": record.title, "state": record.state, "approved_by": record.approved_by,
            "approved_at": record.approved_at, **record.sire.to_dict()}


def _visible_sire(engine: Engine, principal: str, state: str | None) -> list[SireRecord]:
    authz = engine.authz_context(principal)
    return sire_records_for(engine.store, authz, engine.store.list_sire(authz.tenant,
                                                                        state=state))


@router.get("/v1/review/sire", responses=PROBLEMS)
async def list_sire(request: Request, caller: ReviewCaller,
                    state: Literal["PROPOSED", "ACTIVE"] | None = None) -> dict[str, Any]:
    """SIRE records of the documents the reviewer may read, with the terms it may see."""
    records = await service_state(request).call(
        caller, lambda engine: _visible_sire(engine, caller.principal, state))
    return {"sire": [_sire_view(r) for r in records]}


@router.post("/v1/review/sire/{sire_id}/approve", responses=PROBLEMS)
async def approve(sire_id: str, request: Request, caller: ReviewCaller) -> dict[str, Any]:
    """Approve a proposal the reviewer may see; the approver is the credential's principal."""
    def approve_visible(engine: Engine) -> dict[str, Any]:
        visible = {r.sire_id: r for r in _visible_sire(engine, caller.principal, None)}
        if sire_id not in visible:
            raise NotFound(f"no SIRE record {sire_id} that you may review")
        record = approve_sire(engine.store, caller.tenant, sire_id, by=caller.principal,
                              at=_now())
        return _sire_view(_visible_sire_record(engine, caller.principal, record))
    return await service_state(request).call(caller, approve_visible)


def _visible_sire_record(engine: Engine, principal: str, record: SireRecord) -> SireRecord:
    shown = sire_records_for(engine.store, engine.authz_context(principal), [record])
    if not shown:
        raise NotFound(f"no SIRE record {record.sire_id} that you may review")
    return shown[0]
