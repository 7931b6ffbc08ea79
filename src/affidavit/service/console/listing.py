"""The Documents page: what the signed-in principal may read, each opening the reader.

No list of its own: every document head of the tenant goes through the reader
(:func:`affidavit.engine.reader.read_document`), which reads with the caller's authorization
context and answers NotFound when no paragraph is readable, so a document the caller may not
read is not listed, not even counted. Titles are the reader's: the title as a chunk the
caller may read carries it (derived text, filtered with its chunk).
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from starlette.responses import Response

from affidavit.engine.query import Engine
from affidavit.engine.reader import read_document
from affidavit.errors import NotFound
from affidavit.service.api.auth import Credential
from affidavit.service.api.state import service_state
from affidavit.service.console.render import html, page, who
from affidavit.service.console.session import Visitor

router = APIRouter(prefix="/ui", include_in_schema=False)


@dataclass(frozen=True)
class Readable:
    """One document as the caller may read it now."""

    doc_id: str
    title: str
    readable: int
    sections: int
    withheld_labels: tuple[str, ...]


def readable_documents(engine: Engine, caller: Credential) -> list[Readable]:
    """The documents of which the caller may read at least a paragraph, by title."""
    shown: list[Readable] = []
    for head in engine.store.heads(caller.tenant):
        try:
            view = read_document(engine, caller.principal, head.node_id)
        except NotFound:
            continue
        shown.append(Readable(view.doc_id, view.title,
                              sum(1 for s in view.sections if s.readable),
                              len(view.sections), view.withheld_labels))
    return sorted(shown, key=lambda d: (d.title.lower(), d.doc_id))


@router.get("/documents")
async def documents(request: Request) -> Response:
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        rows = await service_state(request).call(
            caller, lambda engine: readable_documents(engine, caller))
        return html("documents.html", me=await who(request, caller), visitor=visitor,
                    active="documents", rows=rows)
    return await page(request, "search", build)
