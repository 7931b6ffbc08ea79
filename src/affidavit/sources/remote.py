"""What the network transports (HTTPS, SFTP) share: listed entries, collisions, retries.

A remote listing is first described as :class:`RemoteEntry` values (identity, alias,
declared metadata, where to fetch the bytes), sorted and checked for colliding source ids
exactly like the local folder does, and only then fetched one at a time, so a run never
holds more than one document in memory.

A transient failure (connection refused or reset, timeout, HTTP 429 or 5xx) is tried again
with exponential backoff and jitter (:mod:`affidavit.util.retry`); after the configured number
of attempts the document is quarantined with ``FETCH_FAILED`` and the run goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import TypeVar

from affidavit.errors import InputRejected
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.util.retry import RetryPolicy as NetworkRetryPolicy
from affidavit.util.retry import TryAgain

FETCH_FAILED = "FETCH_FAILED"
DUPLICATE_SOURCE_ID = "DUPLICATE_SOURCE_ID"

T = TypeVar("T")


class TransientFailure(TryAgain):
    """A failure worth another attempt; never escapes the transports."""


@dataclass(frozen=True)
class RemoteEntry:
    """One document of a remote listing, before its bytes are fetched.

    ``location`` is what the transport fetches (an absolute URL, a remote path);
    ``alias`` is the path relative to the listed root, like the local folder's alias.
    """

    source_id: str
    alias: str
    location: str
    metadata: DocumentMetadata = field(default_factory=DocumentMetadata)
    rev: str | None = None
    rejection: tuple[str, str] | None = None

    def document(
        self,
        source_system: str,
        content: bytes = b"",
        *,
        rejection: tuple[str, str] | None = None,
    ) -> SourceDocument:
        """The transport's output for this entry; a rejected one carries no content."""
        refused = rejection or self.rejection
        if refused is not None:
            content = b""
        return SourceDocument(
            source_system=source_system,
            source_id=self.source_id,
            source_rev=(self.rev if refused is None and self.rev else sha256_hex(content)),
            content=content,
            alias=self.alias,
            metadata=self.metadata,
            rejection=refused,
        )


def in_listing_order(entries: Iterable[RemoteEntry]) -> Iterator[RemoteEntry]:
    """Sorted by ``(source_id, alias)``; colliding source ids are all refused."""
    ordered = sorted(entries, key=lambda entry: (entry.source_id, entry.alias))
    for source_id, group in groupby(ordered, key=lambda entry: entry.source_id):
        claimants = list(group)
        if len(claimants) == 1:
            yield claimants[0]
            continue
        aliases = ", ".join(entry.alias for entry in claimants)
        message = f"source_id {source_id!r} is claimed by {aliases}"
        for entry in claimants:
            yield entry if entry.rejection else replace(
                entry, rejection=(DUPLICATE_SOURCE_ID, message)
            )


@dataclass(frozen=True)
class RetryPolicy:
    """How often a transient failure is tried again: the one network retry policy
    (:class:`affidavit.util.retry.RetryPolicy`: exponential backoff with jitter)."""

    attempts: int = 3
    backoff_seconds: float = 0.5
    sleep: Callable[[float], None] = time.sleep

    def run(self, operation: Callable[[], T], *, what: str) -> T:
        """Run ``operation``, trying again after a :class:`TransientFailure`.

        Permanent refusals (``InputRejected``) pass through at once. When every attempt
        failed, raises ``InputRejected(FETCH_FAILED)`` naming the last failure.
        """
        policy = NetworkRetryPolicy(self.attempts, self.backoff_seconds, self.sleep)
        try:
            return policy.call(operation)
        except TryAgain as exc:
            tries = max(self.attempts, 1)
            raise InputRejected(
                FETCH_FAILED, f"{what}: {exc} ({tries} attempt{'s' * (tries > 1)})"
            ) from exc
