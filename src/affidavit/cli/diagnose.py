"""``affidavit whoami`` and ``affidavit authz explain``: why a principal sees what it sees.

Both print what :mod:`affidavit.authz.facts` reads and :mod:`affidavit.authz.explain`
decides, so the command line and the web console give one explanation. A principal that
appears in no tuple, no grant and no document ACL is most often a typo: it gets a warning on
stderr instead of a quiet, empty answer.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from affidavit.cli.context import EXIT_OK, Context, _print_json


def add_whoami_command(sub: Any, common: argparse.ArgumentParser,
                       as_json: argparse.ArgumentParser) -> None:
    p = sub.add_parser("whoami", parents=[common, as_json],
                       help="a principal's tenant, groups, grants and readable share",
                       description="Show the tenant, groups, viewed objects and label grants "
                                   "of a principal, and what share of the corpus it can read.")
    p.add_argument("--as", dest="as_principal", required=True, metavar="PRINCIPAL")
    p.set_defaults(func=cmd_whoami)


def add_explain_command(asub: Any, common: argparse.ArgumentParser,
                        as_json: argparse.ArgumentParser) -> None:
    q = asub.add_parser("explain", parents=[common, as_json],
                        help="why a principal may or may not read a document",
                        description="The decision for a principal on one document and why: "
                                    "the relationship path or the missing link, the label "
                                    "grant of each chunk, and the SIRE state.")
    q.add_argument("--as", dest="as_principal", required=True, metavar="PRINCIPAL")
    q.add_argument("document", help="its path as ingested, its node id or its source id")
    q.set_defaults(func=cmd_authz_explain)


def cmd_whoami(ctx: Context) -> int:
    from affidavit.authz.facts import describe_principal

    summary = describe_principal(ctx.store(), ctx.settings, ctx.tenant, ctx.args.as_principal)
    for note in summary.notes:
        print(f"affidavit: {note}", file=sys.stderr)
    warn_exclusion_gate_empty(ctx)
    if ctx.args.json:
        _print_json(summary.to_dict())
        return EXIT_OK
    print(f"principal {summary.principal} in tenant {summary.tenant}")
    print(f"  groups: {', '.join(summary.groups) or '(none)'}")
    if summary.viewed_objects:
        print(f"  views: {', '.join(summary.viewed_objects)}")
    for label, by in summary.grants.items():
        print(f"  label {label}: " + ("always granted" if by == ("always",)
                                      else f"granted by {', '.join(by)}"))
    print(f"  reads {summary.readable_documents} of {summary.total_documents} documents, "
          f"{summary.readable_chunks} of {summary.total_chunks} chunks "
          f"({summary.readable_share:.0%})")
    return EXIT_OK


def cmd_authz_explain(ctx: Context) -> int:
    from affidavit.authz.facts import (
        explain_document,
        is_known_principal,
        unknown_principal_warning,
    )

    store = ctx.store()
    result = explain_document(store, ctx.settings, ctx.tenant, ctx.args.as_principal,
                              ctx.args.document)
    if not is_known_principal(store, ctx.settings, ctx.tenant, result.principal):
        print(f"affidavit: {unknown_principal_warning(result.principal, ctx.tenant)}",
              file=sys.stderr)
    if ctx.args.json:
        _print_json(result.to_dict())
        return EXIT_OK
    print(f"{result.decision}: {result.principal} on {result.alias} (doc:{result.node_id}), "
          f"{result.readable_chunks} of {len(result.chunks)} chunks readable")
    if result.admitted_by is not None:
        print(f"  admitted by ACL token {result.admitted_by}")
        for step in result.path:
            print(f"    {step.source} -> {step.target}  via {step.via}")
    else:
        print(f"  missing link: {result.missing_link}")
    for chunk in result.chunks:
        mark = "read" if chunk.readable else "no  "
        by = f" (granted by {', '.join(chunk.granted_by)})" if chunk.granted_by else ""
        print(f"  [{mark}] chunk {chunk.ordinal} {chunk.chunk_id[:8]} {chunk.label}: "
              f"{chunk.reason}{by}")
    print(f"  {result.sire_note}")
    return EXIT_OK


def warn_if_unknown_principal(ctx: Context, principal: str) -> None:
    """On stderr, when ``principal`` appears in no tuple, grant or document ACL: an empty
    result for a mistyped name must not look like an empty corpus."""
    from affidavit.authz import parse_principal
    from affidavit.authz.facts import is_known_principal, unknown_principal_warning

    principal = parse_principal(principal)
    if not is_known_principal(ctx.store(), ctx.settings, ctx.tenant, principal):
        print(f"affidavit: {unknown_principal_warning(principal, ctx.tenant)}", file=sys.stderr)


def warn_default_label_unreadable(ctx: Context) -> None:
    """On stderr, when no subject holds the default label (see default_label_warning)."""
    from affidavit.authz.facts import default_label_warning

    warning = default_label_warning(ctx.store(), ctx.settings, ctx.tenant)
    if warning is not None:
        print(f"affidavit: {warning}", file=sys.stderr)


def warn_exclusion_gate_empty(ctx: Context) -> None:
    """On stderr, when the tenant's SIRE exclusion gate excludes nothing (spec 003 §11.3;
    see affidavit.identity.exclusion_check)."""
    from affidavit.identity.exclusion_check import exclusion_gate_warning

    warning = exclusion_gate_warning(ctx.store(), ctx.settings, ctx.tenant)
    if warning is not None:
        print(f"affidavit: warning: {warning}", file=sys.stderr)
