"""What each ``affidavit`` command does; :mod:`affidavit.cli.main` parses arguments and calls these.

The command line imports this module to build its parser, so at module level it imports only
the standard library and the error types: each command imports what it needs when it runs
(pinned by tests/project/test_startup_imports.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from affidavit.cli.context import Context as Context
from affidavit.cli.context import _now, _print_json
from affidavit.cli.errors import EXIT_BUSY as EXIT_BUSY
from affidavit.cli.errors import EXIT_FAILED as EXIT_FAILED
from affidavit.cli.errors import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from affidavit.cli.errors import EXIT_OK as EXIT_OK
from affidavit.cli.errors import EXIT_QUARANTINED as EXIT_QUARANTINED
from affidavit.cli.errors import EXIT_USAGE as EXIT_USAGE
from affidavit.cli.errors import UsageError as UsageError
from affidavit.errors import NotFound, RunInProgress

if TYPE_CHECKING:
    from affidavit.engine.query import Engine


# --------------------------------------------------------------------------- commands


def cmd_ingest(ctx: Context) -> int:
    from affidavit.cli.progress import IngestProgress, progress_mode
    from affidavit.ingest.run import INGESTED, Ingestor, RunInterrupted
    from affidavit.sources import listing_key, location_scheme, source_for

    args = ctx.args
    if location_scheme(args.path) is None and not Path(args.path).exists():
        raise UsageError(f"{args.path}: no such file or folder")
    source = source_for(args.path, ctx.settings, source_system=args.source_system)
    store = ctx.store(create=True)
    mode = progress_mode(quiet=args.quiet, forced=args.progress, stream=sys.stderr)
    # A folder, a manifest or an SFTP root is a full listing: what disappeared from it
    # since its last ingest is withdrawn.
    listing = None if args.partial else listing_key(args.path)
    try:
        with IngestProgress(mode) as progress:
            summary = Ingestor(store, ctx.settings, tenant=ctx.tenant).run(
                [source], progress=progress, listing=listing,
                wait_seconds=args.wait, on_wait=_tell_waiting)
    except RunInProgress as exc:
        print(f"affidavit: {exc}; try again later, or pass --wait SECONDS", file=sys.stderr)
        return EXIT_BUSY
    except RunInterrupted as stop:
        done = stop.summary
        print(f"affidavit: interrupted: run {done.run_id} stopped after "
              f"{len(done.outcomes)} document(s), {done.count(INGESTED)} ingested and "
              "committed (each whole); run the same command again to resume: what is "
              "unchanged is skipped", file=sys.stderr)
        return EXIT_INTERRUPTED
    data = summary.to_dict()
    if args.json:
        _print_json(data)
    else:
        print(f"run {data['run_id']}: {data['status']} - ingested {data['ingested']}, "
              f"unchanged {data['unchanged']}, quarantined {len(data['quarantined'])}, "
              f"chunks written {data['chunks_written']}")
        for q in data["quarantined"]:
            print(f"  quarantined {q['alias']}: {q['reason_code']} - {q['message']}")
        for alias in data["withdrawn"]:
            print(f"  withdrawn (gone from the source): {alias}")
        for alias in data["relabelled"]:
            print(f"  requalified (a settings change affects it): {alias}")
        for move in data["moved"]:
            print(f"  moved (same document, new path): {move}")
        links = data["links"]
        if links.get("total"):
            print(f"  links: {links['total']} ({links['resolved']} resolved, "
                  f"{links['external']} external, {links['not_found']} not found, "
                  f"{links['ambiguous']} ambiguous, {links['refused']} refused); "
                  f"unresolved-link rate {links['unresolved_rate']:.1%}")
        for warning in data["warnings"]:
            print(f"  warning: {warning}")
    from affidavit.cli.diagnose import warn_default_label_unreadable, warn_exclusion_gate_empty

    warn_default_label_unreadable(ctx)
    warn_exclusion_gate_empty(ctx)
    return EXIT_QUARANTINED if data["quarantined"] else EXIT_OK


def _tell_waiting(message: str) -> None:
    print(f"affidavit: {message}", file=sys.stderr, flush=True)


def cmd_runs(ctx: Context) -> int:
    store = ctx.store()
    if ctx.args.runs_action == "show":
        run = store.get_run(ctx.tenant, ctx.args.run_id)
        if run is None:
            raise NotFound(f"no run {ctx.args.run_id}")
        data = {"run_id": run.run_id, "status": run.status, "started_at": run.started_at,
                "finished_at": run.finished_at, "summary": json.loads(run.summary_json),
                "quarantined": [q.__dict__ for q in store.list_quarantine(ctx.tenant, run.run_id)]}
        if ctx.args.json:
            _print_json(data)
        else:
            print(f"{run.run_id}  {run.status}  {run.started_at} -> {run.finished_at}")
            for q in data["quarantined"]:
                print(f"  quarantined {q['alias']}: {q['reason_code']} - {q['message']}")
        return EXIT_OK
    runs = store.list_runs(ctx.tenant, limit=ctx.args.limit)
    if ctx.args.json:
        _print_json([{"run_id": r.run_id, "status": r.status, "started_at": r.started_at,
                      "finished_at": r.finished_at} for r in runs])
        return EXIT_OK
    for r in runs:
        summary = json.loads(r.summary_json)
        counts = (f"ingested {summary.get('ingested', 0)}, unchanged {summary.get('unchanged', 0)}"
                  f", quarantined {len(summary.get('quarantined', []))}") if summary else ""
        print(f"{r.run_id}  {r.status:<9} {r.started_at}  {counts}")
    return EXIT_OK


def cmd_quarantine(ctx: Context) -> int:
    from affidavit.audit import changes as audited

    store, args = ctx.store(), ctx.args
    records = store.list_quarantine(ctx.tenant, getattr(args, "run_id", None))
    if args.quarantine_action == "release":
        if not audited.release_quarantine(store, ctx.tenant, args.run_id, args.alias,
                                          actor=args.by):
            raise NotFound(f"no unreleased quarantine entry {args.alias} in {args.run_id}")
        print(f"released {args.alias} from {args.run_id} (by {args.by}); the next ingest of its "
              "source tries it again")
        return EXIT_OK
    if args.quarantine_action == "show":
        records = [r for r in records if r.alias == args.alias]
        if not records:
            raise NotFound(f"no quarantine entry {args.alias} in {args.run_id}")
    elif not args.all:
        records = [r for r in records if r.released_by is None]
    if args.json:
        _print_json([r.__dict__ for r in records])
        return EXIT_OK
    for r in records:
        released = f"  released by {r.released_by}" if r.released_by else ""
        print(f"{r.run_id}  {r.alias}  {r.reason_code}: {r.message}{released}")
    return EXIT_OK


def cmd_search(ctx: Context) -> int:
    from affidavit.authz import parse_principal
    from affidavit.engine.query import Engine

    engine = Engine(ctx.store(), ctx.settings, tenant=ctx.tenant)
    _catch_up(engine)
    hits = engine.search(parse_principal(ctx.args.as_principal), ctx.args.query,
                         limit=ctx.args.limit, reference_depth=ctx.args.reference_depth)
    if not hits:
        from affidavit.cli.diagnose import warn_if_unknown_principal

        warn_if_unknown_principal(ctx, ctx.args.as_principal)
    if ctx.args.json:
        _print_json([h.to_dict(operator=ctx.args.explain) for h in hits])
        return EXIT_OK
    if not hits:
        print("no results you may see")
    for rank, hit in enumerate(hits, start=1):
        marker = "" if hit.sire_active else "  [no ACTIVE SIRE: excluded from answers]"
        print(f"{rank}. [src:{hit.chunk_id[:8]}] {hit.title} ({hit.label}) "
              f"score={hit.score:.4f}{marker}")
        print(f"   {hit.locator}")
        if hit.via_reference:
            print(f"   via reference {hit.via_reference['ref_id']} "
                  f"({hit.via_reference['kind']})")
        if ctx.args.explain:
            e = hit.explain
            print(f"   lexical rank {e.get('lexical_rank')} score {e.get('lexical_score')}; "
                  f"vector rank {e.get('vector_rank')} score {e.get('vector_score')}; "
                  f"fused rank {e.get('fused_rank')} score {hit.score:.6f}; "
                  f"gates: {e.get('gates')}")
        snippet = " ".join(hit.text.split())
        print(f"   {snippet[:240]}{'...' if len(snippet) > 240 else ''}")
    return EXIT_OK


def cmd_ask(ctx: Context) -> int:
    from affidavit.authz import parse_principal
    from affidavit.engine.query import Engine
    from affidavit.llm.ask_options import AskOptions

    args = ctx.args
    principal = parse_principal(args.as_principal)
    options = AskOptions(model_role=args.role, response_mode=args.response_mode,
                         inference_profile=args.inference_profile,
                         subject_scope=tuple(args.subjects))
    engine = Engine(ctx.store(), ctx.settings, tenant=ctx.tenant)
    _catch_up(engine)
    result = engine.ask(principal, args.question, options=options,
                        reference_depth=args.reference_depth)
    if not result.citations:
        from affidavit.cli.diagnose import warn_if_unknown_principal

        warn_if_unknown_principal(ctx, principal)
    if ctx.args.json:
        _print_json(result.to_dict())
    else:
        from affidavit.cli.verify import marked_answer

        print(marked_answer(result.answer, result.claims) or "(no answer)")
        print(f"\noutput state: {result.output_state}")
        for citation in result.citations:
            print(f"  [src:{citation['src']}] {citation['title']} - {citation['locator']}")
        if result.reasons:
            print("reasons: " + "; ".join(result.reasons))
        print(f"ledger record: {result.ledger_record_id} ({result.ledger_record_hash[:16]})")
    return _refusal_exit(result.output_state, result.reasons, as_json=ctx.args.json)


# Up to this many stale documents are checked quietly; more show progress on a terminal.
_QUIET_CATCH_UP = 50


def _catch_up(engine: Engine) -> None:
    """Before a search or an answer: documents derived under an earlier policy that the
    change does not affect are marked current and serve again; what it affects stays
    withheld, and stderr says how many. A store that cannot be written leaves them
    withheld."""
    from affidavit.errors import StoreError

    def progress(done: int, total: int) -> None:
        if total > _QUIET_CATCH_UP and sys.stderr.isatty():
            end = "\n" if done == total else ""
            print(f"\raffidavit: checking documents derived under an earlier policy: "
                  f"{done}/{total}", end=end, file=sys.stderr, flush=True)

    try:
        report = engine.catch_up(progress=progress)
    except StoreError as exc:
        print(f"affidavit: documents derived under an earlier policy stay withheld ({exc})",
              file=sys.stderr)
        return
    if report.busy and report.stale:
        print(f"affidavit: {report.stale} documents derived under an earlier policy stay "
              "withheld while an ingestion run holds the lock", file=sys.stderr)
    if report.restamped:
        print(f"affidavit: the policy changed; {len(report.restamped)} documents it does not "
              "affect serve again", file=sys.stderr)
    if report.affected:
        # A count only: the command answers for --as, who may not read those documents'
        # names; `affidavit requalify --plan` lists them for the operator.
        print(f"affidavit: {len(report.affected)} documents it affects stay withheld until "
              "`affidavit requalify --roll` (or the next ingest); `affidavit requalify "
              "--plan` lists them", file=sys.stderr)


def _refusal_exit(output_state: str, reasons: list[str], *, as_json: bool) -> int:
    """EXIT_OK for a served answer; a refused one (recorded all the same) says why on
    stderr and exits with the code of its kind (see affidavit.cli.errors)."""
    from affidavit.cli.errors import answer_exit, report

    refused = answer_exit(output_state, reasons)
    if refused is None:
        return EXIT_OK
    kind, code = refused
    return report(kind, code, f"answer {output_state}: {'; '.join(reasons)}", as_json=as_json)


def cmd_ledger_show(ctx: Context) -> int:
    from affidavit.audit import events_after
    from affidavit.authz import FailClosedAuthorizer, StoreAuthorizer, may_view_record
    from affidavit.engine.ledger_record import redact_for

    store = ctx.store()
    authz = FailClosedAuthorizer(StoreAuthorizer(store, ctx.settings)).context_for(
        ctx.tenant, ctx.args.as_principal)
    entry = store.get_ledger(ctx.tenant, ctx.args.record_id)
    # Someone else's record reads exactly like an id that was never issued.
    if entry is None or not may_view_record(json.loads(entry.payload), authz):
        raise NotFound(f"no ledger record {ctx.args.record_id} that you may see")
    view = redact_for(entry, authz, store)
    # Which policy changes came after the policy this record was decided under.
    later = events_after(store, ctx.tenant, json.loads(entry.payload).get("policy_version"))
    view["policy_events_after"] = [{"seq": e.seq, "kind": e.kind, "actor": e.actor,
                                    "at": e.at} for e in later]
    if ctx.args.json:
        _print_json(view)
        return EXIT_OK
    record = view["record"]
    print(f"record {record['record_id']} (seq {view['seq']}, hash {view['record_hash'][:16]})")
    for key in ("request_id", "created_at", "principal", "query", "output_state", "answer"):
        print(f"  {key}: {record.get(key)}")
    for citation in record.get("citations", []):
        print(f"  cited [src:{citation['src']}] {citation['title']}")
    for e in view["policy_events_after"]:
        print(f"  policy changed after it: #{e['seq']} {e['kind']} by {e['actor']} at {e['at']}")
    return EXIT_OK


def cmd_ledger_replay(ctx: Context) -> int:
    from affidavit.ledger import replay

    report = replay(ctx.store(), ctx.settings, ctx.args.record_id, tenant=ctx.tenant)
    if ctx.args.json:
        _print_json(report.to_dict())
    elif report.matches:
        print(f"record reproduces: checked {', '.join(report.checked)}")
        for skipped in report.skipped:
            print(f"  not re-executed: {skipped}")
    else:
        print(f"record does NOT reproduce: {report.first_difference}")
    return EXIT_OK if report.matches else EXIT_FAILED


def cmd_worker(ctx: Context) -> int:
    try:
        from affidavit.ingest.worker import run_worker_command
    except ImportError as exc:
        raise UsageError("the worker needs the 'postgres' extra: "
                         "pip install 'affidavit[postgres]'") from exc

    return run_worker_command(ctx.store(), ctx.settings, ctx.tenant, ctx.args)


def cmd_authz(ctx: Context) -> int:
    from affidavit.audit import changes as audited
    from affidavit.audit import operator_actor
    from affidavit.authz import StoreAuthorizer, parse_subject, parse_tuple

    args, store = ctx.args, ctx.store(create=True)
    action = args.authz_action
    if action in ("add", "remove"):
        rel = parse_tuple(args.tuple)
        if action == "add":
            changed = audited.add_tuple(store, ctx.tenant, rel, actor=operator_actor(args.by))
            print(("added " if changed else "already present: ") + str(rel))
        else:
            configured = ctx.settings.policy_for(ctx.tenant).authz.tuples
            if str(rel) in {str(parse_tuple(t)) for t in configured}:
                raise UsageError(f"{rel} is defined in {ctx.settings.source_file}; edit that file")
            if not audited.remove_tuple(store, ctx.tenant, rel,
                                        actor=operator_actor(args.by)):
                raise UsageError(f"no such tuple in the store: {rel}")
            print(f"removed {rel}")
        return EXIT_OK
    if action in ("grant", "revoke"):
        subject = parse_subject(args.subject)
        labels = [label.upper() for label in args.labels]
        unknown = [label for label in labels if label not in ctx.settings.sensitivity.labels]
        if unknown:
            raise UsageError(f"unknown label(s): {', '.join(unknown)}")
        if action == "grant":
            n = audited.grant_labels(store, ctx.tenant, subject, labels,
                                     actor=operator_actor(args.by))
            print(f"granted {n} new label(s) to {subject}")
        else:
            n = audited.revoke_labels(store, ctx.tenant, subject, labels,
                                      actor=operator_actor(args.by))
            print(f"revoked {n} label(s) from {subject}")
        return EXIT_OK
    authorizer = StoreAuthorizer(store, ctx.settings)
    tuples = sorted(authorizer.all_tuples(ctx.tenant), key=str)
    grants = {k: sorted(v) for k, v in sorted(authorizer.all_grants(ctx.tenant).items())}
    if args.json:
        _print_json({"tuples": [{"tuple": str(t), "source": t.source} for t in tuples],
                     "grants": grants})
        return EXIT_OK
    for t in tuples:
        print(f"{t}  ({t.source})")
    for subject, labels in grants.items():
        print(f"grant {subject}: {', '.join(labels)}")
    return EXIT_OK


def cmd_sire(ctx: Context) -> int:
    from affidavit.authz import FailClosedAuthorizer, StoreAuthorizer, parse_principal
    from affidavit.identity.lifecycle import approve_sires
    from affidavit.identity.sire_labels import sire_records_for

    args, store = ctx.args, ctx.store()
    if args.sire_action == "list":
        from affidavit.identity.sire_diff import describe_diff, proposal_diffs

        records, authz = store.list_sire(ctx.tenant, state=args.state), None
        if args.as_principal is not None:
            authz = FailClosedAuthorizer(StoreAuthorizer(store, ctx.settings)).context_for(
                ctx.tenant, parse_principal(args.as_principal))
            records = sire_records_for(store, authz, records)
        diffs = proposal_diffs(store, ctx.tenant, records, authz)
        from affidavit.cli.diagnose import warn_exclusion_gate_empty

        warn_exclusion_gate_empty(ctx)
        if args.json:
            _print_json([{"sire_id": r.sire_id, "alias": r.alias, "title": r.title,
                          "state": r.state, "approved_by": r.approved_by,
                          "approved_at": r.approved_at, **r.sire.to_dict(),
                          "proposal_diff": diffs.get(r.sire_id)} for r in records])
            return EXIT_OK
        for r in records:
            print(f"{r.sire_id}  {r.state:<8} {r.alias}  subject={r.sire.subject} "
                  f"excluded={list(r.sire.excluded)}")
            if r.sire_id in diffs:
                print(f"  {describe_diff(diffs[r.sire_id])}")
        return EXIT_OK
    from affidavit.cli.bulk import sire_targets

    targets = sire_targets(ctx)
    failures = 0
    approvals = approve_sires(store, ctx.tenant, targets, by=args.by, at=_now())
    for approval in approvals:
        if approval.record is not None:
            print(f"{approval.sire_id} ACTIVE (approved by {approval.record.approved_by})")
        else:
            failures += 1
            print(f"{approval.sire_id} not approved: {approval.refused}", file=sys.stderr)
    print(f"approved {len(approvals) - failures} of {len(approvals)}")
    return EXIT_FAILED if failures else EXIT_OK


