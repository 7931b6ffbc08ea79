"""Errors as ``application/problem+json`` (RFC 9457), one stable ``type`` per error class.

The table below maps the exception tree of :mod:`affidavit.errors` to HTTP: the most
specific class first. ``detail`` is the exception's message only where that message is
known to carry nothing but the caller's own input or fixed text; store, configuration,
governance and provider messages can name paths, hosts or evidence, so those problems say
only what kind of failure it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from affidavit.errors import (
    AffidavitError,
    AuthenticationError,
    AuthorizationError,
    ConfigurationError,
    GovernanceError,
    InputRejected,
    LedgerError,
    LimitExceeded,
    NotFound,
    ProviderError,
    RestrictedContentError,
    RoleRefused,
    StoreError,
)
from affidavit.observability.traces import mark_current_failed

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:affidavit:problem:"


@dataclass(frozen=True)
class ProblemKind:
    slug: str
    status: int
    title: str
    # whether the exception's own message is safe to show as ``detail``
    shows_message: bool

    @property
    def type(self) -> str:
        return TYPE_PREFIX + self.slug


PROBLEM_KINDS: tuple[tuple[type[Exception], ProblemKind], ...] = (
    (AuthenticationError, ProblemKind("unauthenticated", 401, "Authentication required", True)),
    (RoleRefused, ProblemKind("role-refused", 403, "The role may not call this", True)),
    (AuthorizationError, ProblemKind("authorization-failed", 403,
                                     "No authorization context: the request fails closed",
                                     True)),
    (NotFound, ProblemKind("not-found", 404, "Not found", True)),
    (InputRejected, ProblemKind("input-rejected", 422, "The input was rejected", True)),
    (RestrictedContentError, ProblemKind("restricted-content", 403,
                                         "RESTRICTED text cannot go to a model", False)),
    (GovernanceError, ProblemKind("governance-refused", 403,
                                  "A governance component refused", False)),
    (ProviderError, ProblemKind("provider-failed", 502,
                                "The language-model provider failed", False)),
    (LedgerError, ProblemKind("ledger-unavailable", 503, "The ledger could not be written",
                              False)),
    (StoreError, ProblemKind("store-unavailable", 503, "The store is unavailable", False)),
    (ConfigurationError, ProblemKind("configuration-error", 500,
                                     "The service is misconfigured", False)),
    (AffidavitError, ProblemKind("internal-error", 500, "The request failed", False)),
)

LIMIT_KINDS: dict[str, ProblemKind] = {
    "body_size": ProblemKind("body-too-large", 413, "The request body is too large", True),
    "query_length": ProblemKind("query-too-long", 413, "The query is too long", True),
    "rate": ProblemKind("rate-limited", 429, "Too many requests", True),
    "deadline": ProblemKind("deadline-exceeded", 504, "The request ran out of time", True),
}
INVALID_REQUEST = ProblemKind("invalid-request", 422, "The request is malformed", True)
INTERNAL = ProblemKind("internal-error", 500, "The request failed", False)


def problem_response(kind: ProblemKind, detail: str | None = None,
                     headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"type": kind.type, "title": kind.title, "status": kind.status}
    if detail:
        body["detail"] = detail
    body.update(extra)
    return JSONResponse(body, status_code=kind.status, headers=headers,
                        media_type=PROBLEM_JSON)


def kind_of(exc: Exception) -> ProblemKind:
    if isinstance(exc, LimitExceeded):
        return LIMIT_KINDS.get(exc.limit, INTERNAL)
    for cls, kind in PROBLEM_KINDS:
        if isinstance(exc, cls):
            return kind
    return INTERNAL


def problem_for(exc: Exception, **extra: Any) -> JSONResponse:
    """The problem response of any exception (unknown ones show no message)."""
    kind = kind_of(exc)
    headers: dict[str, str] = {}
    if isinstance(exc, AuthenticationError):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, LimitExceeded):
        extra["limit"] = exc.limit
        if exc.retry_after is not None:
            headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, InputRejected):
        extra["reason_code"] = exc.reason_code
    detail = str(exc) if kind.shows_message else None
    return problem_response(kind, detail, headers or None, **extra)


def install_problem_handlers(app: FastAPI) -> None:
    """Every error the app can raise leaves as a problem document."""

    async def on_error(request: Request, exc: Exception) -> Response:
        response = problem_for(exc)
        # The request's span and access log line say what failed by type and reason code
        # (affidavit.service.api.observability); a 4xx is the caller's, not a failed span.
        mark_current_failed(exc, status=response.status_code >= 500)
        request.state.failure = exc
        return response

    async def on_http(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        kind = ProblemKind("not-found", 404, "Not found", True) if status == 404 else \
            ProblemKind(f"http-{status}", status, str(getattr(exc, "detail", "")), False)
        return problem_response(kind, None, getattr(exc, "headers", None))

    async def on_invalid(request: Request, exc: Exception) -> Response:
        errors = exc.errors() if isinstance(exc, RequestValidationError) else []
        # Field locations and messages only: never echo the submitted values.
        shown = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
                 for e in errors]
        # A field the service does not know is refused by name, never silently dropped.
        unknown = [str(e["loc"][-1]) for e in errors
                   if e.get("type") == "extra_forbidden" and e.get("loc")]
        detail = ("unknown field(s): " + ", ".join(unknown) if unknown
                  else "the request does not match the schema")
        extra: dict[str, Any] = {"unknown_fields": unknown} if unknown else {}
        return problem_response(INVALID_REQUEST, detail, errors=shown, **extra)

    app.add_exception_handler(AffidavitError, on_error)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(Exception, on_error)
