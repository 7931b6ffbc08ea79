"""``affidavit audit list|verify|checkpoint``: the policy audit trail (:mod:`affidavit.audit`).

``verify`` walks the tenant's hash-chained policy events and exits 1 at the first edited,
reordered or deleted one. A chain alone cannot show that its newest events were dropped or
rewritten and rehashed, so ``verify`` also checks every ledger record's ``policy_version``
and, with ``--checkpoint``, that the trail still holds what a signed checkpoint
(``audit checkpoint``, :mod:`affidavit.audit.anchor`) signed. It then replays the trail and
compares it with the live tuples, grants and API keys: a row no event put there, or an
event whose effect is missing, fails it too (:mod:`affidavit.audit.replay`).

``audit checkpoint`` signs the trail's head with the ledger's checkpoint key
(``ledger keygen``): one key kept off the host, and the pair ``audit checkpoint`` /
``audit verify --checkpoint`` mirrors ``ledger checkpoint`` / ``ledger verify
--checkpoint``, whose files and format stay as they are.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from affidavit.cli.context import EXIT_FAILED, EXIT_OK, Context, _print_json
from affidavit.cli.ledger import printable

if TYPE_CHECKING:
    from affidavit.audit.chain import PolicyChainReport
    from affidavit.store.protocol import PolicyEvent, Store


def add_audit_commands(sub: Any, common: argparse.ArgumentParser,
                       as_json: argparse.ArgumentParser) -> None:
    """The ``audit`` subcommand."""
    p = sub.add_parser("audit", help="the policy audit trail",
                       description="List and verify the append-only, hash-chained record of "
                                   "every policy change (tuples, grants, API keys, SIRE state, "
                                   "quarantine releases, identity resolutions, settings).")
    asub = p.add_subparsers(dest="audit_action", required=True, metavar="ACTION")
    q = asub.add_parser("list", parents=[common, as_json], help="list policy events",
                        description="List the tenant's policy events, oldest first.")
    q.add_argument("--after", type=int, default=0, metavar="SEQ",
                   help="only events after this sequence number")
    q.set_defaults(func=cmd_audit)
    q = asub.add_parser("verify", parents=[common, as_json], help="verify the policy chain",
                        description="Verify the hash chain of policy events, the policy "
                                    "versions ledger records name and, against signed "
                                    "checkpoints, that nothing up to them was cut off or "
                                    "rewritten; replay the trail and compare it with the live "
                                    "tuples, grants and API keys. Exit 1 if any fails.")
    q.add_argument("--checkpoint", action="append", metavar="CHECKPOINT",
                   help="a checkpoint file from 'audit checkpoint' (repeatable)")
    q.add_argument("--key", metavar="PUBFILE",
                   help="the public key the checkpoints must be signed with (without it, "
                        "only the key inside each checkpoint is checked)")
    q.set_defaults(func=cmd_audit)
    q = asub.add_parser("checkpoint", parents=[common, as_json],
                        help="sign the head of the policy trail",
                        description="Verify the tenant's policy trail and sign its head "
                                    "(tenant, sequence number, event hash, time) into "
                                    "CHECKPOINT with the key made by 'ledger keygen'.")
    q.add_argument("--key", required=True, metavar="KEYFILE", help="the private key")
    q.add_argument("--out", required=True, metavar="CHECKPOINT")
    q.add_argument("--checkpoint", action="append", metavar="PREVIOUS",
                   help="an earlier policy checkpoint (by the same key) the trail must still "
                        "hold before the new one is signed (repeatable)")
    q.set_defaults(func=cmd_audit)


def cmd_audit(ctx: Context) -> int:
    from affidavit.audit import event_dict

    store = ctx.store()
    if ctx.args.audit_action == "verify":
        return _verify(ctx, store)
    if ctx.args.audit_action == "checkpoint":
        return _checkpoint(ctx, store)
    events = [event_dict(e) for e in store.iter_policy_events(ctx.tenant,
                                                              after_seq=ctx.args.after)]
    if ctx.args.json:
        _print_json(events)
        return EXIT_OK
    for e in events:
        print(printable(f"#{e['seq']} {e['at']} {e['kind']} by {e['actor']}: "
                        f"{json.dumps(e['before'], sort_keys=True)} -> "
                        f"{json.dumps(e['after'], sort_keys=True)}"))
    return EXIT_OK


def _verify(ctx: Context, store: Store) -> int:
    from affidavit.audit.replay import compare_with_live, replay_policy

    events = list(store.iter_policy_events(ctx.tenant))
    report, anchors = _anchored_report(ctx, store, events, ctx.args.key, trusted_private=False)
    differences = compare_with_live(replay_policy(events), tuples=store.list_tuples(ctx.tenant),
                                    grants=store.list_grants(ctx.tenant),
                                    keys=store.list_api_keys(ctx.tenant))
    ok = report.ok and not differences
    if ctx.args.json:
        _print_json({"ok": ok, "checked": report.checked,
                     "first_bad_seq": report.first_bad_seq, "reason": report.reason,
                     "head_seq": report.head_seq, "head_hash": report.head_hash,
                     "differences": differences, **(anchors or {})})
        return EXIT_OK if ok else EXIT_FAILED
    _print_verified(report, anchors, differences)
    return EXIT_OK if ok else EXIT_FAILED


def _print_verified(report: PolicyChainReport, anchors: dict[str, Any] | None,
                    differences: list[str]) -> None:
    if report.ok:
        print(f"policy trail OK: {report.checked} events verified "
              f"(head #{report.head_seq} {report.head_hash[:16]})")
    else:
        print(f"policy trail BROKEN at #{report.first_bad_seq}: {printable(report.reason)}; "
              f"{report.checked} events before it verified")
    if report.ok and anchors is not None:
        signer = ("signer pinned by --key" if anchors["signer_pinned"]
                  else "signer NOT pinned (pass --key PUBFILE)")
        print(f"  unchanged up to the signed checkpoint at #{anchors['anchored_seq']} "
              f"(key {printable(', '.join(anchors['key_ids']))}; {signer}); "
              "events after it are covered by the chain only")
    for difference in differences:
        print(f"live policy differs from the trail: {printable(difference)}")
    if differences:
        print(f"live policy BROKEN: {len(differences)} difference(s) from the trail's replay")


def _anchored_report(ctx: Context, store: Store, events: list[PolicyEvent], key: str | None,
                     *, trusted_private: bool) -> tuple[PolicyChainReport, dict[str, Any] | None]:
    """The chain's report, checked against ``--checkpoint`` files and against the policy
    versions ledger records name; the anchors' description when checkpoints were given."""
    from affidavit.audit import verify_policy_chain

    paths = [Path(p) for p in ctx.args.checkpoint or []]
    if not paths:
        report = verify_policy_chain(events, tenant=ctx.tenant)
        anchors = None
    else:
        from affidavit.audit.anchor import POLICY_CHECKPOINT_FORMAT, verify_policy_anchored
        from affidavit.ledger.checkpoint import (
            load_private_key,
            load_public_key,
            read_checkpoint,
        )

        trusted = None if key is None else (load_private_key(Path(key)).public_key()
                                            if trusted_private else load_public_key(Path(key)))
        checkpoints = [read_checkpoint(p, POLICY_CHECKPOINT_FORMAT) for p in paths]
        report = verify_policy_anchored(events, tenant=ctx.tenant, checkpoints=checkpoints,
                                        trusted=trusted)
        anchors = {"anchored_seq": max(c.seq for c in checkpoints),
                   "signer_pinned": trusted is not None,
                   "key_ids": sorted({c.key_id for c in checkpoints})}
    if report.ok:
        report = _ledger_versions_fault(store, ctx.tenant, {e.seq: e.event_hash for e in events},
                                        report)
    return report, anchors


