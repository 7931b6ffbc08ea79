"""The Upload page for ingesters: send files, then follow the run to its outcome.

The console adds no ingestion path of its own: the form's files become the same uploads
``POST /v1/ingest`` makes (:func:`upload_documents`, the same size limit and metadata
checks), started in the same background jobs as the submitting principal, and the run page
shows ``GET /v1/ingest/{run_id}``'s view of it (document names the caller may not see
withheld). While the run is under way the page reloads itself, so progress shows without
JavaScript.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from starlette.datastructures import UploadFile
from starlette.responses import RedirectResponse, Response

from affidavit.errors import InputRejected
from affidavit.records import DocumentMetadata
from affidavit.service.api.ingest_jobs import Upload, parse_upload_metadata, upload_documents
from affidavit.service.api.ingest_routes import ingest_jobs, run_screen, submitter_of
from affidavit.service.api.state import service_state
from affidavit.service.console.render import SECURITY_HEADERS, html, page, who
from affidavit.service.console.session import Visitor, check_csrf

router = APIRouter(prefix="/ui", include_in_schema=False)

REFRESH_SECONDS = 2


@router.get("/upload")
async def upload_form(request: Request) -> Response:
    async def build(visitor: Visitor) -> Response:
        return html("upload.html", me=await who(request, visitor.credential),
                    visitor=visitor, active="upload")
    return await page(request, "ingest", build)


def _declared(classification: str, readers: str, names: list[str]) -> str | None:
    """The metadata field the API takes, from the form's two optional fields, applied to
    every file sent (checked by the API's own parser)."""
    metadata: dict[str, Any] = {}
    if classification.strip():
        metadata["classification"] = classification.strip()
    acl = [r.strip() for r in readers.split(",") if r.strip()]
    if acl:
        metadata["acl"] = acl
    return json.dumps(dict.fromkeys(names, metadata)) if metadata else None


async def _uploads(request: Request, visitor: Visitor) -> list[Upload]:
    form = await request.form()
    check_csrf(visitor, str(form.get("csrf", "")))
    files = [f for f in form.getlist("files") if isinstance(f, UploadFile) and f.filename]
    if not files:
        raise InputRejected("NO_FILES", "choose one or more files to upload")
    names = [f.filename or "" for f in files]
    if len(set(names)) != len(names):
        raise InputRejected("DUPLICATE_FILENAME", "each uploaded file needs its own name")
    declared = parse_upload_metadata(_declared(str(form.get("classification", "")),
                                               str(form.get("readers", "")), names), names)
    uploads = [Upload(name, await f.read(), declared.get(name, DocumentMetadata()))
               for f, name in zip(files, names, strict=True)]
    await form.close()
    return uploads


@router.post("/upload")
async def upload(request: Request) -> Response:
    async def build(visitor: Visitor) -> Response:
        uploads = await _uploads(request, visitor)
        caller = visitor.credential
        state = service_state(request)
        documents = upload_documents(uploads, state.settings.ingest.max_document_bytes,
                                     caller.principal)
        jobs = ingest_jobs(request)
        run_id = await state.call(caller, lambda _: jobs.start(
            caller.tenant, None, documents, submitter=submitter_of(caller)))
        return RedirectResponse(f"/ui/upload/{run_id}", status_code=303,
                                headers=SECURITY_HEADERS)
    return await page(request, "ingest", build)


@router.get("/upload/{run_id}")
async def upload_run(request: Request, run_id: str) -> Response:
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        jobs = ingest_jobs(request)
        run = await service_state(request).call(caller, lambda engine: jobs.status(
            caller.tenant, run_id, run_screen(engine, caller)))
        counts = {k: v for k, v in (run.get("summary") or {}).items()
                  if isinstance(v, int) and not isinstance(v, bool)}
        return html("upload_run.html", me=await who(request, caller), visitor=visitor,
                    active="upload", run=run, counts=counts,
                    refresh=REFRESH_SECONDS if run["status"] == "RUNNING" else None)
    return await page(request, "ingest", build)
