"""``/v1/ingest``: start an ingestion run (an upload or a source URL), follow it, read its
boundary record. Roles ingester and admin; the tenant is the credential's."""

from __future__ import annotations

import json
import threading
from typing import Any

from fastapi import APIRouter, Request
from starlette.datastructures import UploadFile

from affidavit.engine.query import Engine
from affidavit.errors import InputRejected
from affidavit.ingest.supersession import Submitter
from affidavit.records import DocumentMetadata
from affidavit.service.api.auth import Credential
from affidavit.service.api.ingest_jobs import (
    IngestJobs,
    Upload,
    listing_for,
    parse_upload_metadata,
    remote_transport,
    upload_documents,
)
from affidavit.service.api.run_views import RunScreen
from affidavit.service.api.schemas import PROBLEMS
from affidavit.service.api.state import IngestCaller, service_state

router = APIRouter(prefix="/v1/ingest", tags=["ingest"])

_JOBS_LOCK = threading.Lock()

REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {"schema": {
            "type": "object", "required": ["files"],
            "properties": {
                "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
                "metadata": {"type": "string", "description": "JSON object: file name → "
                             "{source_id, title, acl, classification, oracle_id, frameworks}"},
            }}},
        "application/json": {"schema": {
            "type": "object", "required": ["source"],
            "properties": {"source": {"type": "string",
                                      "description": "an https:// or sftp:// URL"}}}},
    },
}


def ingest_jobs(request: Request) -> IngestJobs:
    """This process's ingestion runs (created with the app's first ingest request)."""
    state = service_state(request)
    with _JOBS_LOCK:
        jobs: IngestJobs | None = getattr(request.app.state, "ingest_jobs", None)
        if jobs is None:
            jobs = IngestJobs(state.settings, lambda: state.store)
            request.app.state.ingest_jobs = jobs
        return jobs


@router.post("", status_code=202, responses=PROBLEMS,
             openapi_extra={"requestBody": REQUEST_BODY})
async def start_ingest(request: Request, caller: IngestCaller) -> dict[str, Any]:
    """Start a run; its ``run_id`` comes back at once and the run executes in the
    background (follow it with ``GET /v1/ingest/{run_id}``)."""
    state = service_state(request)
    jobs = ingest_jobs(request)
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        source = _source_url(await request.body())
        transport = remote_transport(source, state.settings)
        run_id = await state.call(caller, lambda _: jobs.start(
            caller.tenant, transport, listing=listing_for(source),
            submitter=submitter_of(caller)))
        return {"run_id": run_id, "status": "RUNNING"}
    if not content_type.startswith("multipart/form-data"):
        raise InputRejected("UNSUPPORTED_MEDIA_TYPE",
                            "send multipart/form-data files or a JSON {\"source\": URL}")
    uploads = await _uploads(request)
    documents = upload_documents(uploads, state.settings.ingest.max_document_bytes,
                                 caller.principal)
    run_id = await state.call(caller, lambda _: jobs.start(caller.tenant, None, documents,
                                                            submitter=submitter_of(caller)))
    return {"run_id": run_id, "status": "RUNNING", "documents": len(documents)}


@router.get("/{run_id}", responses=PROBLEMS)
async def ingest_status(run_id: str, request: Request, caller: IngestCaller) -> dict[str, Any]:
    """RUNNING, COMPLETED, DEGRADED or FAILED, with the summary and quarantine reasons."""
    jobs = ingest_jobs(request)
    return await service_state(request).call(caller, lambda engine: jobs.status(
        caller.tenant, run_id, run_screen(engine, caller)))


@router.get("/{run_id}/boundary", responses=PROBLEMS)
async def ingest_boundary(run_id: str, request: Request,
                          caller: IngestCaller) -> dict[str, Any]:
    """The run's geometric boundary record and its dead-letter (quarantine) entries."""
    jobs = ingest_jobs(request)
    return await service_state(request).call(caller, lambda engine: jobs.boundary(
        caller.tenant, run_id, run_screen(engine, caller)))


def submitter_of(caller: Credential) -> Submitter:
    """Whom a submission acts for when it supersedes a document (affidavit.ingest.supersession)."""
    return Submitter(caller.principal, administers=caller.may("admin"), groups=caller.groups)


def run_screen(engine: Engine, caller: Credential) -> RunScreen:
    """The document names of runs the caller may see (:mod:`affidavit.service.api.run_views`)."""
    return RunScreen(engine.store, engine.authz_context(caller.principal), caller.principal,
                     administers=caller.may("admin"))


def _source_url(body: bytes) -> str:
    try:
        data = json.loads(body or b"{}")
    except ValueError as exc:
        raise InputRejected("MALFORMED_BODY", "the body is not JSON") from exc
    unknown = sorted(set(data) - {"source"}) if isinstance(data, dict) else []
    if unknown:  # refused by name, never silently dropped (as every request body)
        raise InputRejected("UNKNOWN_FIELD", f"unknown field(s): {', '.join(unknown)}")
    source = data.get("source") if isinstance(data, dict) else None
    if not isinstance(source, str) or not source.strip():
        raise InputRejected("MALFORMED_BODY", "name the source URL: {\"source\": URL}")
    return source.strip()


async def _uploads(request: Request) -> list[Upload]:
    form = await request.form()
    files = [item for item in form.getlist("files") if isinstance(item, UploadFile)]
    if not files:
        raise InputRejected("NO_FILES", "send one or more files in the 'files' field")
    names = [item.filename or "" for item in files]
    if len(set(names)) != len(names):
        raise InputRejected("DUPLICATE_FILENAME", "each uploaded file needs its own name")
    raw = form.get("metadata")
    declared = parse_upload_metadata(raw if isinstance(raw, str) else None, names)
    uploads = []
    for item, name in zip(files, names, strict=True):
        uploads.append(Upload(name, await item.read(),
                              declared.get(name, DocumentMetadata())))
    await form.close()
    return uploads
