"""Rendering console pages: Jinja2 templates with autoescaping, strict response headers,
and the one place where page errors become pages (sign-in, 403, 404, 429).

Every page is served with a Content-Security-Policy that admits only this origin's own
script and style files: no inline script, no external host, nothing fetched at run time
from anywhere else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import Request
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.responses import HTMLResponse, RedirectResponse, Response

from affidavit.errors import AffidavitError, LimitExceeded, NotFound, RoleRefused
from affidavit.service.api.auth import Credential
from affidavit.service.api.problems import kind_of
from affidavit.service.api.state import service_state
from affidavit.service.console.markdown import markdown_html, marked_html
from affidavit.service.console.session import (
    CsrfRejected,
    LoginRequired,
    Visitor,
    visitor,
)
from affidavit.service.console.views import Identity, claim_marked, identity, marked

HERE = Path(__file__).parent
TEMPLATES = Environment(loader=FileSystemLoader(HERE / "templates"),
                        autoescape=select_autoescape(["html"]), trim_blocks=True,
                        lstrip_blocks=True)
# Answer text with citation markers, used by the answer fragment wherever it is included;
# Markdown (answers, cards, the reader) always through the one sanitising renderer.
TEMPLATES.globals.update(marked=marked, claim_marked=claim_marked, marked_html=marked_html,
                         markdown_html=markdown_html)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; connect-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STATES = ("AUTHORIZED", "NARRATIVE_ONLY", "REQUIRES_SPEC", "BLOCKED")


def html(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    body = TEMPLATES.get_template(template).render(**context)
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)


async def who(request: Request, caller: Credential) -> Identity:
    return await service_state(request).call(caller, lambda engine: identity(engine, caller))


Page = Callable[[Visitor], Awaitable[Response]]


async def page(request: Request, permission: str, build: Page) -> Response:
    """Run ``build`` for the signed-in visitor whose role covers ``permission``; the
    failures every page shares become pages of their own."""
    try:
        caller = visitor(request, permission)
    except LoginRequired:
        return RedirectResponse("/ui/login", status_code=303, headers=SECURITY_HEADERS)
    except AffidavitError as exc:
        return await _refusal(request, None, exc)
    try:
        return await build(caller)
    except CsrfRejected:
        return await _refusal(request, caller, RoleRefused("the form's CSRF token is missing "
                                                           "or wrong; reload the page"))
    except AffidavitError as exc:
        return await _refusal(request, caller, exc)


async def _refusal(request: Request, caller: Visitor | None, exc: AffidavitError) -> Response:
    kind = kind_of(exc)
    message = str(exc) if kind.shows_message else kind.title
    if isinstance(exc, NotFound):
        message = str(exc)
    me = None
    if caller is not None:
        try:
            me = await who(request, caller.credential)
        except AffidavitError:
            me = None
    response = html("error.html", status=kind.status, me=me, visitor=caller,
                    title=kind.title, message=message, status_code=kind.status)
    if isinstance(exc, LimitExceeded) and exc.retry_after is not None:
        response.headers["Retry-After"] = str(exc.retry_after)
    return response