def _checkpoint(ctx: Context, store: Store) -> int:
    from affidavit.audit.anchor import POLICY_CHECKPOINT_FORMAT
    from affidavit.ledger.checkpoint import load_private_key, sign_checkpoint, write_checkpoint

    key = load_private_key(Path(ctx.args.key))
    # Signing a broken trail would vouch for the tampering; signing one that no longer
    # holds what an earlier checkpoint signed would launder a rewrite made since.
    events = list(store.iter_policy_events(ctx.tenant))
    report, _ = _anchored_report(ctx, store, events, ctx.args.key, trusted_private=True)
    if not report.ok:
        print(f"policy trail BROKEN at #{report.first_bad_seq}: {printable(report.reason)}")
        print("no checkpoint written: the policy trail does not verify")
        return EXIT_FAILED
    checkpoint = sign_checkpoint(key, tenant=ctx.tenant, seq=report.head_seq,
                                 record_hash=report.head_hash,
                                 signed_at=datetime.now(UTC).isoformat(timespec="seconds"),
                                 format=POLICY_CHECKPOINT_FORMAT)
    write_checkpoint(Path(ctx.args.out), checkpoint)
    if ctx.args.json:
        print(checkpoint.to_json(), end="")
    else:
        print(f"policy checkpoint of tenant {printable(ctx.tenant)} at #{checkpoint.seq} "
              f"(hash {checkpoint.record_hash[:16]}, key {checkpoint.key_id}) "
              f"written to {printable(ctx.args.out)}")
    return EXIT_OK


def _ledger_versions_fault(store: Store, tenant: str, hashes: dict[int, str],
                           report: PolicyChainReport) -> PolicyChainReport:
    """The chain's report, failed when a ledger record names a policy event that is gone or
    differs (the chain's newest events were dropped or rewritten)."""
    from affidavit.audit.chain import PolicyChainReport

    for entry in store.iter_ledger(tenant):
        named = json.loads(entry.payload).get("policy_version")
        if not isinstance(named, dict) or int(named.get("seq", 0)) == 0:
            continue
        seq = int(named["seq"])
        if hashes.get(seq) != named.get("event_hash"):
            return PolicyChainReport(
                False, report.checked, seq,
                f"ledger record {entry.record_id} was decided under policy event #{seq}, "
                "which is missing or differs", report.head_seq, report.head_hash)
    return report
