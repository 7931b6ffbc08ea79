"""``affidavit refs add|list|search``: soft references between documents (spec 004).

A reference is shown only to a reader who may read both of its ends (a citation only to the
asker of its answer), its reason withheld unless the reader is granted that text's label;
one is created only by such a reader, and its creation is recorded in the policy audit
trail with ``--by`` (default the operator's OS account) as its actor. A document that does
not exist and one the principal may not read are refused with one message.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from affidavit.cli.context import EXIT_OK, Context, _print_json
from affidavit.cli.ledger import printable
from affidavit.records import DIRECTIONS, LOCATION_TYPES, SOFT_KINDS

if TYPE_CHECKING:
    from affidavit.records import Reference


def add_refs_commands(sub: Any, common: argparse.ArgumentParser, reader: argparse.ArgumentParser,
                      as_json: argparse.ArgumentParser) -> None:
    """The ``refs`` subcommand."""
    p = sub.add_parser("refs", help="references between documents",
                       description="Add, list and search references; a reader sees only "
                                   "references whose two ends it may read.")
    rsub = p.add_subparsers(dest="refs_action", required=True, metavar="ACTION")
    q = rsub.add_parser("add", parents=[common, reader, as_json], help="add a reference",
                        description="Link SOURCE_DOC to TARGET_DOC (node ids or paths); "
                                    "the principal must be able to read both.")
    q.add_argument("source")
    q.add_argument("target")
    q.add_argument("--kind", required=True, choices=SOFT_KINDS)
    q.add_argument("--reason", required=True, help="why the two are linked")
    q.add_argument("--location", choices=LOCATION_TYPES, default=None,
                   help="where in the target the reference points")
    q.add_argument("--detail", default=None, metavar="TEXT",
                   help="the page number, section heading or chunk id in the target")
    q.add_argument("--by", default=None, help="who is making the change (audit trail)")
    q.set_defaults(func=cmd_refs)
    q = rsub.add_parser("list", parents=[common, reader, as_json],
                        help="references of a document")
    q.add_argument("document")
    q.add_argument("--direction", choices=DIRECTIONS, default="both")
    q.set_defaults(func=cmd_refs)
    q = rsub.add_parser("search", parents=[common, reader, as_json],
                        help="references whose label or reason contains TEXT")
    q.add_argument("text")
    q.set_defaults(func=cmd_refs)


def cmd_refs(ctx: Context) -> int:
    from affidavit.audit import operator_actor
    from affidavit.authz.tuples import parse_principal
    from affidavit.engine.query import Engine
    from affidavit.policy.policy import SensitivityPolicy
    from affidavit.references.links import (
        add_reference,
        list_references,
        resolve_document,
        search_references,
    )

    args = ctx.args
    store = ctx.store()
    engine = Engine(store, ctx.settings, tenant=ctx.tenant)
    authz = engine.authz_context(parse_principal(args.as_principal))
    found: list[Reference]
    if args.refs_action == "add":
        policy = SensitivityPolicy.from_settings(ctx.settings.sensitivity)
        detail = {args.location.lower(): args.detail} if args.location and args.detail else {}
        found = [add_reference(
            store, authz, policy, source=resolve_document(store, authz, args.source),
            target=resolve_document(store, authz, args.target), kind=args.kind,
            reason=args.reason, actor=operator_actor(args.by), location_type=args.location,
            location_detail=detail)]
    elif args.refs_action == "list":
        found = list_references(store, authz, resolve_document(store, authz, args.document),
                                direction=args.direction)
    else:
        found = search_references(store, authz, args.text)
    if args.json:
        _print_json([r.to_dict() for r in found])
        return EXIT_OK
    if not found:
        print("no references you may see")
    for r in found:
        target = r.target_id + (f"#{r.target_chunk_id}" if r.target_chunk_id else "")
        print(printable(f"{r.ref_id} {r.kind} {r.source_type}:{r.source_id} -> {target} "
                        f"({r.classification})"))
        if r.label:
            print(printable(f"   label: {r.label}"))
        if r.reason:
            print(printable(f"   reason: {r.reason}"))
    return EXIT_OK
