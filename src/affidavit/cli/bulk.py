"""Review in bulk: ``quarantine release --all`` / ``--reason CODE`` and ``sire approve`` by
filter. Every entry released or record approved is recorded with who did it, exactly as a
one-at-a-time release or approval is (the policy audit trail; the SIRE approver).
"""

from __future__ import annotations

import argparse
from fnmatch import fnmatchcase
from typing import Any

from affidavit.cli.context import EXIT_OK, Context, UsageError
from affidavit.errors import NotFound


def add_quarantine_release(qsub: Any, common: argparse.ArgumentParser,
                           as_json: argparse.ArgumentParser) -> None:
    q = qsub.add_parser("release", parents=[common, as_json],
                        help="release entries after review",
                        description="Release one entry (RUN_ID ALIAS), or every unreleased "
                                    "entry (--all) or those with one reason code (--reason), "
                                    "optionally of one run (--run). Each release is recorded "
                                    "with --by; the next ingest of its source tries it again.")
    q.add_argument("run_id", nargs="?")
    q.add_argument("alias", nargs="?")
    q.add_argument("--all", action="store_true", help="every unreleased entry")
    q.add_argument("--reason", metavar="CODE", help="only entries with this reason code")
    q.add_argument("--run", dest="only_run", metavar="RUN_ID", help="only entries of this run")
    q.add_argument("--by", required=True, help="who reviewed them (recorded)")
    q.set_defaults(func=cmd_quarantine_release)


def cmd_quarantine_release(ctx: Context) -> int:
    from affidavit.audit import changes as audited

    args, store = ctx.args, ctx.store()
    bulk = args.all or args.reason is not None
    if bulk == (args.run_id is not None):
        raise UsageError("give RUN_ID ALIAS for one entry, or --all / --reason CODE")
    if not bulk:
        if args.alias is None:
            raise UsageError("give the entry's ALIAS after its RUN_ID")
        targets = [(args.run_id, args.alias)]
    else:
        entries = [r for r in store.list_quarantine(ctx.tenant, args.only_run)
                   if r.released_by is None
                   and (args.reason is None or r.reason_code == args.reason.upper())]
        targets = sorted({(r.run_id, r.alias) for r in entries})
    released = [(run, alias) for run, alias in targets
                if audited.release_quarantine(store, ctx.tenant, run, alias, actor=args.by)]
    if not bulk and not released:
        raise NotFound(f"no unreleased quarantine entry {args.alias} in {args.run_id}")
    if args.json:
        from affidavit.cli.context import _print_json

        _print_json({"released": [{"run_id": r, "alias": a} for r, a in released],
                     "by": args.by})
        return EXIT_OK
    for run, alias in released:
        print(f"released {alias} from {run} (by {args.by})")
    print(f"released {len(released)} entr{'y' if len(released) == 1 else 'ies'}; the next "
          "ingest of their sources tries them again")
    return EXIT_OK


def add_sire_filters(q: argparse.ArgumentParser) -> None:
    """``sire approve`` by filter, beside its ids and ``--all``."""
    q.add_argument("--under", metavar="FOLDER",
                   help="approve the PROPOSED records of documents under this path")
    q.add_argument("--match", metavar="GLOB",
                   help="approve the PROPOSED records of documents whose path matches GLOB "
                        "(e.g. 'policies/*.md')")


def sire_targets(ctx: Context) -> list[str]:
    """The SIRE ids ``sire approve`` acts on: named ids, or PROPOSED records by filter."""
    args = ctx.args
    under, match = getattr(args, "under", None), getattr(args, "match", None)
    if args.ids and (args.all or under or match):
        raise UsageError("name SIRE ids, or use --all / --under / --match, not both")
    if args.ids:
        return list(args.ids)
    if not (args.all or under or match):
        raise UsageError("name SIRE ids to approve, or --all, --under FOLDER or --match GLOB")
    prefix = under.strip("/") + "/" if under else ""
    return [r.sire_id for r in ctx.store().list_sire(ctx.tenant, state="PROPOSED")
            if r.alias.startswith(prefix) and (match is None or fnmatchcase(r.alias, match))]
