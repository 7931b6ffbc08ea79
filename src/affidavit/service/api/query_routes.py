"""``POST /v1/query`` and ``POST /v1/search``: the engine's ask and search, as the caller."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from affidavit.engine.query import AskResult, new_request_id
from affidavit.errors import LimitExceeded, ProviderError
from affidavit.service.api.problems import kind_of, problem_for, problem_response
from affidavit.service.api.schemas import (
    PROBLEMS,
    QueryRequest,
    QueryResponse,
    SearchRequest,
    SearchResponse,
    check_query_length,
)
from affidavit.service.api.state import QueryCaller, SearchCaller, service_state

router = APIRouter(prefix="/v1", tags=["query"])

PROVIDER_FAILED = "PROVIDER_FAILED"


@router.post("/query", response_model=QueryResponse, responses=PROBLEMS)
async def query(body: QueryRequest, request: Request,
                caller: QueryCaller) -> Any:
    """A governed answer: verified claims, citations and the ledger record that holds it."""
    state = service_state(request)
    check_query_length(body.query, state.settings.service.max_query_chars)
    request_id = new_request_id()
    try:
        result = await state.call(caller, lambda engine: engine.ask(
            caller.principal, body.query, options=body.options(), request_id=request_id,
            reference_depth=body.reference_depth))
    except LimitExceeded as exc:
        return problem_for(exc, request_id=request_id)
    failed = provider_failure(result)
    return failed if failed is not None else result.to_dict()


def provider_failure(result: AskResult) -> JSONResponse | None:
    """The problem answer of a request refused because the provider failed (hung, broke
    off, refused): the refusal is on the ledger, and the client is told so plainly."""
    if not any(reason.startswith(PROVIDER_FAILED) for reason in result.reasons):
        return None
    return problem_response(
        kind_of(ProviderError()), "the language-model provider did not answer; the refusal "
        "is recorded in the ledger", request_id=result.request_id,
        output_state=result.output_state, ledger_record_id=result.ledger_record_id,
        ledger_record_hash=result.ledger_record_hash)


@router.post("/search", response_model=SearchResponse, responses=PROBLEMS)
async def search(body: SearchRequest, request: Request,
                 caller: SearchCaller) -> Any:
    """The chunks the caller may read, best first (the hits of ``affidavit search --json``)."""
    state = service_state(request)
    check_query_length(body.query, state.settings.service.max_query_chars)
    hits = await state.call(caller, lambda engine: engine.search(
        caller.principal, body.query, limit=body.limit,
        reference_depth=body.reference_depth))
    return {"hits": [hit.to_dict() for hit in hits]}
