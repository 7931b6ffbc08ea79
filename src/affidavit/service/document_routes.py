"""``/v1/documents/{doc_id}``: the document reader (spec 004 layer 2) and the original
file (layer 3), both computed by :mod:`affidavit.reader` for the caller's credential."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from affidavit.reader import OriginalWithheld, original_file, read_document
from affidavit.service.problems import ProblemKind, problem_response
from affidavit.service.schemas import PROBLEMS
from affidavit.service.state import SearchCaller, service_state

router = APIRouter(prefix="/v1/documents", tags=["documents"])

REMOVED_PAGES_HEADER = "X-Affidavit-Removed-Pages"
ORIGINAL_WITHHELD = ProblemKind("original-withheld", 403,
                                "The original holds content you are not cleared for", True)


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
    """The original file when every chunk is readable; a PDF without the pages that hold
    unreadable chunks (their numbers in ``X-Affidavit-Removed-Pages``); otherwise 403."""
    try:
        original = await service_state(request).call(
            caller, lambda engine: original_file(engine, caller.principal, doc_id))
    except OriginalWithheld as exc:
        return problem_response(ORIGINAL_WITHHELD, str(exc))
    headers = {"Content-Disposition": f'attachment; filename="{original.filename}"',
               REMOVED_PAGES_HEADER: ",".join(str(p) for p in original.removed_pages)}
    return Response(original.content, media_type=original.media_type, headers=headers)

