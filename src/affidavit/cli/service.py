"""``affidavit serve`` and ``affidavit keys``: the HTTP service and its API keys."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from affidavit.cli.context import EXIT_OK, Context, UsageError
from affidavit.config.service import ROLES
from affidavit.errors import NotFound

_BY_HELP = ("who makes the change, recorded in the policy audit trail "
            "(default: os:<the user running the command>)")


def add_service_commands(sub: Any, common: argparse.ArgumentParser,
                         as_json: argparse.ArgumentParser) -> None:
    """The ``serve`` and ``keys`` subcommands."""
    p = sub.add_parser("serve", parents=[common], help="run the HTTP service",
                       description="Run the authenticated HTTP service under uvicorn. "
                                   "SQLite (WAL) serves one host; use PostgreSQL for several "
                                   "workers on several hosts.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                                                        "127.0.0.1)")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--print-openapi", action="store_true",
                   help="print the OpenAPI document and exit")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("keys", help="service API keys",
                       description="Create, list and revoke API keys of the service.")
    ksub = p.add_subparsers(dest="keys_action", required=True, metavar="ACTION")
    q = ksub.add_parser("create", parents=[common, as_json], help="create a key (shown once)",
                        description="Create an API key; it is printed once, only a salted "
                                    "hash is stored.")
    q.add_argument("--principal", required=True, help="who the key acts as, e.g. user:alice")
    q.add_argument("--role", choices=ROLES, default="reader")
    q.add_argument("--expires", default=None, metavar="DATE",
                   help="YYYY-MM-DD: the key stops working at the start of that day (UTC)")
    q.add_argument("--by", default=None, help=_BY_HELP)
    q.set_defaults(func=cmd_keys)
    q = ksub.add_parser("list", parents=[common, as_json], help="list keys (never secrets)",
                        description="List the tenant's keys: id, principal, role, dates.")
    q.set_defaults(func=cmd_keys)
    q = ksub.add_parser("revoke", parents=[common], help="revoke a key",
                        description="Revoke a key; it is refused from the next request on.")
    q.add_argument("key_id")
    q.add_argument("--by", default=None, help=_BY_HELP)
    q.set_defaults(func=cmd_keys)


def cmd_keys(ctx: Context) -> int:
    from affidavit.audit import operator_actor
    from affidavit.authz import keys as api_keys
    from affidavit.authz.keys import describe

    args = ctx.args
    store = ctx.store(create=True)
    if args.keys_action == "create":
        issued = api_keys.issue_api_key(store, ctx.tenant, args.principal, role=args.role,
                                       expires=args.expires, actor=operator_actor(args.by))
        if args.json:
            print(json.dumps(issued.to_dict(), indent=2, sort_keys=True))
        else:
            print(issued.key)
            print(f"key {issued.record.key_id} for {issued.record.principal} "
                  f"(tenant {ctx.tenant}, role {issued.record.role}); it is not shown again",
                  file=sys.stderr)
        return EXIT_OK
    if args.keys_action == "revoke":
        if not api_keys.revoke_api_key(store, ctx.tenant, args.key_id,
                                      actor=operator_actor(args.by)):
            raise NotFound(f"no active key {args.key_id} in tenant {ctx.tenant}")
        print(f"revoked {args.key_id}")
        return EXIT_OK
    records = [describe(r) for r in store.list_api_keys(ctx.tenant)]
    if args.json:
        print(json.dumps(records, indent=2, sort_keys=True))
        return EXIT_OK
    for r in records:
        state = "revoked" if r["revoked_at"] else "active"
        print(f"{r['key_id']}  {r['principal']}  {r['role']}  {state}  created {r['created_at']}"
              f"  expires {r['expires_at'] or 'never'}")
    return EXIT_OK


# The CLI and the service are sibling shells (the import-linter "shells" contract): the CLI
# never imports service code. ``serve`` hands the service to uvicorn by its import string,
# exactly as a deployment runs ``uvicorn --factory`` on it, and every worker (one or many)
# builds its app from the environment set here; ``--print-openapi`` resolves the document's
# builder by name through the same importer.
SERVICE_APP = "affidavit.service.app:app_from_environment"
OPENAPI_DOCUMENT = "affidavit.service.openapi:default_document"


def cmd_serve(ctx: Context) -> int:
    from affidavit.config.service import SERVED_TENANT_VARIABLE
    from affidavit.observability.logs import service_log_config
    from affidavit.store import display_location

    args = ctx.args
    if args.print_openapi:
        from uvicorn.importer import import_from_string

        sys.stdout.write(import_from_string(OPENAPI_DOCUMENT)())
        return EXIT_OK
    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    import uvicorn

    store = ctx.store(create=True)  # migrate once, before any worker starts
    store.ensure_tenant(ctx.tenant)
    location = _absolute_location(ctx)
    print(f"affidavit: serving {display_location(location)} on http://{args.host}:{args.port} "
          f"({args.workers} worker{'s' if args.workers > 1 else ''})", file=sys.stderr)
    # Each worker process builds its own app (and store connection) from the environment.
    os.environ["AFFIDAVIT_DB"] = location
    # The tenant served, beside (not instead of) the configured home tenant: a --tenant
    # given here must not hand the workers' top-level policy to it (config.Settings.home).
    os.environ[SERVED_TENANT_VARIABLE] = ctx.tenant
    if ctx.settings.source_file:
        os.environ["AFFIDAVIT_CONFIG"] = str(Path(ctx.settings.source_file).resolve())
    uvicorn.run(SERVICE_APP, factory=True, host=args.host, port=args.port,
                workers=args.workers, log_level="warning", log_config=service_log_config())
    return EXIT_OK


def _absolute_location(ctx: Context) -> str:
    """The store location with a relative SQLite path made absolute (workers may not share
    the working directory's meaning)."""
    db = ctx.settings.store.db
    if db.startswith(("postgresql://", "postgres://")) or db == ":memory:":
        return db
    path = Path(db.removeprefix("sqlite:///"))
    if path.is_absolute():
        return str(path)
    base = Path(ctx.settings.source_file).parent if (
        ctx.settings.source_file and not ctx.args.db) else Path.cwd()
    return str((base / path).resolve())
