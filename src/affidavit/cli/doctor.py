"""``affidavit doctor``: the service's readiness checks, run from the command line.

The same checks as ``GET /readyz`` (:mod:`affidavit.engine.readiness`), against the store the
settings name, but with the explanation of each failure and what to do about it: the
operator on the host may see paths and hosts that an unauthenticated probe may not.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from affidavit.cli.context import EXIT_OK, Context, _print_json

EXIT_NOT_READY = 1


def add_doctor_command(sub: Any, common: argparse.ArgumentParser,
                       as_json: argparse.ArgumentParser) -> None:
    p = sub.add_parser("doctor", parents=[common, as_json],
                       help="check that the store, the ledger and the model can serve",
                       description="Run the readiness checks of the service (GET /readyz): "
                                   "the store is reachable and migrated, the ledger is "
                                   "writable, the configured model provider answers. Exit 1 "
                                   "when any fails, with what to do about it.")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(ctx: Context) -> int:
    from affidavit.engine.readiness import run_checks

    settings = ctx.settings
    base = Path(settings.source_file).parent if (
        settings.source_file and not ctx.args.db) else Path.cwd()
    checks = run_checks(settings, base)
    ready = all(c.ok for c in checks)
    if ctx.args.json:
        _print_json({"ready": ready, "checks": [
            {**c.public(), "explanation": c.explanation} for c in checks]})
    else:
        for check in checks:
            mark = "ok  " if check.ok else "FAIL"
            reason = "" if check.reason in ("OK", "NOT_CONFIGURED") else f" [{check.reason}]"
            note = " (none configured)" if check.reason == "NOT_CONFIGURED" else ""
            print(f"{mark} {check.name}{note}{reason}")
            if check.explanation:
                print(f"     {check.explanation}")
        print("ready to serve" if ready else "not ready")
    return EXIT_OK if ready else EXIT_NOT_READY
