"""``affidavit labels override|sources|lapsed``: admin label overrides, where labels came
from, and the overrides that lapsed.

An override is the only way to lower a detected label. It is recorded as a
``label.override`` policy event with its actor (``--by``, default the operator's OS
account) and reason, bound to the paragraph's text and the label it replaces (as the head
version has them now), and is in force from the next ingestion run, which relabels the
document. When that text changes or goes, the override lapses (``labels lapsed``). The CLI
acts for whoever can open the database (DESIGN.md, "Who the caller is").
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from affidavit.cli.context import EXIT_OK, Context, _print_json
from affidavit.cli.errors import UsageError
from affidavit.cli.ledger import printable

if TYPE_CHECKING:
    from affidavit.store.protocol import Store
    from affidavit.text.bindings import ContentBinding


def add_labels_commands(sub: Any, common: argparse.ArgumentParser,
                        as_json: argparse.ArgumentParser) -> None:
    """The ``labels`` subcommand."""
    p = sub.add_parser("labels", help="label overrides and label sources",
                       description="Override a paragraph's label (recorded in the policy "
                                   "audit trail) and show where labels came from.")
    lsub = p.add_subparsers(dest="labels_action", required=True, metavar="ACTION")
    q = lsub.add_parser("override", parents=[common, as_json],
                        help="set a paragraph's label; in force from the next ingestion run")
    q.add_argument("document", help="node id or path of the document")
    q.add_argument("paragraph", type=int, help="paragraph index (see 'labels sources')")
    q.add_argument("label", help="the label to set, or 'none' to withdraw an override")
    q.add_argument("--reason", required=True, help="why (kept in the audit trail)")
    q.add_argument("--by", default=None, help="who is making the change (audit trail)")
    q.set_defaults(func=cmd_labels)
    q = lsub.add_parser("sources", parents=[common, as_json],
                        help="each paragraph's label of a document and where it came from")
    q.add_argument("document", help="node id or path of the document")
    q.set_defaults(func=cmd_labels)
    q = lsub.add_parser("lapsed", parents=[common, as_json],
                        help="recorded overrides that lapsed: their paragraph changed or went",
                        description="List the label overrides that no longer hold, newest "
                                    "first (policy events of kind decision.lapse).")
    q.set_defaults(func=cmd_labels)


def _node(store: Store, tenant: str, document: str) -> tuple[str, str]:
    for head in store.heads(tenant):
        if document in (head.node_id, head.alias):
            return head.node_id, head.version_id
    raise UsageError(f"no document {document!r}")


def cmd_labels(ctx: Context) -> int:
    from affidavit.audit import operator_actor
    from affidavit.classify.model import label_sources
    from affidavit.classify.overrides import record_override
    from affidavit.policy.policy import SensitivityPolicy

    args = ctx.args
    store = ctx.store()
    if args.labels_action == "lapsed":
        return _lapsed(ctx, store)
    node_id, version_id = _node(store, ctx.tenant, args.document)
    if args.labels_action == "override":
        policy = SensitivityPolicy.from_settings(ctx.settings.sensitivity)
        label = None if args.label.casefold() == "none" else policy.canonical(args.label)
        binding = _binding(ctx, store, node_id, version_id, args.paragraph)
        event = record_override(store, ctx.tenant, node_id=node_id, paragraph=args.paragraph,
                                label=label, reason=args.reason, actor=operator_actor(args.by),
                                binding=binding)
        if args.json:
            _print_json({"seq": event.seq, "node_id": node_id, "paragraph": args.paragraph,
                         "label": label, "actor": event.actor})
        else:
            print(f"override recorded (policy event #{event.seq} by {printable(event.actor)}); "
                  "in force from the next ingestion run")
        return EXIT_OK
    rows = store.paragraph_labels(ctx.tenant, version_id)
    if args.json:
        _print_json([{"paragraph": label.index, "label": label.label,
                      "sources": list(label_sources(label.reasons)),
                      "reasons": list(label.reasons)} for label in rows])
        return EXIT_OK
    for row in rows:
        print(printable(f"{row.index:>4} {row.label:<14} "
                        f"{', '.join(label_sources(row.reasons))}  "
                        f"({'; '.join(row.reasons)})"))
    return EXIT_OK




def _binding(ctx: Context, store: Store, node_id: str, version_id: str,
             paragraph: int) -> ContentBinding:
    """What an override of ``paragraph`` of the head version is about: its text, read again
    from the stored bytes (the blob plane is the authority), and its detected label."""
    from affidavit.classify.overrides import paragraph_binding, recorded_overrides
    from affidavit.extract import extract

    head = next(h for h in store.heads(ctx.tenant) if h.version_id == version_id)
    blob = store.blob(ctx.tenant, head.raw_digest)
    if blob is None:
        raise UsageError(f"the stored bytes of {head.alias!r} are missing; ingest it again")
    doc = extract(blob.content, filename=head.alias, limits=ctx.settings.ingest)
    return paragraph_binding(doc, store.paragraph_labels(ctx.tenant, version_id), paragraph,
                             recorded_overrides(store, ctx.tenant, node_id))


def _lapsed(ctx: Context, store: Store) -> int:
    from affidavit.audit.lapses import lapsed_decisions

    lapses = lapsed_decisions(store, ctx.tenant)
    if ctx.args.json:
        _print_json([lapse.to_dict() for lapse in lapses])
        return EXIT_OK
    for lapse in lapses:
        print(printable(f"#{lapse.seq} {lapse.at} {lapse.decision} #{lapse.decision_seq} "
                        f"lapsed ({lapse.reason}): node {lapse.node_id} paragraph "
                        f"{lapse.paragraph} {lapse.replaced} -> {lapse.label}"))
    return EXIT_OK
