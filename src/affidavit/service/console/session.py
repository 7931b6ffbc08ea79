"""Console sessions: an opaque id in an HttpOnly, SameSite=Strict cookie, everything else on
the server.

The browser never holds the API key or token: the session keeps it in this process's
memory and authenticates it again on every request, so a revoked or expired key ends the
session at once. Each session has its own CSRF token, checked on every form.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from fastapi import Request

from affidavit.errors import AuthenticationError
from affidavit.service.api.auth import Credential, require_permission
from affidavit.service.api.state import service_state

COOKIE = "affidavit_console"
IDLE_SECONDS = 8 * 3600


@dataclass
class ConsoleSession:
    session_id: str
    bearer: str
    csrf: str
    last_seen: float


class LoginRequired(Exception):
    """No session, or its credential no longer authenticates: go to the sign-in page."""


class CsrfRejected(Exception):
    """A form arrived without the signed-in session's CSRF token."""


class SessionStore:
    """The sessions of one process (a deployment with several workers pins a browser to
    one worker, or signs in again on another)."""

    def __init__(self) -> None:
        self._sessions: dict[str, ConsoleSession] = {}
        self._lock = threading.Lock()

    def open(self, bearer: str) -> ConsoleSession:
        session = ConsoleSession(secrets.token_urlsafe(32), bearer, secrets.token_urlsafe(32),
                                 time.monotonic())
        with self._lock:
            # Idle sessions go when a new one opens, so the table never outgrows its use.
            idle = [k for k, v in self._sessions.items()
                    if session.last_seen - v.last_seen > IDLE_SECONDS]
            for key in idle:
                del self._sessions[key]
            self._sessions[session.session_id] = session
        return session

    def find(self, session_id: str | None) -> ConsoleSession | None:
        if not session_id:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or now - session.last_seen > IDLE_SECONDS:
                self._sessions.pop(session_id, None)
                return None
            session.last_seen = now
            return session

    def close(self, session_id: str | None) -> None:
        with self._lock:
            self._sessions.pop(session_id or "", None)


def sessions(request: Request) -> SessionStore:
    app_state = request.app.state
    store: SessionStore | None = getattr(app_state, "console_sessions", None)
    if store is None:
        store = SessionStore()
        app_state.console_sessions = store
    return store


def authenticate_bearer(request: Request, bearer: str) -> Credential:
    """The credential of an API key or OIDC token, exactly as the API would verify it."""
    state = service_state(request)
    host = request.client.host if request.client else None
    return state.authenticator.authenticate({"authorization": f"Bearer {bearer}"}, host)


@dataclass(frozen=True)
class Visitor:
    """The signed-in caller of a console page: its session and verified credential."""

    session: ConsoleSession
    credential: Credential

    def may(self, permission: str) -> bool:
        return self.credential.may(permission)


def visitor(request: Request, permission: str) -> Visitor:
    """The caller of a page that needs ``permission`` (LoginRequired without a session;
    RoleRefused when the role does not cover it; the rate limit applies as on the API)."""
    session = sessions(request).find(request.cookies.get(COOKIE))
    if session is None:
        raise LoginRequired
    try:
        credential = authenticate_bearer(request, session.bearer)
    except AuthenticationError:
        sessions(request).close(session.session_id)
        raise LoginRequired from None
    require_permission(credential, permission)
    service_state(request).limiter.check(credential.limit_key)
    return Visitor(session, credential)


def check_csrf(visitor: Visitor, token: str | None) -> None:
    if not token or not hmac.compare_digest(token, visitor.session.csrf):
        raise CsrfRejected
