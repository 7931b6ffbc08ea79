"""``affidavit requalify``: recompute derived artifacts after an epoch change, by delta.

* ``--plan [--json]``: which head versions are stale for which epoch (policy, schema,
  resolver, embedding model, prompt template), which of them a change would actually
  affect, and the work to requalify them. Writes nothing.
* ``--canary N``: derive a deterministic sample of N affected documents from their stored
  bytes and show the differences (labels, chunks, SIRE proposals, vectors) against what is
  served. Writes nothing: what is served does not change.
* ``--roll``: requalify the rest: unaffected stale versions are marked current in place
  (approvals, ids and vectors stay), affected ones are derived again (an identical SIRE
  proposal keeps its approval).
* ``--roll --all --yes``: derive every document again, stale or not (a full rebuild).

Nothing is fetched again: everything is derived from the stored blobs.
"""

from __future__ import annotations

import argparse
from typing import Any

from affidavit.cli.context import EXIT_OK, Context, UsageError, _print_json


def add_requalify_command(sub: Any, common: argparse.ArgumentParser,
                          as_json: argparse.ArgumentParser) -> None:
    p = sub.add_parser("requalify", parents=[common, as_json],
                       help="plan, sample and roll the requalification of derived artifacts",
                       description="Recompute derived artifacts from stored blobs after an "
                                   "epoch change: --plan, --canary N, --roll, --all --yes.")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--plan", action="store_true",
                      help="list stale documents per epoch change, with a work estimate")
    mode.add_argument("--canary", type=int, metavar="N",
                      help="derive a deterministic sample of N affected documents and show "
                           "the differences, without promoting them")
    mode.add_argument("--roll", action="store_true", help="requalify every stale document")
    p.add_argument("--all", action="store_true",
                   help="with --roll: derive every document again (needs --yes)")
    p.add_argument("--yes", action="store_true", help="confirm --all")
    p.set_defaults(func=cmd_requalify)


def cmd_requalify(ctx: Context) -> int:
    from affidavit.ingest.requalify import Requalifier

    args = ctx.args
    if args.all and not (args.roll and args.yes):
        raise UsageError("a full rebuild is --roll --all --yes")
    if args.canary is not None and args.canary < 1:
        raise UsageError("--canary needs a sample size of at least 1")
    requalifier = Requalifier(ctx.store(), ctx.settings, tenant=ctx.tenant)
    if args.plan:
        report = requalifier.plan()
        _print_json(report) if args.json else _print_plan(report)
    elif args.canary is not None:
        report = requalifier.canary(args.canary)
        _print_json(report) if args.json else _print_canary(report)
    else:
        report = requalifier.roll(everything=args.all)
        _print_json(report) if args.json else _print_roll(report)
    return EXIT_OK


def _print_plan(report: dict[str, Any]) -> None:
    epochs = report["epochs"]
    changed = ", ".join(epochs["changed"]) or "none recorded as changed"
    print(f"epochs changed since last recorded: {changed}")
    counts = report["counts"]
    print(f"{report['heads']} documents: {counts['fresh']} fresh, {counts['affected']} "
          f"affected, {counts['restamp']} stale but unaffected, {counts['failed']} failed")
    for kind, aliases in report["stale_by_epoch"].items():
        print(f"stale for {kind}: {len(aliases)}")
    for doc in report["documents"]:
        print(f"  {doc['status']:<8} {doc['alias']}  "
              f"[{', '.join(doc['epochs'])}] {', '.join(doc['changed'])}")
    est = report["estimate"]
    print(f"work: derive {est['documents_to_derive']} ({est['bytes_to_read']} bytes read, "
          f"{est['chunks_to_write']} chunks, {est['chunks_to_embed']} to embed), restamp "
          f"{est['documents_to_restamp']}, {est['approvals_to_review']} approvals to review, "
          f"{est['vectors_missing']} vectors missing for the current model")


def _print_canary(report: dict[str, Any]) -> None:
    print(f"canary: {len(report['sample'])} of {report['affected']} affected documents "
          "(not promoted)")
    for doc in report["sample"]:
        ch = doc["changes"]
        print(f"  {doc['alias']}")
        for label in ch["labels"]:
            print(f"    paragraph {label['paragraph']}: {label['before']} -> {label['after']}")
        chunks = ch["chunks"]
        print(f"    chunks: {chunks['kept']} kept, {chunks['added']} added, "
              f"{chunks['removed']} removed; vectors to embed: {ch['vectors']['to_embed']}")
        if ch["sire"]:
            print(f"    SIRE proposal changed: {', '.join(sorted(ch['sire']))}")


def _print_roll(report: dict[str, Any]) -> None:
    print(f"requalified ({report['run_id']}): {len(report['derived'])} derived again, "
          f"{len(report['restamped'])} marked current in place, {len(report['carried_over'])} "
          f"approvals carried over, {len(report['proposed'])} proposals to review, "
          f"{len(report['failed'])} failed")
    if report.get("vectors"):
        print(f"vectors embedded for the current model: {report['vectors']['embedded']}")
    for alias in report["derived"]:
        print(f"  derived   {alias}")
    for failure in report["failed"]:
        print(f"  failed    {failure['alias']}  {failure['reason_code']}")
