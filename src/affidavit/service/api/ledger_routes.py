"""``/v1/ledger/{request_id}``: one Claim Ledger record, its claims, its re-execution.

Each reads the record as the CLI's ``ledger show`` does: only the principal who asked, in
the credential's tenant, sees it; for anyone else it reads exactly like an id never issued;
evidence the caller may no longer read is withheld
(:func:`affidavit.engine.ledger_record.redact_for`).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request

from affidavit.authz import may_view_record
from affidavit.engine.ledger_record import WITHHELD, redact_for
from affidavit.engine.query import Engine
from affidavit.engine.replay import replay
from affidavit.errors import NotFound
from affidavit.ledger.contents import referenced_chunk_ids
from affidavit.service.api.auth import Credential
from affidavit.service.api.schemas import PROBLEMS
from affidavit.service.api.state import LedgerCaller, service_state
from affidavit.store.protocol import LedgerEntry

router = APIRouter(prefix="/v1/ledger", tags=["ledger"])


def visible_view(engine: Engine, caller: Credential, request_id: str
                 ) -> tuple[LedgerEntry, dict[str, Any]]:
    """The entry and the caller's view of it; NotFound when the caller may not see it."""
    authz = engine.authz_context(caller.principal)
    entry = engine.store.get_ledger(caller.tenant, request_id)
    if entry is None or not may_view_record(json.loads(entry.payload), authz):
        raise NotFound(f"no ledger record {request_id} that you may see")
    return entry, redact_for(entry, authz, engine.store)


@router.get("/{request_id}", responses=PROBLEMS)
async def ledger_record(request_id: str, request: Request,
                        caller: LedgerCaller) -> dict[str, Any]:
    """The full record as the caller may see it, with its chain position and hash."""
    _, view = await service_state(request).call(
        caller, lambda engine: visible_view(engine, caller, request_id))
    return view


@router.get("/{request_id}/claims", responses=PROBLEMS)
async def ledger_claims(request_id: str, request: Request,
                        caller: LedgerCaller) -> dict[str, Any]:
    """Per-claim breakdown: status, support, layer scores and contrastive deltas."""
    _, view = await service_state(request).call(
        caller, lambda engine: visible_view(engine, caller, request_id))
    record = view["record"]
    claims = record.get("claims", [])
    withheld = claims == WITHHELD or not isinstance(claims, list)
    return {"request_id": record.get("request_id"), "record_id": record.get("record_id"),
            "output_state": record.get("output_state"), "withheld": withheld,
            "claims": [] if withheld else claims,
            "layers_available": None if withheld else record.get("layers_available")}


@router.post("/{request_id}/verify", responses=PROBLEMS)
async def ledger_verify(request_id: str, request: Request,
                        caller: LedgerCaller) -> dict[str, Any]:
    """Re-execute the record from its logged state: pass or fail, with the first difference."""
    state = service_state(request)

    def verify(engine: Engine) -> dict[str, Any]:
        entry, view = visible_view(engine, caller, request_id)
        return replay_view(engine, caller, entry, view)

    return await state.call(caller, verify)


def _sees_whole_record(engine: Engine, caller: Credential, entry: LedgerEntry,
                       view: dict[str, Any]) -> bool:
    """Whether the caller may read every chunk the record names, as it names them."""
    if view["record"].get("withheld_evidence"):
        return False
    named = referenced_chunk_ids(json.loads(entry.payload))
    readable = engine.store.get_chunks(engine.authz_context(caller.principal), named)
    return len({r.chunk.chunk_id for r in readable}) == len(named)


def replay_view(engine: Engine, caller: Credential, entry: LedgerEntry,
                view: dict[str, Any]) -> dict[str, Any]:
    """Re-execute ``entry``; ``view`` is the caller's redacted view of it."""
    report = replay(engine.store, engine.settings, entry.record_id, tenant=caller.tenant)
    data = report.to_dict()
    difference = data.get("first_difference")
    if difference and not _sees_whole_record(engine, caller, entry, view):
        # The difference can quote anything the record names (evidence, candidates, gate
        # decisions and their terms): only the step, unless the caller may read it all.
        data["first_difference"] = str(difference).split(":", 1)[0] + ": " + WITHHELD
    return {"request_id": entry.request_id, "record_id": entry.record_id,
            "passed": report.matches, **data}
