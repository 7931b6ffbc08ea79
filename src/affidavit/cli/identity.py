"""``affidavit identity``: review and resolve identity collisions.

A document that claims a ``source_id`` another source path holds is quarantined with
``IDENTITY_COLLISION`` and the node keeps its content and ACL. Only an operator decides
what happens next, and the decision is recorded with who made it and when:

* ``affidavit identity resolve PATH --take-over --by NAME``: PATH becomes the owner; its
  next ingest supersedes the node like an edit (a new version, with a new SIRE proposal to
  approve). A move of a document under a declared source id is resolved this way.
* ``affidavit identity resolve PATH --keep --by NAME``: the owner keeps the node; PATH
  stays refused on every run for as long as it claims that source id.

Either way, the open quarantine entries of PATH for that collision are released by NAME.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from affidavit.cli.context import EXIT_OK, Context, UsageError, _print_json

if TYPE_CHECKING:
    from affidavit.store.protocol import QuarantineRecord


def add_identity_commands(sub: Any, common: argparse.ArgumentParser,
                          as_json: argparse.ArgumentParser) -> None:
    """The ``identity resolve`` and ``identity list`` subcommands."""
    p = sub.add_parser("identity", help="identity collisions and their resolutions",
                       description="Review and resolve documents that claim a source_id "
                                   "another path holds.")
    isub = p.add_subparsers(dest="identity_action", required=True, metavar="ACTION")
    q = isub.add_parser("resolve", parents=[common], help="decide an identity collision",
                        description="Record who keeps a source_id that two paths claim.")
    q.add_argument("path", help="the quarantined path that claims the source_id")
    choice = q.add_mutually_exclusive_group(required=True)
    # The option names the decision; _resolve maps it to the store's value, so that
    # building the parser does not import the store.
    choice.add_argument("--take-over", dest="decision", action="store_const", const="take_over",
                        help="the path becomes the owner; its next ingest supersedes the node")
    choice.add_argument("--keep", dest="decision", action="store_const", const="keep",
                        help="the current owner keeps the node; the path stays refused")
    q.add_argument("--by", required=True, help="who decides (recorded)")
    q.add_argument("--source-id", default=None,
                   help="the claimed source_id (default: from the path's quarantine entry)")
    q.add_argument("--source-system", default="files",
                   help="the source system the path was ingested with (default 'files')")
    q.add_argument("--note", default="", help="why (recorded)")
    q.set_defaults(func=cmd_identity)
    q = isub.add_parser("list", parents=[common, as_json],
                        help="open collisions and recorded resolutions",
                        description="Open identity collisions and every recorded resolution.")
    q.set_defaults(func=cmd_identity)


def cmd_identity(ctx: Context) -> int:
    if ctx.args.identity_action == "resolve":
        return _resolve(ctx)
    return _list(ctx)


def _open_collisions(ctx: Context, path: str | None = None) -> list[QuarantineRecord]:
    from affidavit.store.protocol import IDENTITY_COLLISION

    return [r for r in ctx.store().list_quarantine(ctx.tenant)
            if r.reason_code == IDENTITY_COLLISION and r.released_by is None
            and (path is None or r.alias == path)]


def _resolve(ctx: Context) -> int:
    from affidavit.audit import changes as audited
    from affidavit.identity.take_over import collision_bytes
    from affidavit.records import node_id_for
    from affidavit.store.protocol import KEEP, TAKE_OVER, IdentityResolution

    args, store = ctx.args, ctx.store()
    decision = {"take_over": TAKE_OVER, "keep": KEEP}[args.decision]
    if not args.by.strip():
        raise UsageError("a resolution must name who decides (--by)")
    entries = _open_collisions(ctx, args.path)
    claimed = sorted({r.source_id for r in entries})
    source_id = args.source_id or (claimed[0] if len(claimed) == 1 else None)
    if source_id is None:
        raise UsageError(f"{args.path} has no single open identity collision; name the "
                         "claimed id with --source-id" if claimed else
                         f"no open identity collision for {args.path}")
    node_id = node_id_for(args.source_system, source_id)
    owner = store.identity_owner(ctx.tenant, node_id)
    if owner is None or owner == args.path:
        raise UsageError(f"{args.path} is not in collision over source_id {source_id!r} "
                         f"in source system {args.source_system!r}")
    # A take-over is decided about the claimant's bytes as its collision recorded them, and
    # holds only for those (affidavit.identity.take_over).
    newest = max((e for e in entries if e.source_id == source_id), key=lambda e: e.at)
    about = collision_bytes(newest.message)
    if decision == TAKE_OVER and about is None:
        raise UsageError(f"the collision of {args.path} was recorded without the bytes a "
                         "take-over would be decided about; ingest it again so that it is, "
                         "then resolve")
    at = _now()
    audited.resolve_identity(store, ctx.tenant, IdentityResolution(
        node_id=node_id, source_id=source_id, claimant=args.path, owner=owner,
        decision=decision, resolved_by=args.by, resolved_at=at, note=args.note),
        content_sha256=about if decision == TAKE_OVER else None)
    for entry in entries:
        if entry.source_id == source_id:
            audited.release_quarantine(store, ctx.tenant, entry.run_id, entry.alias,
                                       actor=args.by)
    if decision == TAKE_OVER:
        print(f"{args.path} now holds source_id {source_id!r} (was {owner}), decided by "
              f"{args.by}; its next ingest supersedes the document")
    else:
        print(f"{owner} keeps source_id {source_id!r}, decided by {args.by}; {args.path} "
              "stays refused while it claims it")
    return EXIT_OK


def _list(ctx: Context) -> int:
    collisions = _open_collisions(ctx)
    resolutions = ctx.store().list_identity_resolutions(ctx.tenant)
    if ctx.args.json:
        _print_json({"open": [r.__dict__ for r in collisions],
                     "resolutions": [r.__dict__ for r in resolutions]})
        return EXIT_OK
    for c in collisions:
        print(f"open      {c.alias}  {c.run_id}  {c.message}")
    for r in resolutions:
        print(f"{r.decision:<9} {r.claimant}  source_id={r.source_id!r} owner was {r.owner}  "
              f"by {r.resolved_by} at {r.resolved_at}{'  (' + r.note + ')' if r.note else ''}")
    return EXIT_OK


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")
