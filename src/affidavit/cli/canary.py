"""``affidavit canary run``: the continuous leak test (:mod:`affidavit.engine.canary`).

Exit 0 when every probe passed and the control found every canary; 1 otherwise. Canary
tokens are never printed: a leak is named by label, principal and surface.
"""

from __future__ import annotations

import argparse
from typing import Any

from affidavit.cli.context import EXIT_FAILED, EXIT_OK, Context, UsageError, _print_json

DEFAULT_SCRATCH = "canary-scratch"


def add_canary_commands(sub: Any, common: argparse.ArgumentParser,
                        as_json: argparse.ArgumentParser) -> None:
    """The ``canary`` subcommand."""
    p = sub.add_parser("canary", help="continuous leak testing",
                       description="Plant a canary per label in a scratch tenant and probe "
                                   "search, ask and the reader as principals without the "
                                   "grant.")
    csub = p.add_subparsers(dest="canary_action", required=True, metavar="ACTION")
    q = csub.add_parser("run", parents=[common, as_json], help="plant and probe once",
                        description="Plant, probe, report the leak-test pass ratio; exit 1 "
                                    "on any leak or when the control finds no canary.")
    q.add_argument("--scratch-tenant", default=DEFAULT_SCRATCH, metavar="TENANT",
                   help=f"the tenant the canaries live in (default {DEFAULT_SCRATCH})")
    q.set_defaults(func=cmd_canary)


def cmd_canary(ctx: Context) -> int:
    from affidavit.engine.canary import run_canaries

    scratch = ctx.args.scratch_tenant
    if scratch == ctx.tenant:
        raise UsageError("the scratch tenant must not be the tenant in use")
    report = run_canaries(ctx.store(create=True), ctx.settings, tenant=scratch)
    if ctx.args.json:
        _print_json(report.to_dict())
    else:
        print(f"leak test: {report.passed}/{len(report.probes)} probes passed "
              f"(pass ratio {report.pass_ratio:.3f}) in tenant {scratch}")
        for probe in report.probes:
            if probe.leaked:
                print(f"  LEAK: {probe.label} reached {probe.principal} through "
                      f"{probe.surface}")
        for label in report.control_missing:
            print(f"  control: a holder of every grant did not find the {label} canary")
    return EXIT_OK if report.ok else EXIT_FAILED
