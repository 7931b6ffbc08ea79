"""Console pages for readers: sign-in, Ask (streamed, then verified) and the document reader.

Routes under ``/ui``. Forms post back with the session's CSRF token; the Ask page works
without JavaScript (the form posts, the answer page follows), and with it streams the
draft from ``/ui/ask/stream`` (the same event stream as ``POST /v1/query/stream``) before
showing the verified result fragment from ``/ui/ask/result/{request_id}``.
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from affidavit.engine.original import original_file, original_offer
from affidavit.engine.query import Engine, new_request_id
from affidavit.errors import AffidavitError, InputRejected
from affidavit.service.api.auth import Credential
from affidavit.service.api.document_routes import REMOVED_PAGES_HEADER
from affidavit.service.api.schemas import QueryRequest, check_query_length
from affidavit.service.api.state import service_state
from affidavit.service.api.stream_routes import answer_stream
from affidavit.service.console.render import SECURITY_HEADERS, html, page, who
from affidavit.service.console.session import (
    COOKIE,
    Visitor,
    authenticate_bearer,
    check_csrf,
    sessions,
)
from affidavit.service.console.views import AnswerView, answer_view, document

router = APIRouter(prefix="/ui", include_in_schema=False)

LOGIN_CSRF_COOKIE = "affidavit_console_login"
MAX_TURNS = 20
_REQUEST_ID = re.compile(r"[\w-]{1,80}")
CSRF_HEADER = "x-csrf-token"


def _cookie(request: Request, response: Response, name: str, value: str) -> None:
    # Secure whenever the console is reached over HTTPS (plain HTTP only on a trusted host).
    response.set_cookie(name, value, httponly=True, samesite="strict", path="/ui",
                        secure=request.url.scheme == "https")


@router.get("")
async def home() -> Response:
    return RedirectResponse("/ui/ask", status_code=303, headers=SECURITY_HEADERS)


@router.get("/login")
async def login_form(request: Request) -> Response:
    return _login_page(request, None, 200)


def _login_page(request: Request, error: str | None, status: int) -> Response:
    csrf = secrets.token_urlsafe(32)
    response = html("login.html", status=status, csrf=csrf, error=error, me=None)
    _cookie(request, response, LOGIN_CSRF_COOKIE, csrf)
    return response


@router.post("/login")
async def login(request: Request) -> Response:
    """Verify the key or token as the API does; the session keeps it server-side."""
    form = await request.form()
    expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    given = str(form.get("csrf", ""))
    if not expected or not hmac.compare_digest(expected, given):
        return _login_page(request, "The sign-in form expired; try again.", 403)
    bearer = str(form.get("api_key", "")).strip() or str(form.get("token", "")).strip()
    if not bearer:
        return _login_page(request, "Give an API key or an OIDC token.", 400)
    try:
        authenticate_bearer(request, bearer)
    except AffidavitError:
        return _login_page(request, "That key or token is not valid.", 401)
    session = sessions(request).open(bearer)
    response = RedirectResponse("/ui/ask", status_code=303, headers=SECURITY_HEADERS)
    _cookie(request, response, COOKIE, session.session_id)
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/ui")
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    async def build(visitor: Visitor) -> Response:
        check_csrf(visitor, str((await request.form()).get("csrf", "")))
        sessions(request).close(visitor.session.session_id)
        response = RedirectResponse("/ui/login", status_code=303, headers=SECURITY_HEADERS)
        response.delete_cookie(COOKIE, path="/ui")
        return response
    return await page(request, "search", build)


# ---------------------------------------------------------------------- Ask

def thread_ids(value: str) -> list[str]:
    """The earlier turns of a conversation, oldest first, as the follow-up form carries
    them: request ids only (each read again through the ledger view rules), the last
    ``MAX_TURNS`` kept."""
    ids = [part for part in value.split(",") if _REQUEST_ID.fullmatch(part)]
    return list(dict.fromkeys(ids))[-MAX_TURNS:]


async def _ask_page(request: Request, visitor: Visitor, request_id: str | None,
                    thread: list[str]) -> Response:
    state = service_state(request)
    caller = visitor.credential
    answer, turns = None, []
    if request_id:
        answer = await state.call(caller, lambda engine: answer_view(engine, caller,
                                                                     request_id))
        # Each earlier turn through the same view: another's record reads like none.
        turns = [await state.call(caller, _viewer(caller, rid)) for rid in thread]
    return html("ask.html", me=await who(request, caller), visitor=visitor, active="ask",
                answer=answer, question=answer.question if answer else "", turns=turns,
                thread=thread if answer else [], followup=True)


def _viewer(caller: Credential, request_id: str) -> Callable[[Engine], AnswerView]:
    return lambda engine: answer_view(engine, caller, request_id)


@router.get("/ask")
async def ask_form(request: Request, request_id: str | None = None,
                   thread: str = "") -> Response:
    return await page(request, "query", lambda visitor: _ask_page(
        request, visitor, request_id, thread_ids(thread)))


@router.post("/ask")
async def ask(request: Request) -> Response:
    """Without JavaScript: answer, then show the recorded answer."""
    async def build(visitor: Visitor) -> Response:
        form = await request.form()
        check_csrf(visitor, str(form.get("csrf", "")))
        question = str(form.get("question", "")).strip()
        if not question:
            raise InputRejected("EMPTY_QUERY", "write a question")
        state = service_state(request)
        check_query_length(question, state.settings.service.max_query_chars)
        caller = visitor.credential
        request_id = new_request_id()
        await state.call(caller, lambda engine: engine.ask(caller.principal, question,
                                                           request_id=request_id))
        thread = thread_ids(str(form.get("thread", "")))
        query = urlencode({"request_id": request_id, **({"thread": ",".join(thread)}
                                                         if thread else {})})
        return RedirectResponse(f"/ui/ask?{query}", status_code=303,
                                headers=SECURITY_HEADERS)
    return await page(request, "query", build)


@router.post("/ask/stream")
async def ask_stream(request: Request) -> Response:
    """The event stream of ``POST /v1/query/stream``, for the signed-in visitor (CSRF token
    in the ``X-CSRF-Token`` header; the body is ``{"query": ...}``)."""
    async def build(visitor: Visitor) -> Response:
        check_csrf(visitor, request.headers.get(CSRF_HEADER))
        body = QueryRequest.model_validate(await request.json())
        return answer_stream(service_state(request), visitor.credential, body)
    return await page(request, "query", build)


@router.get("/ask/result/{request_id}")
async def ask_result(request: Request, request_id: str) -> Response:
    """The verified result panel of one answer (what the streaming page swaps in)."""
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        answer = await service_state(request).call(
            caller, lambda engine: answer_view(engine, caller, request_id))
        return html("_answer.html", answer=answer, visitor=visitor, followup=True,
                    thread=[])
    return await page(request, "query", build)


# ---------------------------------------------------------------------- reader

@router.get("/documents/{doc_id}")
async def reader(request: Request, doc_id: str, chunk: str | None = None) -> Response:
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        view = await service_state(request).call(
            caller, lambda engine: document(engine, caller, doc_id))
        # The download's own decision (affidavit.engine.original), not the view's completeness:
        # the file carries more than the chunks shown.
        offer = await service_state(request).call(
            caller, lambda engine: original_offer(engine, caller.principal, doc_id))
        link = {"whole": "Download the original",
                "copy": "Download the original without the pages and document details "
                        "you may not read"}.get(offer)
        return html("document.html", me=await who(request, caller), visitor=visitor,
                    doc=view, focus=chunk, original_link=link)
    return await page(request, "search", build)


@router.get("/documents/{doc_id}/original")
async def reader_original(request: Request, doc_id: str) -> Response:
    async def build(visitor: Visitor) -> Response:
        caller = visitor.credential
        original = await service_state(request).call(
            caller, lambda engine: original_file(engine, caller.principal, doc_id))
        headers: dict[str, Any] = {
            "Content-Disposition": f'attachment; filename="{original.filename}"',
            REMOVED_PAGES_HEADER: ",".join(str(p) for p in original.removed_pages),
            **SECURITY_HEADERS}
        return Response(original.content, media_type=original.media_type, headers=headers)
    return await page(request, "search", build)
