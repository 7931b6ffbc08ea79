"""The drift gate: a new version that lost its structure does not replace the old one.

An edit that drops a document's tables, half its headings, its redaction markers or most
of its text is more often a broken export, a wrong file or a parser change than an
intended rewrite. Each new version of a node is compared with the version it would
supersede on structural invariants (:class:`Structure`); past the ``[drift]`` thresholds
(:class:`~affidavit.config.settings.DriftSettings`) it is quarantined as ``DRIFT`` and the previous
version keeps serving. A reviewer who releases the quarantine entry
(``affidavit quarantine release``) lets exactly those bytes in on the next run: the entry
names their digest.
"""

from __future__ import annotations

from dataclasses import dataclass

from affidavit.config.settings import DriftSettings, IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import extract
from affidavit.records import ExtractedDocument
from affidavit.store.protocol import HeadInfo, Store

DRIFT = "DRIFT"
REDACTION_MARKERS = ("[redacted]", "[removed]", "\u2588")
"""Strings that mark text withheld on purpose: a new version without them may show it."""


@dataclass(frozen=True)
class Structure:
    """What the gate compares: block counts and the share of raw bytes that became text."""

    headings: int
    tables: int
    code_blocks: int
    redaction_markers: int
    coverage: float

    @classmethod
    def of(cls, extracted: ExtractedDocument, raw_size: int) -> Structure:
        kinds = [p.kind for p in extracted.paragraphs]
        lowered = extracted.text.lower()
        return cls(headings=kinds.count("heading"), tables=kinds.count("table"),
                   code_blocks=kinds.count("code"),
                   redaction_markers=sum(lowered.count(m) for m in REDACTION_MARKERS),
                   coverage=len(extracted.text.strip()) / max(1, raw_size))


def drift_between(before: Structure, after: Structure,
                  thresholds: DriftSettings) -> list[str]:
    """The invariants ``after`` lost past the thresholds, as 'name before->after'."""
    lost = []
    for name in ("headings", "tables", "code_blocks", "redaction_markers"):
        old, new = getattr(before, name), getattr(after, name)
        if old >= thresholds.min_blocks and new < old * (1 - thresholds.max_block_loss):
            lost.append(f"{name} {old}->{new}")
    if after.coverage < before.coverage * (1 - thresholds.max_coverage_loss):
        lost.append(f"coverage {before.coverage:.2f}->{after.coverage:.2f}")
    return lost


def _released(store: Store, tenant: str, alias: str, raw_digest: str) -> bool:
    """A reviewer released a DRIFT entry of exactly these bytes at this path."""
    tag = _digest_tag(raw_digest)
    return any(r.reason_code == DRIFT and r.alias == alias and r.released_by is not None
               and tag in r.message for r in store.list_quarantine(tenant))


def _digest_tag(raw_digest: str) -> str:
    """How an entry names the bytes it holds: the whole SHA-256, so that a release binds to
    exactly those bytes (:mod:`affidavit.text.bindings`). An entry recorded with a shorter tag
    no longer matches: its bytes wait for a release of the entry the next run records."""
    return f"bytes sha256:{raw_digest}"


def check_drift(store: Store, tenant: str, head: HeadInfo, extracted: ExtractedDocument,
                raw_size: int, raw_digest: str, *, alias: str, limits: IngestSettings,
                thresholds: DriftSettings) -> None:
    """Raise ``InputRejected(DRIFT)`` when this new version of ``head``'s node lost its
    structure past ``thresholds`` and no reviewer released these bytes."""
    if not thresholds.enabled or head.raw_digest == raw_digest:
        return
    blob = store.blob(tenant, head.raw_digest)
    if blob is None:
        return
    try:
        previous = extract(blob.content, filename=head.alias, limits=limits)
    except InputRejected:  # the old bytes are refused now: nothing to compare with
        return
    lost = drift_between(Structure.of(previous, len(blob.content)),
                         Structure.of(extracted, raw_size), thresholds)
    if lost and not _released(store, tenant, alias, raw_digest):
        raise InputRejected(DRIFT, f"the new version lost {', '.join(lost)} against the "
                                   f"served one ({_digest_tag(raw_digest)}); the previous "
                                   "version keeps serving until a reviewer releases this")
