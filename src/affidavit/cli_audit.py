"""``affidavit audit list|verify``: the policy audit trail (:mod:`affidavit.audit`).

``verify`` walks the tenant's hash-chained policy events and exits 1 at the first edited,
reordered or deleted one. A chain alone cannot show that its newest events were dropped, so
``verify`` also checks every ledger record's ``policy_version``: an answer recorded under a
policy event that is no longer there (or no longer the same) fails too.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from affidavit.cli_commands import EXIT_FAILED, EXIT_OK, Context, _print_json
from affidavit.cli_ledger import printable

if TYPE_CHECKING:
    from affidavit.audit.chain import PolicyChainReport
    from affidavit.store.base import Store


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
                        description="Verify the hash chain of policy events and the policy "
                                    "versions ledger records name; exit 1 if either fails.")
    q.set_defaults(func=cmd_audit)


def cmd_audit(ctx: Context) -> int:
    from affidavit.audit import event_dict

    store = ctx.store()
    if ctx.args.audit_action == "verify":
        return _verify(ctx, store)
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
    from affidavit.audit import verify_policy_chain

    events = list(store.iter_policy_events(ctx.tenant))
    report = verify_policy_chain(events, tenant=ctx.tenant)
    if report.ok:
        report = _ledger_versions_fault(store, ctx.tenant, {e.seq: e.event_hash for e in events},
                                        report)
    if ctx.args.json:
        _print_json({"ok": report.ok, "checked": report.checked,
                     "first_bad_seq": report.first_bad_seq, "reason": report.reason,
                     "head_seq": report.head_seq, "head_hash": report.head_hash})
    elif report.ok:
        print(f"policy trail OK: {report.checked} events verified "
              f"(head #{report.head_seq} {report.head_hash[:16]})")
    else:
        print(f"policy trail BROKEN at #{report.first_bad_seq}: {printable(report.reason)}; "
              f"{report.checked} events before it verified")
    return EXIT_OK if report.ok else EXIT_FAILED


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
