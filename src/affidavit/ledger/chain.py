"""The hash chain of the Claim Ledger, as pure functions.

``record_hash = sha256(prev_hash || 0x0a || payload)`` where ``payload`` is the record's
canonical JSON. The first record of a tenant chains to :data:`GENESIS_HASH`. Changing any
byte of a payload, reordering records or dropping one breaks every later link.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store imports this module; a runtime import would be a cycle
    from affidavit.store.base import LedgerEntry

GENESIS_HASH = "0" * 64


def record_hash(prev_hash: str, payload: str) -> str:
    """The hash that links ``payload`` to the record before it."""
    return hashlib.sha256(prev_hash.encode("ascii") + b"\n" + payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    checked: int
    first_bad_seq: int | None = None
    first_bad_record: str | None = None
    reason: str | None = None


def verify_chain(entries: Iterable[LedgerEntry]) -> ChainReport:
    """Walk the records in sequence order and report the first one that does not verify."""
    prev = GENESIS_HASH
    expected_seq = 1
    checked = 0
    for entry in entries:
        reason = None
        if entry.seq != expected_seq:
            reason = f"sequence gap: expected {expected_seq}, found {entry.seq}"
        elif entry.prev_hash != prev:
            reason = "prev_hash does not match the previous record"
        elif record_hash(entry.prev_hash, entry.payload) != entry.record_hash:
            reason = "record_hash does not match the record's content"
        if reason:
            return ChainReport(False, checked, entry.seq, entry.record_id, reason)
        prev = entry.record_hash
        expected_seq += 1
        checked += 1
    return ChainReport(True, checked)
