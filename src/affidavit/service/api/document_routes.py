"""``/v1/documents/{doc_id}``: the document reader (spec 004 layer 2, computed by
:mod:`affidavit.engine.reader`) and the original file (layer 3, :mod:`affidavit.engine.original`),
both
for the caller's credential."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from affidavit.engine.original import original_file
from affidavit.engine.reader import read_document
from affidavit.service.api.schemas import PROBLEMS
from affidavit.service.api.state import SearchCaller, service_state

router = APIRouter(prefix="/v1/documents", tags=["documents"])

REMOVED_PAGES_HEADER = "X-Affidavit-Removed-Pages"


@router.get("/{doc_id}", responses=PROBLEMS)
async def document(doc_id: str, request: Request, caller: SearchCaller) -> dict[str, Any]:
    """The document's chunks in order: readable text, or a placeholder naming the label.
    An extraction, not the original (``extraction: true``)."""
    view = await service_state(request).call(
        caller, lambda engine: read_document(engine, caller.principal, doc_id))
    return view.to_dict()


@router.get("/{doc_id}/original", responses={
    **PROBLEMS, 200: {"description": "the original file; a PDF may lack the pages named in "
                                     f"the {REMOVED_PAGES_HEADER} header",
                      "content": {"application/pdf": {}, "application/octet-stream": {}}}})
async def document_original(doc_id: str, request: Request, caller: SearchCaller) -> Response:
    """The original file when the caller holds every label it may carry (chunks, title,
    headings, file name, what the extractor dropped); else a PDF copy without the pages
    that hold unreadable chunks (their numbers in ``X-Affidavit-Removed-Pages``) and
    without the document's metadata, outline, annotations, form fields and attachments;
    else the answer to an unknown id (404)."""
    original = await service_state(request).call(
        caller, lambda engine: original_file(engine, caller.principal, doc_id))
    headers = {"Content-Disposition": f'attachment; filename="{original.filename}"',
               REMOVED_PAGES_HEADER: ",".join(str(p) for p in original.removed_pages)}
    return Response(original.content, media_type=original.media_type, headers=headers)

