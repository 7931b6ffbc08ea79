"""Stage D: the links a document declares, resolved into edges between documents.

Each link target found while parsing gets a reason code:

- ``external``: another site or scheme (``https:``, ``mailto:``...): not ours to resolve;
- ``refused``: a scheme that is never followed (``javascript:``, ``file:``, ``data:``) or
  a relative path that climbs out of the source's root;
- ``resolved``: exactly one served document has that path (directly or through a recorded
  move), and the edge is stored as a ``CrossReference`` from the linking document to it,
  labelled with the most severe label of both ends and so, like every reference, shown
  only to a reader of both ends;
- ``not_found``: no served document has that path; ``ambiguous``: more than one has.

Unresolved links are kept with their reason in the run summary, by linking document and
reason only: a target is the document's own text and is never printed. The unresolved-link
rate is the share of internal links (not external) that did not resolve.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from affidavit.config.settings import Settings
from affidavit.errors import InputRejected
from affidavit.extract import extract
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import DOCUMENT, Reference, stable_hash
from affidavit.store.protocol import HeadInfo, Store

RESOLVED, NOT_FOUND, AMBIGUOUS, EXTERNAL, REFUSED = (
    "resolved", "not_found", "ambiguous", "external", "refused")
REASONS = (RESOLVED, NOT_FOUND, AMBIGUOUS, EXTERNAL, REFUSED)
LINK_KIND = "CrossReference"
LINK_ACTOR = "system:links"
REFUSED_SCHEMES = frozenset({"javascript", "file", "data", "vbscript"})


@dataclass
class LinkReport:
    """What one run's link resolution found."""

    counts: Counter[str] = field(default_factory=Counter)
    unresolved: list[dict[str, str]] = field(default_factory=list)
    edges_added: int = 0

    @property
    def unresolved_rate(self) -> float:
        internal = sum(self.counts[r] for r in (RESOLVED, NOT_FOUND, AMBIGUOUS, REFUSED))
        failed = sum(self.counts[r] for r in (NOT_FOUND, AMBIGUOUS, REFUSED))
        return round(failed / internal, 4) if internal else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"total": sum(self.counts.values()),
                **{reason: self.counts[reason] for reason in REASONS},
                "unresolved_rate": self.unresolved_rate, "edges_added": self.edges_added,
                "unresolved": self.unresolved}


def classify_target(target: str, alias: str) -> tuple[str, str | None]:
    """(reason, the path it names) of one link target found in document ``alias``."""
    parts = urlsplit(target.strip())
    if parts.scheme:
        scheme = parts.scheme.lower()
        if scheme in REFUSED_SCHEMES:
            return REFUSED, None
        if len(scheme) > 1:  # a one-letter "scheme" is a Windows drive: a local path
            return EXTERNAL, None
    if parts.netloc:
        return EXTERNAL, None
    path = unquote(parts.path)
    if not path:
        return RESOLVED, alias  # a fragment of the document itself
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(alias), path)
                                if not path.startswith("/") else path.lstrip("/"))
    if joined == ".." or joined.startswith("../"):
        return REFUSED, None
    return NOT_FOUND, joined


def resolve_links(store: Store, settings: Settings, tenant: str,
                  node_ids: Iterable[str], redirects: dict[str, str], *,
                  parsed: Mapping[str, Sequence[str]] | None = None) -> LinkReport:
    """Resolve the links of the head versions of ``node_ids``; add an edge per resolved
    link to another document (once per pair). ``parsed`` gives, by version id, the links
    a version was parsed with when the caller has them (the ingest that committed it);
    other heads are parsed again from their stored bytes."""
    heads = store.heads(tenant)
    by_alias: dict[str, set[str]] = {}
    for head in heads:
        by_alias.setdefault(head.alias, set()).add(head.node_id)
    for alias, node_id in redirects.items():
        by_alias.setdefault(alias, set()).add(node_id)
    head_of = {h.node_id: h for h in heads}
    policy = SensitivityPolicy.from_settings(settings.sensitivity)
    report = LinkReport()
    for node_id in sorted(set(node_ids)):
        linking = head_of.get(node_id)
        if linking is not None:
            _resolve_document(store, settings, tenant, linking, by_alias, head_of, policy,
                              report, (parsed or {}).get(linking.version_id))
    return report


def _resolve_document(store: Store, settings: Settings, tenant: str, head: HeadInfo,
                      by_alias: dict[str, set[str]], head_of: dict[str, HeadInfo],
                      policy: SensitivityPolicy, report: LinkReport,
                      links: Sequence[str] | None = None) -> None:
    if links is None:
        blob = store.blob(tenant, head.raw_digest)
        if blob is None:
            return
        try:
            links = extract(blob.content, filename=head.alias, limits=settings.ingest).links
        except InputRejected:
            return
    linked: set[str] = set()
    for target in links:
        reason, path = classify_target(target, head.alias)
        if path is not None:
            nodes = by_alias.get(path, set())
            reason = RESOLVED if len(nodes) == 1 else AMBIGUOUS if nodes else NOT_FOUND
            if len(nodes) == 1:
                linked |= nodes - {head.node_id}
        report.counts[reason] += 1
        if reason in (NOT_FOUND, AMBIGUOUS, REFUSED):
            report.unresolved.append({"from": head.alias, "reason": reason})
    existing = {r.target_id for r in store.references_touching(
        tenant, [head.node_id], direction="out", labels=policy.labels, limit=10_000)
        if r.kind == LINK_KIND and r.created_by == LINK_ACTOR}
    for target_id in sorted(linked - existing):
        label = policy.most_severe([_document_label(store, tenant, head_of[n], policy)
                                    for n in (head.node_id, target_id)])
        store.add_reference(tenant, Reference(
            ref_id="ref-link-" + stable_hash("link", head.node_id, target_id)[:20],
            kind=LINK_KIND, source_type=DOCUMENT, source_id=head.node_id,
            target_id=target_id, target_chunk_id=None, location_type=None,
            location_detail="{}", label="", reason="", classification=label,
            created_by=LINK_ACTOR,
            created_at=datetime.now(UTC).isoformat(timespec="microseconds")))
        report.edges_added += 1


def _document_label(store: Store, tenant: str, head: HeadInfo,
                    policy: SensitivityPolicy) -> str:
    return policy.most_severe(c.label for c in store.version_chunks(tenant, head.version_id))
