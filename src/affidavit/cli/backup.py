"""``affidavit backup`` and ``affidavit restore``: a verified copy of an embedded deployment
(:mod:`affidavit.engine.backup`). PostgreSQL deployments use ``pg_dump``/``pg_restore`` instead."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from affidavit.cli.context import EXIT_OK, Context
from affidavit.cli.errors import UsageError
from affidavit.cli.ledger import printable

_POSTGRES = ("a PostgreSQL store is backed up with pg_dump --format=custom and restored with "
             "pg_restore; then run `affidavit ledger verify` and `affidavit audit verify` "
             "(docs/deploy.md, 'Backup and restore')")


def add_backup_commands(sub: Any, common: argparse.ArgumentParser,
                        as_json: argparse.ArgumentParser) -> None:
    p = sub.add_parser("backup", parents=[common, as_json],
                       help="a consistent, verified snapshot of the database",
                       description="Snapshot the SQLite database into a new folder (online: "
                                   "the service may keep running), verify every tenant's "
                                   "ledger chain and policy trail in it, and record their "
                                   "heads and the snapshot's sha256 in manifest.json.")
    p.add_argument("out", metavar="FOLDER", help="the new folder the backup is written to")
    p.add_argument("--checkpoint", action="append", default=[], metavar="FILE",
                   help="a signed ledger checkpoint to verify and keep with the backup "
                        "(repeatable)")
    p.set_defaults(func=cmd_backup)
    p = sub.add_parser("restore", parents=[common, as_json],
                       help="install a backup after verifying it",
                       description="Verify a backup (its sha256, every ledger chain and "
                                   "policy trail, the checkpoints) and only then install it "
                                   "as the database, in one rename; the old database stays "
                                   "untouched until then.")
    p.add_argument("backup", metavar="FOLDER", help="a folder written by `affidavit backup`")
    p.add_argument("--force", action="store_true",
                   help="replace an existing database (after the backup verifies)")
    p.add_argument("--checkpoint", action="append", default=[], metavar="FILE",
                   help="a checkpoint signed after the backup that must still hold "
                        "(repeatable)")
    p.add_argument("--key", metavar="PUBFILE", default=None,
                   help="the public key every checkpoint must be signed with")
    p.set_defaults(func=cmd_restore)


def _database(ctx: Context) -> Path:
    location = ctx.settings.store.db
    if location.startswith(("postgresql://", "postgres://")):
        raise UsageError(_POSTGRES)
    path = Path(location.removeprefix("sqlite:///"))
    if path.is_absolute():
        return path
    base = Path(ctx.settings.source_file).parent if (
        ctx.settings.source_file and not ctx.args.db) else Path.cwd()
    return base / path


def cmd_backup(ctx: Context) -> int:
    from affidavit.engine.backup import take_backup

    out = Path(ctx.args.out)
    manifest = take_backup(_database(ctx), out, [Path(p) for p in ctx.args.checkpoint])
    if ctx.args.json:
        print(manifest.to_json(), end="")
        return EXIT_OK
    print(f"backup written to {printable(out)} (schema v{manifest.schema_version}, sha256 "
          f"{manifest.sha256[:16]})")
    for head in manifest.tenants:
        print(printable(f"  tenant {head.tenant}: ledger verified to seq {head.ledger_seq}, "
                        f"policy trail to seq {head.policy_seq}"))
    return EXIT_OK


def cmd_restore(ctx: Context) -> int:
    from affidavit.engine.backup import restore_backup

    target = _database(ctx)
    restored = restore_backup(Path(ctx.args.backup), target, force=ctx.args.force,
                              checkpoints=[Path(p) for p in ctx.args.checkpoint],
                              trusted_key=Path(ctx.args.key) if ctx.args.key else None)
    if ctx.args.json:
        print(json.dumps({"restored": str(target), "sha256": restored.manifest.sha256,
                          "checkpoints_verified": restored.checkpoints,
                          "tenants": [h.tenant for h in restored.manifest.tenants]},
                         indent=2, sort_keys=True))
        return EXIT_OK
    print(f"restored {printable(target)}: sha256 matches, "
          f"{len(restored.manifest.tenants)} tenant(s) with ledger and policy trail "
          f"verified, {restored.checkpoints} checkpoint(s) hold")
    return EXIT_OK
