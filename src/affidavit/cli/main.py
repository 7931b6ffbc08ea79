"""The ``affidavit`` command: argument parsing and exit codes.

Exit status (the table and its JSON form are in :mod:`affidavit.cli.errors`): 0 success;
1 the operation failed; 2 usage error (including a missing or malformed ``--as``
principal); 3 ingestion finished but some documents were quarantined; 4 another ingestion
run of the tenant was under way, so this one did not start; 5 configuration error;
6 governance refusal (BLOCKED, REQUIRES_SPEC); 7 provider failure; 8 store error; 141 the
output pipe was closed by its reader (128 + SIGPIPE, as for other tools).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from affidavit.cli.audit import add_audit_commands
from affidavit.cli.backup import add_backup_commands
from affidavit.cli.bulk import add_quarantine_release, add_sire_filters
from affidavit.cli.canary import add_canary_commands
from affidavit.cli.commands import (
    Context,
    cmd_ask,
    cmd_authz,
    cmd_ingest,
    cmd_ledger_replay,
    cmd_ledger_show,
    cmd_quarantine,
    cmd_runs,
    cmd_search,
    cmd_sire,
    cmd_worker,
)
from affidavit.cli.completion import add_completion_command, completion_script
from affidavit.cli.diagnose import add_explain_command, add_whoami_command
from affidavit.cli.doctor import add_doctor_command
from affidavit.cli.errors import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, report_error
from affidavit.cli.identity import add_identity_commands
from affidavit.cli.init import cmd_init
from affidavit.cli.labels import add_labels_commands
from affidavit.cli.ledger import cmd_ledger_checkpoint, cmd_ledger_keygen, cmd_ledger_verify
from affidavit.cli.refs import add_refs_commands
from affidavit.cli.requalify import add_requalify_command
from affidavit.cli.service import add_service_commands
from affidavit.cli.terminal import neutralized_output
from affidavit.cli.verify import add_verify_claims_command
from affidavit.errors import AffidavitError

__all__ = ["build_parser", "main"]


# --------------------------------------------------------------------------- parser


def _global_options(default: Any) -> argparse.ArgumentParser:
    """``--config``, ``--db`` and ``--tenant``, whose unset value is ``default``."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--config", default=default,
                         help="settings file (default: ./affidavit.toml if present)")
    options.add_argument("--db", default=default,
                         help="database file (default: .affidavit/affidavit.db; env AFFIDAVIT_DB)")
    options.add_argument("--tenant", default=default,
                         help="tenant (default: 'default'; env AFFIDAVIT_TENANT)")
    return options


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("affidavit")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class _PrintVersion(argparse.Action):
    """``--version``: the installed version is looked up only when asked for (importing
    ``importlib.metadata`` costs as much as building the whole parser)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS,
                 help: str = "show program's version number and exit") -> None:
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stdout.write(f"affidavit {_version()}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    # The global options are accepted before and after the subcommand. A subcommand's
    # parser writes its defaults over what the main parser read, so there they default to
    # SUPPRESS: only a value actually given after the subcommand replaces one given before.
    common = _global_options(argparse.SUPPRESS)
    reader = argparse.ArgumentParser(add_help=False)
    reader.add_argument("--as", dest="as_principal", required=True, metavar="PRINCIPAL",
                        help="who is asking, e.g. user:alice (required: reads fail closed)")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON")

    parser = argparse.ArgumentParser(
        prog="affidavit", parents=[_global_options(None)],
        description="Governed retrieval-augmented generation: permission-first retrieval, "
                    "verified claims, a hash-chained ledger.")
    parser.add_argument("--version", action=_PrintVersion)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("init", parents=[common], help="create the database",
                       description="Create the database and apply migrations; with "
                                   "--example, first write the example settings "
                                   "(affidavit.toml) and corpus (corpus/) here.")
    p.add_argument("--example", action="store_true",
                   help="write the bundled example affidavit.toml and corpus/ first")
    p.add_argument("--force", action="store_true",
                   help="with --example: overwrite files that already exist")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("ingest", parents=[common, as_json],
                       help="ingest a folder, a file, an https:// URL or an sftp:// URL",
                       description="Ingest documents; exit 3 when some were quarantined.")
    p.add_argument("path", help="a folder (walked recursively), one file, an https:// URL "
                                "(a manifest.json or one document) or an sftp:// URL")
    p.add_argument("--source-system", default="files",
                   help="name of the source system; part of every document's identity")
    p.add_argument("--progress", action="store_true", help="show progress even when piped")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--partial", action="store_true",
                   help="not a full listing: do not withdraw documents missing from it")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="while another run ingests this tenant, wait up to SECONDS for it "
                        "(default 0: refuse at once, exit 4)")
    p.set_defaults(func=cmd_ingest)

    _add_runs(sub, common, as_json)

    p = sub.add_parser("worker", parents=[common], help="drain the PostgreSQL ingestion queue",
                       description="Claim queued documents with FOR UPDATE SKIP LOCKED and "
                                   "ingest them; several workers may run at once. Needs the "
                                   "'postgres' extra.")
    from affidavit.ingest.worker_options import add_worker_arguments

    add_worker_arguments(p)
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("search", parents=[common, reader, as_json], help="search what you may read",
                       description="Lexical search over the chunks the principal may read.")
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=None, help="number of hits (default 10)")
    p.add_argument("--explain", action="store_true",
                   help="operator view: each channel's own rank and score (raw BM25 scores "
                        "use tenant-wide statistics, hidden documents included), the fused "
                        "score and gates")
    p.add_argument("--reference-depth", type=int, default=0, choices=range(0, 6),
                   metavar="N", help="also search documents N reference hops away from "
                                     "what the query found (default 0)")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("ask", parents=[common, reader, as_json], help="a governed, cited answer",
                       description="Answer from evidence the principal may read; every answer "
                                   "is verified and recorded in the ledger first.")
    p.add_argument("question")
    # The request options of POST /v1/query (spec 003 §8.1; affidavit.llm.ask_options).
    p.add_argument("--model-role", "--role", dest="role", choices=["authoritative", "advisory"],
                   default=None, help="advisory answers are never more than NARRATIVE_ONLY "
                                      "(default: [answer] role)")
    p.add_argument("--response-mode", choices=["governed", "narrative"], default="governed",
                   help="narrative asks for an advisory answer (default governed)")
    p.add_argument("--inference-profile", choices=["reliability", "deep_reasoning"],
                   default="reliability", help="deep_reasoning asks for stability draws where "
                                               "the model can be sampled (default reliability)")
    p.add_argument("--subject", dest="subjects", action="append", default=[],
                   metavar="SUBJECT", help="answer only from sources whose ACTIVE SIRE "
                                           "Subject is SUBJECT (repeatable)")
    p.add_argument("--reference-depth", type=int, default=0, choices=range(0, 6),
                   metavar="N", help="also search documents N reference hops away from "
                                     "what the query found (default 0)")
    p.set_defaults(func=cmd_ask)

    _add_ledger(sub, common, reader, as_json)
    _add_authz(sub, common, as_json)
    add_audit_commands(sub, common, as_json)
    add_canary_commands(sub, common, as_json)
    add_refs_commands(sub, common, reader, as_json)
    add_labels_commands(sub, common, as_json)
    add_whoami_command(sub, common, as_json)
    _add_sire(sub, common, as_json)
    add_identity_commands(sub, common, as_json)
    add_requalify_command(sub, common, as_json)
    add_service_commands(sub, common, as_json)
    add_doctor_command(sub, common, as_json)
    add_backup_commands(sub, common, as_json)
    add_verify_claims_command(sub, common)
    add_completion_command(sub)

    p = sub.add_parser("demo", parents=[as_json], help="run the bundled example end to end",
                       description="Ingest the bundled example corpus into a temporary "
                                   "database and answer a question with citations.")
    p.add_argument("question", nargs="?", default=None)
    p.add_argument("--as", dest="as_principal", default=None, metavar="PRINCIPAL")
    p.add_argument("--model", choices=("extractive", "local"), default=None,
                   help="answer with this provider: 'local' runs SmolLM2-135M-Instruct in "
                        "process (needs the llama extra); default: the example's settings")
    return parser


def _add_runs(sub: Any, common: Any, as_json: Any) -> None:
    p = sub.add_parser("runs", help="ingestion runs", description="List and show ingestion runs.")
    rsub = p.add_subparsers(dest="runs_action", required=True, metavar="ACTION")
    q = rsub.add_parser("list", parents=[common, as_json], help="recent runs",
                        description="Recent ingestion runs, newest first.")
    q.add_argument("--limit", type=int, default=20)
    q.set_defaults(func=cmd_runs)
    q = rsub.add_parser("show", parents=[common, as_json], help="one run",
                        description="One run with its summary and quarantined documents.")
    q.add_argument("run_id")
    q.set_defaults(func=cmd_runs)
    p = sub.add_parser("quarantine", help="quarantined documents",
                       description="Review quarantined documents.")
    qsub = p.add_subparsers(dest="quarantine_action", required=True, metavar="ACTION")
    q = qsub.add_parser("list", parents=[common, as_json], help="list entries",
                        description="Unreleased quarantine entries (all with --all).")
    q.add_argument("--run", dest="run_id", default=None, help="only this run")
    q.add_argument("--all", action="store_true", help="include released entries")
    q.set_defaults(func=cmd_quarantine)
    q = qsub.add_parser("show", parents=[common, as_json], help="show one entry",
                        description="Show one entry.")
    q.add_argument("run_id")
    q.add_argument("alias")
    q.set_defaults(func=cmd_quarantine)
    add_quarantine_release(qsub, common, as_json)


def _add_ledger(sub: Any, common: Any, reader: Any, as_json: Any) -> None:
    p = sub.add_parser("ledger", help="read and verify the claim ledger",
                       description="Read and verify the claim ledger.")
    lsub = p.add_subparsers(dest="ledger_action", required=True, metavar="ACTION")
    q = lsub.add_parser("show", parents=[common, reader, as_json], help="show one record",
                        description="Show a record; evidence you may not read is withheld.")
    q.add_argument("record_id", help="ledger record id or request id")
    q.set_defaults(func=cmd_ledger_show)
    q = lsub.add_parser("verify", parents=[common, as_json], help="verify the hash chain",
                        description="Verify every record's hash chain and, against signed "
                                    "checkpoints, that nothing up to them was cut off or "
                                    "rewritten; exit 1 if not.")
    q.add_argument("--checkpoint", action="append", metavar="CHECKPOINT",
                   help="a checkpoint file from 'ledger checkpoint' (repeatable)")
    q.add_argument("--key", metavar="PUBFILE",
                   help="the public key the checkpoints must be signed with (without it, "
                        "only the key inside each checkpoint is checked)")
    q.add_argument("--record", metavar="RECORD_ID",
                   help="also list the policy changes made after this record was decided")
    q.set_defaults(func=cmd_ledger_verify)
    q = lsub.add_parser("keygen", parents=[common], help="make a checkpoint signing key",
                        description="Make an Ed25519 key pair: KEYFILE (private, mode 0600) "
                                    "and KEYFILE.pub. Keep KEYFILE away from the database.")
    q.add_argument("--out", required=True, metavar="KEYFILE")
    q.set_defaults(func=cmd_ledger_keygen)
    q = lsub.add_parser("checkpoint", parents=[common, as_json],
                        help="sign the head of the chain",
                        description="Verify the tenant's chain and sign its head (tenant, "
                                    "sequence number, record hash, time) into CHECKPOINT.")
    q.add_argument("--key", required=True, metavar="KEYFILE", help="the private key")
    q.add_argument("--out", required=True, metavar="CHECKPOINT")
    q.add_argument("--checkpoint", action="append", metavar="PREVIOUS",
                   help="an earlier checkpoint (by the same key) the chain must still hold "
                        "before the new one is signed (repeatable)")
    q.set_defaults(func=cmd_ledger_checkpoint)
    q = lsub.add_parser("replay", parents=[common, as_json], help="re-execute one record",
                        description="Re-execute retrieval, compilation and verification from "
                                    "the logged state; exit 1 at the first difference.")
    q.add_argument("record_id", help="ledger record id or request id")
    q.set_defaults(func=cmd_ledger_replay)


_BY_HELP = ("who makes the change, recorded in the policy audit trail "
            "(default: os:<the user running the command>)")


def _add_authz(sub: Any, common: Any, as_json: Any) -> None:
    p = sub.add_parser("authz", help="relationship tuples and label grants",
                       description="Manage tuples (object#relation@subject) and label grants.")
    asub = p.add_subparsers(dest="authz_action", required=True, metavar="ACTION")
    for name, text in (("add", "add a tuple"), ("remove", "remove a tuple")):
        q = asub.add_parser(name, parents=[common], help=text, description=text.capitalize())
        q.add_argument("tuple", help="e.g. group:finance#member@user:alice")
        q.add_argument("--by", default=None, help=_BY_HELP)
        q.set_defaults(func=cmd_authz)
    for name, text in (("grant", "grant labels"), ("revoke", "revoke labels")):
        q = asub.add_parser(name, parents=[common], help=f"{text} to a subject",
                            description=f"{text.capitalize()} (independent grants, never a "
                                        "hierarchy; PUBLIC is always granted).")
        q.add_argument("subject", help="e.g. group:hr#member or user:alice")
        q.add_argument("labels", nargs="+", metavar="LABEL")
        q.add_argument("--by", default=None, help=_BY_HELP)
        q.set_defaults(func=cmd_authz)
    q = asub.add_parser("list", parents=[common, as_json], help="list tuples and grants",
                        description="List tuples and grants from settings and the store.")
    q.set_defaults(func=cmd_authz)
    add_explain_command(asub, common, as_json)


def _add_sire(sub: Any, common: Any, as_json: Any) -> None:
    p = sub.add_parser("sire", help="SIRE identity proposals and approval",
                       description="List and approve SIRE proposals (PROPOSED -> ACTIVE).")
    ssub = p.add_subparsers(dest="sire_action", required=True, metavar="ACTION")
    q = ssub.add_parser("list", parents=[common, as_json], help="list SIRE records",
                        description="List SIRE records of head document versions.")
    q.add_argument("--state", choices=["PROPOSED", "APPROVED", "ACTIVE"], default=None)
    q.add_argument("--as", dest="as_principal", default=None, metavar="PRINCIPAL",
                   help="show only what this principal may see: records of documents it "
                        "may read, terms whose labels it is granted")
    q.set_defaults(func=cmd_sire)
    q = ssub.add_parser("approve", parents=[common], help="approve proposals",
                        description="Approve proposals; they become ACTIVE, recorded with who "
                                    "approved them and when.")
    q.add_argument("ids", nargs="*", metavar="ID")
    q.add_argument("--all", action="store_true", help="approve every PROPOSED record")
    add_sire_filters(q)
    q.add_argument("--by", required=True, help="who approves (recorded)")
    q.set_defaults(func=cmd_sire)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        # Everything the CLI writes passes here: control and bidi characters from titles,
        # file names, text and messages are neutralised (affidavit.cli.terminal).
        with neutralized_output():
            code = _dispatch(argv)
            # Flush here, not at interpreter exit, so that a closed pipe is caught below.
            sys.stdout.flush()
    except KeyboardInterrupt:
        # Ctrl-C anywhere else: one line, no traceback (an ingest says what it committed).
        print("affidavit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``affidavit search ... | head``): what it wanted it has.
        # Exit quietly as a process ended by SIGPIPE does; stdout goes to /dev/null so that
        # the interpreter's own flush at exit cannot raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _dispatch(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    as_json = bool(getattr(args, "json", False))
    if args.command == "completion":  # needs no settings: works before any affidavit.toml
        sys.stdout.write(completion_script(parser, args.shell))
        return 0
    if args.command == "demo":
        from affidavit.engine.demo import run_demo

        given = [f"--{name}" for name in ("config", "db", "tenant") if getattr(args, name)]
        if given:  # the demo builds its own settings and database: refuse, never ignore
            parser.error(f"demo uses a temporary database of its own; {', '.join(given)} "
                         "cannot apply to it")

        try:
            return run_demo(question=args.question, principal=args.as_principal,
                            as_json=args.json, model=args.model)
        except AffidavitError as exc:
            return report_error(exc, as_json=as_json)
    try:
        ctx = Context(args)
    except AffidavitError as exc:
        return report_error(exc, as_json=as_json)
    try:
        return int(args.func(ctx))
    except AffidavitError as exc:
        return report_error(exc, as_json=as_json)
    finally:
        ctx.close()


if __name__ == "__main__":
    sys.exit(main())
