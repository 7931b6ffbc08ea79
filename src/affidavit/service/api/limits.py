"""Service limits: request body size and a per-credential rate limit.

The body limit is an ASGI middleware so that it counts bytes as they arrive (a missing or
lying ``Content-Length`` changes nothing); the rate limit is a token bucket per credential,
in the memory of one process (each worker counts its own).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from affidavit.errors import LimitExceeded


class BodyTooLarge(Exception):
    """Raised inside the ASGI receive channel when the body passes the limit."""


class BodySizeLimit:
    """Refuses a request whose body is larger than ``max_bytes`` with 413."""

    def __init__(self, app: ASGIApp, *, max_bytes: int,
                 refuse: Callable[[LimitExceeded], Any]):
        self.app = app
        self.max_bytes = max_bytes
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_large = LimitExceeded("body_size",
                                  f"the request body is larger than {self.max_bytes} bytes")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self.refuse(too_large)(scope, receive, send)
            return
        seen, exceeded, started = 0, False, False

        async def counted() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                return  # whatever the app makes of a cut-off body is replaced below
            started = started or message["type"] == "http.response.start"
            await send(message)

        with contextlib.suppress(BodyTooLarge):
            await self.app(scope, counted, watched_send)
        if exceeded and not started:
            await self.refuse(too_large)(scope, receive, send)


class RateLimiter:
    """A token bucket per credential: ``per_minute`` requests, refilled continuously."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, who: str) -> None:
        """Take one token for ``who``; LimitExceeded with the wait in seconds when empty."""
        if self.per_minute <= 0:
            return
        rate = self.per_minute / 60.0
        with self._lock:
            now = self.clock()
            tokens, last = self._buckets.get(who, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * rate)
            if tokens < 1.0:
                self._buckets[who] = (tokens, now)
                wait = max(1, math.ceil((1.0 - tokens) / rate))
                raise LimitExceeded("rate", f"more than {self.per_minute} requests a minute",
                                    retry_after=wait)
            self._buckets[who] = (tokens - 1.0, now)
