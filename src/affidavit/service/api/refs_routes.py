"""``/v1/references``: soft references between documents, for the verified caller.

A caller sees a reference only if it may read both ends (a citation only if it may view the
answer's ledger record: its own); it creates one only if it may read both ends, and the
creation is a policy event with the caller's principal as its actor. The reason a caller
writes is accepted whatever it names and shown only to readers granted its label. Every
refusal is one 404 problem, the same bytes whether the document is missing or hidden.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import Field

from affidavit.engine.query import Engine
from affidavit.policy.policy import SensitivityPolicy
from affidavit.references.links import (
    MAX_REASON_CHARS,
    add_reference,
    list_references,
    resolve_document,
    search_references,
)
from affidavit.service.api.schemas import PROBLEMS, RequestBody
from affidavit.service.api.state import SearchCaller, service_state

router = APIRouter(prefix="/v1/references", tags=["references"])


class NewReference(RequestBody):
    """A soft reference to create; its creator is the credential's principal."""

    source: str = Field(description="node id or path of the source document")
    target: str = Field(description="node id or path of the target document")
    kind: Literal["CrossReference", "DerivedFrom", "Supersedes", "BuildsOn", "Contradicts",
                  "UpdateOf", "SupportedBy", "Bookmark"]
    reason: str = Field(max_length=MAX_REASON_CHARS)
    location_type: Literal["Page", "Section", "Chunk"] | None = None
    location_detail: dict[str, str | int] = Field(default_factory=dict)


@router.post("", responses=PROBLEMS, status_code=201)
async def create_reference(body: NewReference, request: Request,
                           caller: SearchCaller) -> dict[str, Any]:
    def work(engine: Engine) -> dict[str, Any]:
        authz = engine.authz_context(caller.principal)
        policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
        return add_reference(
            engine.store, authz, policy,
            source=resolve_document(engine.store, authz, body.source),
            target=resolve_document(engine.store, authz, body.target), kind=body.kind,
            reason=body.reason, actor=caller.principal, location_type=body.location_type,
            location_detail=dict(body.location_detail)).to_dict()

    return await service_state(request).call(caller, work)


@router.get("", responses=PROBLEMS)
async def references_of(request: Request, caller: SearchCaller,
                        document: str = Query(description="node id or path"),
                        direction: Literal["in", "out", "both"] = "both"
                        ) -> list[dict[str, Any]]:
    def work(engine: Engine) -> list[dict[str, Any]]:
        authz = engine.authz_context(caller.principal)
        node = resolve_document(engine.store, authz, document)
        return [r.to_dict() for r in list_references(engine.store, authz, node,
                                                     direction=direction)]

    return await service_state(request).call(caller, work)


@router.get("/search", responses=PROBLEMS)
async def find_references(request: Request, caller: SearchCaller,
                          text: str = Query(min_length=1, max_length=500)
                          ) -> list[dict[str, Any]]:
    def work(engine: Engine) -> list[dict[str, Any]]:
        authz = engine.authz_context(caller.principal)
        return [r.to_dict() for r in search_references(engine.store, authz, text)]

    return await service_state(request).call(caller, work)
