"""The ``affidavit ledger`` commands that guard the chain: ``keygen``, ``checkpoint`` and
``verify``. :mod:`affidavit.cli.main` parses their arguments.

Everything printed here comes from the database or from files an attacker may have
written (record ids, tenant names, reasons built from them): control characters and
terminal escape sequences are shown escaped, never sent to the terminal. No record's
content is ever printed, only ids, sequence numbers and hashes.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from affidavit.cli.context import EXIT_FAILED, EXIT_OK, Context
from affidavit.errors import NotFound

if TYPE_CHECKING:
    from affidavit.ledger.chain import ChainReport

# The chain and checkpoint modules (cryptography) are imported by the commands that use
# them: the parser that lists these commands must not pay for them.


def printable(text: object) -> str:
    """``text`` with every control or format character escaped (``\\x1b``, ``\\u200b``)."""
    out = []
    for ch in str(text):
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def cmd_ledger_keygen(ctx: Context) -> int:
    from affidavit.ledger.checkpoint import generate_key_pair, key_id, load_public_key

    private, public = generate_key_pair(Path(ctx.args.out))
    public_id = key_id(load_public_key(public))
    print(f"signing key {printable(private)} (mode 0600: keep it off the database host)")
    print(f"public key  {printable(public)} (key id {public_id})")
    return EXIT_OK


def cmd_ledger_checkpoint(ctx: Context) -> int:
    from affidavit.ledger.checkpoint import (
        load_private_key,
        read_checkpoint,
        sign_checkpoint,
        verify_anchored,
        write_checkpoint,
    )

    key = load_private_key(Path(ctx.args.key))
    # Signing a broken chain would vouch for the tampering; signing one that no longer
    # holds what an earlier checkpoint signed would launder a rewrite made since.
    previous = [read_checkpoint(Path(p)) for p in ctx.args.checkpoint or []]
    report = verify_anchored(ctx.store().iter_ledger(ctx.tenant), tenant=ctx.tenant,
                             checkpoints=previous, trusted=key.public_key())
    if not report.ok:
        _print_report(ctx, report, None)
        print("no checkpoint written: the chain does not verify")
        return EXIT_FAILED
    checkpoint = sign_checkpoint(key, tenant=ctx.tenant, seq=report.head_seq,
                                 record_hash=report.head_hash,
                                 signed_at=datetime.now(UTC).isoformat(timespec="seconds"))
    write_checkpoint(Path(ctx.args.out), checkpoint)
    if ctx.args.json:
        print(checkpoint.to_json(), end="")
    else:
        print(f"checkpoint of tenant {printable(ctx.tenant)} at seq {checkpoint.seq} "
              f"(hash {checkpoint.record_hash[:16]}, key {checkpoint.key_id}) "
              f"written to {printable(ctx.args.out)}")
    return EXIT_OK


def cmd_ledger_verify(ctx: Context) -> int:
    from affidavit.ledger.chain import verify_chain
    from affidavit.ledger.checkpoint import load_public_key, read_checkpoint, verify_anchored

    entries = ctx.store().iter_ledger(ctx.tenant)
    paths = [Path(p) for p in ctx.args.checkpoint or []]
    if not paths:
        report = verify_chain(entries, tenant=ctx.tenant)
        _print_report(ctx, report, None, _policy_after(ctx))
        return EXIT_OK if report.ok else EXIT_FAILED
    trusted = load_public_key(Path(ctx.args.key)) if ctx.args.key else None
    checkpoints = [read_checkpoint(p) for p in paths]
    report = verify_anchored(entries, tenant=ctx.tenant, checkpoints=checkpoints,
                             trusted=trusted)
    anchored = max(c.seq for c in checkpoints)
    _print_report(ctx, report, {"anchored_seq": anchored, "signer_pinned": trusted is not None,
                                "key_ids": sorted({c.key_id for c in checkpoints})},
                  _policy_after(ctx))
    return EXIT_OK if report.ok else EXIT_FAILED


def _policy_after(ctx: Context) -> list[dict[str, Any]] | None:
    """With ``--record``: the policy events appended after the policy version that record
    was decided under (affidavit.audit); ids, kinds, actors and times only."""
    record_id = getattr(ctx.args, "record", None)
    if not record_id:
        return None
    from affidavit.audit import events_after

    store = ctx.store()
    entry = store.get_ledger(ctx.tenant, record_id)
    if entry is None:
        raise NotFound(f"no ledger record {record_id}")
    version = json.loads(entry.payload).get("policy_version")
    return [{"seq": e.seq, "kind": e.kind, "actor": e.actor, "at": e.at}
            for e in events_after(store, ctx.tenant, version)]


def _print_report(ctx: Context, report: ChainReport, anchors: dict[str, Any] | None,
                  policy_after: list[dict[str, Any]] | None = None) -> None:
    if ctx.args.json:
        extra = {} if policy_after is None else {"policy_events_after": policy_after}
        print(json.dumps({"ok": report.ok, "checked": report.checked,
                          "first_bad_seq": report.first_bad_seq,
                          "first_bad_record": report.first_bad_record, "reason": report.reason,
                          "head_seq": report.head_seq, "head_hash": report.head_hash,
                          **(anchors or {}), **extra}, indent=2, sort_keys=True))
        return
    for e in policy_after or []:
        print(printable(f"policy changed after the record: #{e['seq']} {e['kind']} by "
                        f"{e['actor']} at {e['at']}"))
    if not report.ok:
        where = f"seq {report.first_bad_seq}"
        if report.first_bad_record is not None:
            where += f" (record {printable(report.first_bad_record)})"
        print(f"ledger BROKEN at {where}: {printable(report.reason)}; "
              f"{report.checked} records before it verified")
        return
    print(f"ledger OK: {report.checked} records verified")
    if anchors is not None:
        signer = ("signer pinned by --key" if anchors["signer_pinned"]
                  else "signer NOT pinned (pass --key PUBFILE)")
        print(f"  unchanged up to the signed checkpoint at seq {anchors['anchored_seq']} "
              f"(key {printable(', '.join(anchors['key_ids']))}; {signer}); "
              f"records after it are covered by the chain only")
