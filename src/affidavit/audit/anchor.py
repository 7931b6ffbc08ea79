"""Signed checkpoints of the policy trail: its head, anchored outside the database.

The trail's hash chain shows an edit in its middle, but not its newest events deleted, nor
events rewritten and rehashed from some point on: whoever holds the database file can do
both. A policy checkpoint is the ledger's signed statement
(:mod:`affidavit.ledger.checkpoint`: tenant, seq, hash, time, key id, Ed25519 signature by a
key kept off the database host) over the trail's head instead of the ledger's, under its
own format name so that neither can pass for the other. The same key signs both.
Verifying the trail against it fails when the trail is shorter than the checkpoint's
sequence number or its event there has another hash; since every event hash binds the one
before it, that covers every event up to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from affidavit.audit.chain import PolicyChainReport, verify_policy_chain
from affidavit.ledger.checkpoint import Checkpoint, check_signature

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from affidavit.store.protocol import PolicyEvent

POLICY_CHECKPOINT_FORMAT = "affidavit.policy-checkpoint/1"


def verify_policy_anchored(events: Iterable[PolicyEvent], *, tenant: str,
                           checkpoints: Sequence[Checkpoint],
                           trusted: Ed25519PublicKey | None) -> PolicyChainReport:
    """Verify ``tenant``'s trail and that it still holds, unchanged, every event the
    checkpoints signed. A checkpoint that is not ``tenant``'s, or whose signature does not
    verify, fails the whole check: it anchors nothing."""
    anchors: dict[int, str] = {}
    for checkpoint in checkpoints:
        fault = _rejected(checkpoint, tenant, trusted, anchors)
        if fault is not None:
            return PolicyChainReport(False, 0, checkpoint.seq, f"checkpoint rejected: {fault}")
        anchors[checkpoint.seq] = checkpoint.record_hash
    listed = list(events)
    report = verify_policy_chain(listed, tenant=tenant)
    if not report.ok:
        return report
    hashes = {e.seq: e.event_hash for e in listed}
    for seq in sorted(anchors):
        if seq > report.head_seq:
            return PolicyChainReport(
                False, report.checked, seq,
                f"the trail ends at #{report.head_seq}, before the signed checkpoint at "
                f"#{seq}: its newest events were cut off", report.head_seq, report.head_hash)
        if seq > 0 and hashes.get(seq) != anchors[seq]:
            return PolicyChainReport(
                False, report.checked, seq,
                f"event #{seq} is not the one the checkpoint signed: the trail was rewritten",
                report.head_seq, report.head_hash)
    return report


def _rejected(checkpoint: Checkpoint, tenant: str, trusted: Ed25519PublicKey | None,
              anchors: dict[int, str]) -> str | None:
    if checkpoint.format != POLICY_CHECKPOINT_FORMAT:
        return "it is not a checkpoint of the policy trail"
    fault = check_signature(checkpoint, trusted)
    if fault is None and checkpoint.tenant != tenant:
        fault = "the checkpoint is for another tenant"
    if fault is None and anchors.get(checkpoint.seq, checkpoint.record_hash) != \
            checkpoint.record_hash:
        fault = f"two checkpoints name different hashes for seq {checkpoint.seq}"
    return fault
