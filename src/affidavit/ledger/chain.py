"""The hash chain of the Claim Ledger, as pure functions.

Every stored column of a record is bound into its hash (link format 2)::

    record_hash = sha256(canonical JSON of {format, tenant, seq, record_id, request_id,
                                            created_at, prev_hash, payload})

The first record of a tenant chains to :data:`GENESIS_HASH`. Changing any byte of any column,
reordering records or dropping one breaks every later link. Canonical JSON, not a delimiter,
separates the fields, so no two different rows hash the same content.

Records written before link format 2 (``link_format`` 1) hashed ``prev_hash || 0x0a ||
payload`` only. They still verify, and their ``record_id``, ``request_id``, ``created_at``
and tenant columns are checked against the copies inside their hashed payload. A format-1
record after a format-2 one is a downgrade and fails.

A chain alone cannot show that its newest records were dropped, or that one was edited and
every later hash recomputed: :mod:`affidavit.ledger.checkpoint` anchors its end with a
signature made outside the database. :func:`verify_chain` takes those anchors.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the store imports this module; a runtime import would be a cycle
    from affidavit.store.protocol import LedgerEntry

GENESIS_HASH = "0" * 64
LEGACY_LINK_FORMAT = 1
LINK_FORMAT = 2
_LINK_DOMAIN = "affidavit.ledger-link/2"
# Columns a format-1 record also carries inside its hashed payload.
_LEGACY_BOUND = ("record_id", "request_id", "created_at")


def record_hash(prev_hash: str, payload: str) -> str:
    """The hash that links ``payload`` to the record before it (link format 1, legacy)."""
    return hashlib.sha256(prev_hash.encode("ascii") + b"\n" + payload.encode("utf-8")).hexdigest()


def link_hash(*, tenant: str, seq: int, record_id: str, request_id: str, created_at: str,
              prev_hash: str, payload: str) -> str:
    """The hash of one record in link format 2: every stored column is bound."""
    # json.dumps rather than records.canonical_json: this byte layout is a stored format and
    # must not follow changes made elsewhere.
    content = json.dumps({"format": _LINK_DOMAIN, "tenant": tenant, "seq": seq,
                          "record_id": record_id, "request_id": request_id,
                          "created_at": created_at, "prev_hash": prev_hash,
                          "payload": payload},
                         sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChainReport:
    """The outcome of walking one tenant's chain: the first bad record, or the head."""

    ok: bool
    checked: int
    first_bad_seq: int | None = None
    first_bad_record: str | None = None
    reason: str | None = None
    head_seq: int = 0
    head_hash: str = GENESIS_HASH


def verify_chain(entries: Iterable[LedgerEntry], *, tenant: str,
                 anchors: Mapping[int, str] | None = None) -> ChainReport:
    """Walk ``tenant``'s records in sequence order and report the first one that does not
    verify. ``anchors`` maps sequence numbers to the record hashes signed checkpoints name:
    a record that differs from its anchor, or a chain that ends before one, fails."""
    wanted = dict(anchors or {})
    prev, expected_seq, checked, seen_v2 = GENESIS_HASH, 1, 0, False
    for entry in entries:
        reason = _link_fault(entry, tenant, prev, expected_seq, seen_v2)
        if reason is None and entry.seq in wanted and wanted[entry.seq] != entry.record_hash:
            reason = "record_hash differs from the one a signed checkpoint names"
        if reason:
            return ChainReport(False, checked, entry.seq, entry.record_id, reason,
                               checked, prev)
        seen_v2 = seen_v2 or entry.link_format == LINK_FORMAT
        prev = entry.record_hash
        expected_seq += 1
        checked += 1
    beyond = sorted(seq for seq in wanted if seq > checked)
    if wanted.get(0, GENESIS_HASH) != GENESIS_HASH:
        return ChainReport(False, checked, 0, None, "a checkpoint names a different genesis",
                           checked, prev)
    if beyond:
        return ChainReport(False, checked, checked + 1, None,
                           f"truncated: a signed checkpoint names seq {beyond[-1]}, "
                           f"the chain ends at seq {checked}", checked, prev)
    return ChainReport(True, checked, head_seq=checked, head_hash=prev)


def _link_fault(entry: LedgerEntry, tenant: str, prev: str, expected_seq: int,
                seen_v2: bool) -> str | None:
    """Why ``entry`` does not link to the record before it, or ``None``."""
    if entry.seq != expected_seq:
        return f"sequence gap: expected {expected_seq}, found {entry.seq}"
    if entry.prev_hash != prev:
        return "prev_hash does not match the previous record"
    if entry.link_format == LINK_FORMAT:
        digest = link_hash(tenant=tenant, seq=entry.seq, record_id=entry.record_id,
                           request_id=entry.request_id, created_at=entry.created_at,
                           prev_hash=entry.prev_hash, payload=entry.payload)
        return None if digest == entry.record_hash else "record_hash does not match the record"
    if entry.link_format != LEGACY_LINK_FORMAT:
        return f"unknown link format {entry.link_format}"
    if seen_v2:
        return "a legacy-format record after a format-2 record (a downgrade)"
    if record_hash(entry.prev_hash, entry.payload) != entry.record_hash:
        return "record_hash does not match the record's content"
    return _legacy_column_fault(entry, tenant)


def _legacy_column_fault(entry: LedgerEntry, tenant: str) -> str | None:
    """A format-1 record's columns must equal the copies in its hashed payload."""
    try:
        hashed: Any = json.loads(entry.payload)
    except ValueError:
        hashed = None
    if not isinstance(hashed, dict):
        return None
    columns = {"record_id": entry.record_id, "request_id": entry.request_id,
               "created_at": entry.created_at}
    for name in _LEGACY_BOUND:
        if name in hashed and hashed[name] != columns[name]:
            return f"the {name} column differs from the hashed record"
    if "tenant" in hashed and hashed["tenant"] != tenant:
        return "the record belongs to another tenant's chain"
    return None
