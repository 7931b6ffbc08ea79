"""One retry policy for everything fetched over the network: HTTPS and SFTP sources and
model providers.

What is worth another attempt is decided where the failure happens (the caller raises
:class:`TryAgain` for a refused or reset connection, a timeout, HTTP 429 or 5xx; never for
401, 403 or another 4xx, which would fail the same way again). How often and how long to
wait is decided here, once: exponential backoff with jitter (so that many clients that
failed together do not come back together), a ``Retry-After`` the server sent honoured up to
a bound. The loop itself is tenacity's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

T = TypeVar("T")

MAX_RETRY_AFTER_SECONDS = 30.0
JITTER = 0.25
"""Each pause is its backoff plus up to this fraction of it, drawn at random."""


class TryAgain(Exception):
    """A failure worth another attempt; ``retry_after`` is the server's own wait, if any."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def retry_after_seconds(header: str | None) -> float | None:
    """A numeric ``Retry-After`` header in seconds; None when absent or a date."""
    try:
        return max(0.0, float(header)) if header is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` tries in all; pauses of ``backoff_seconds`` x 2^n plus jitter."""

    attempts: int = 3
    backoff_seconds: float = 0.5
    sleep: Callable[[float], None] = time.sleep
    random: Callable[[], float] = field(default=random.random)

    def pause(self, retry_number: int, retry_after: float | None = None) -> float:
        """The wait before retry ``retry_number`` (1 for the first)."""
        backoff = self.backoff_seconds * 2.0 ** (retry_number - 1)
        jittered = float(backoff * (1 + JITTER * self.random()))
        if retry_after is not None:
            return max(jittered, min(retry_after, MAX_RETRY_AFTER_SECONDS))
        return jittered

    def _wait(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        asked = failure.retry_after if isinstance(failure, TryAgain) else None
        return self.pause(state.attempt_number, asked)

    def call(self, operation: Callable[[], T]) -> T:
        """``operation()``, tried again after :class:`TryAgain` until the attempts run out;
        then the last ``TryAgain`` is raised. Any other exception passes through at once."""
        retrying = Retrying(stop=stop_after_attempt(max(self.attempts, 1)), wait=self._wait,
                            retry=retry_if_exception_type(TryAgain), sleep=self.sleep,
                            reraise=True)
        return retrying(operation)
