"""The History page: the signed-in principal's own questions, newest first, each opening its
recorded answer on the Ask page (where a follow-up continues the conversation).

The ledger already records every answer with its principal and question, so history is a
view of it, not a store of its own: the caller's records only (an auditor walks everyone's
on the Ledger page), each redacted for the caller by ``redact_for`` as ``/v1/ledger`` serves
it. A record of someone else never appears, not even as a count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fastapi import APIRouter, Request
from starlette.responses import Response

from affidavit.engine.ledger_record import WITHHELD, redact_for
from affidavit.engine.query import Engine
from affidavit.service.api.auth import Credential
from affidavit.service.api.state import service_state
from affidavit.service.console.render import html, page, who
from affidavit.service.console.session import Visitor

router = APIRouter(prefix="/ui", include_in_schema=False)


@dataclass(frozen=True)
class Asked:
    """One question the caller asked, as its record shows it to the caller now."""

    request_id: str
    created_at: str
    question: str
    output_state: str


def own_questions(engine: Engine, caller: Credential) -> list[Asked]:
    """The caller's records in its tenant, newest first."""
    authz = engine.authz_context(caller.principal)
    asked: list[Asked] = []
    for entry in engine.store.iter_ledger(caller.tenant):
        if json.loads(entry.payload).get("principal") != caller.principal:
            continue
        record = redact_for(entry, authz, engine.store)["record"]
        query = record.get("query")
        asked.append(Asked(entry.request_id, entry.created_at,
                           query if isinstance(query, str) and query != WITHHELD else "",
                           str(record.get("output_state", ""))))
    return asked[::-1]


@router.get("/history")
async def history(request: Request) -> Response:
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        rows = await service_state(request).call(
            caller, lambda engine: own_questions(engine, caller))
        return html("history.html", me=await who(request, caller), visitor=visitor,
                    active="history", rows=rows)
    return await page(request, "query", build)
