"""``POST /v1/query/stream``: the governed answer as server-sent events (spec 003 §8.2).

Events, each a ``data:`` line of JSON:

* ``{"type": "token", "text"}`` while the model generates (think blocks already removed);
* ``{"type": "verification", "status": "started"}`` once generation ends;
* one ``{"type": "envelope", ...}``: the output state, the verified answer, claims,
  citations and the ledger summary. ``tokens_invalidated`` is true when the streamed text
  must not be shown as the answer (BLOCKED, or the verified answer differs from it);
* or, instead of the envelope, ``{"type": "error", "problem", "tokens_invalidated": true}``
  holding a problem document: no answer came of the streamed text (a failed ledger write
  among the causes: no record, no response), so every streamed token is void.

Comment lines (``: heartbeat``) keep idle proxies from closing the stream. The engine runs
on its own thread: a client that goes away stops the stream, not the request, whose ledger
record is written all the same.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import StreamingResponse

from affidavit.engine.query import AskResult, new_request_id
from affidavit.errors import LimitExceeded, ProviderError
from affidavit.service.api.auth import Credential
from affidavit.service.api.problems import kind_of
from affidavit.service.api.query_routes import PROVIDER_FAILED
from affidavit.service.api.schemas import PROBLEMS, QueryRequest, check_query_length
from affidavit.service.api.state import QueryCaller, ServiceState, service_state

router = APIRouter(prefix="/v1", tags=["query"])

EVENT_STREAM = "text/event-stream"
_DONE = "done"


class _QueueSink:
    """The engine's token sink: hands drafts to the event loop, never blocks the engine."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[tuple[str, str]]):
        self.loop = loop
        self.queue = queue

    def token(self, text: str) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, ("token", text))

    def generated(self) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, ("generated", ""))


def event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False, sort_keys=True)}\n\n"


def envelope(result: AskResult, streamed: str) -> dict[str, Any]:
    """The final event: what the client may show, and whether the stream was valid."""
    blocked = result.output_state == "BLOCKED"
    return {"type": "envelope", "request_id": result.request_id,
            "output_state": result.output_state, "answer": result.answer,
            "claims": result.claims, "citations": result.citations,
            "reasons": result.reasons,
            "tokens_invalidated": blocked or result.answer.strip() != streamed.strip(),
            "ledger_summary": {"record_id": result.ledger_record_id,
                               "record_hash": result.ledger_record_hash,
                               "request_id": result.request_id}}


def error_event(exc: Exception, request_id: str, **extra: Any) -> str:
    kind = kind_of(exc)
    body: dict[str, Any] = {"type": kind.type, "title": kind.title, "status": kind.status,
                            "request_id": request_id, **extra}
    if kind.shows_message:
        body["detail"] = str(exc)
    return event({"type": "error", "problem": body, "tokens_invalidated": True})


@router.post("/query/stream", responses={
    **PROBLEMS, 200: {"description": "server-sent events: token*, verification, envelope",
                      "content": {EVENT_STREAM: {"schema": {"type": "string"}}}}})
async def query_stream(body: QueryRequest, request: Request,
                       caller: QueryCaller) -> StreamingResponse:
    """The governed answer, streamed: draft tokens, then verification, then the envelope."""
    return answer_stream(service_state(request), caller, body)


def answer_stream(state: ServiceState, caller: Credential,
                  body: QueryRequest) -> StreamingResponse:
    """The event stream of one governed answer for ``caller`` (also the web console's)."""
    check_query_length(body.query, state.settings.service.max_query_chars)
    request_id = new_request_id()
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    sink = _QueueSink(loop, queue)
    future = state.submit(caller, lambda engine: engine.ask(
        caller.principal, body.query, options=body.options(), request_id=request_id,
        stream_to=sink, reference_depth=body.reference_depth))
    future.add_done_callback(lambda _: queue.put_nowait((_DONE, "")))
    service = state.settings.service
    events = _events(queue, future, request_id, loop.time() + service.deadline_seconds,
                     service.heartbeat_seconds)
    return StreamingResponse(events, media_type=EVENT_STREAM,
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                                      "X-Request-Id": request_id})


async def _events(queue: asyncio.Queue[tuple[str, str]], future: asyncio.Future[AskResult],
                  request_id: str, deadline: float, heartbeat: float) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    streamed: list[str] = []
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            yield error_event(LimitExceeded("deadline", "no answer within the deadline"),
                              request_id)
            return
        try:
            kind, text = await asyncio.wait_for(queue.get(), timeout=min(heartbeat, remaining))
        except TimeoutError:
            yield ": heartbeat\n\n"
            continue
        if kind == "token":
            streamed.append(text)
            yield event({"type": "token", "text": text})
        elif kind == "generated":
            yield event({"type": "verification", "status": "started"})
        else:
            break
    error = future.exception()
    if isinstance(error, Exception):
        yield error_event(error, request_id)
        return
    result = future.result()
    if any(reason.startswith(PROVIDER_FAILED) for reason in result.reasons):
        yield error_event(ProviderError(), request_id,
                          detail="the language-model provider did not answer; the refusal "
                                 "is recorded in the ledger",
                          ledger_record_id=result.ledger_record_id,
                          output_state=result.output_state)
    yield event(envelope(result, "".join(streamed)))
