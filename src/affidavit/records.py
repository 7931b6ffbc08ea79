"""Frozen values shared by every stage of the pipeline.

Stages pass these between each other; none of them does I/O. Hashing helpers live here so
that every identifier in the system is derived the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from affidavit.errors import InputRejected

SCHEMA_VERSION = "2"
"""Version of the derived-artifact schema; part of every witness.

2: chunks carry the labels of their title, source path and headings.
"""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stable_hash(*parts: str) -> str:
    """Hash of several strings with unambiguous separation (length-prefixed)."""
    h = hashlib.sha256()
    for part in parts:
        encoded = part.encode("utf-8")
        h.update(len(encoded).to_bytes(8, "big"))
        h.update(encoded)
    return h.hexdigest()


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: same value, same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def node_id_for(source_system: str, source_id: str) -> str:
    """Identity of one logical document: H(source_system, immutable_source_id)."""
    return stable_hash("node", source_system, source_id)[:32]


# --------------------------------------------------------------------------- ingestion


@dataclass(frozen=True)
class DocumentMetadata:
    """What a source or sidecar declares about a document. All fields optional."""

    source_id: str | None = None
    title: str | None = None
    acl: tuple[str, ...] | None = None
    classification: str | None = None
    oracle_id: str | None = None
    frameworks: tuple[str, ...] = ()
    # (page, mean word confidence 0-100) of every page read by OCR; set by the PDF
    # extractor, never by a source (affidavit.extract.ocr)
    ocr_confidence: tuple[tuple[int, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        declared: dict[str, Any] = {
            "source_id": self.source_id,
            "title": self.title,
            "acl": list(self.acl) if self.acl is not None else None,
            "classification": self.classification,
            "oracle_id": self.oracle_id,
            "frameworks": list(self.frameworks),
        }
        if self.ocr_confidence:  # absent otherwise: versions without OCR keep their bytes
            declared["ocr_confidence"] = [list(entry) for entry in self.ocr_confidence]
        return declared

    def merged_over(self, base: DocumentMetadata) -> DocumentMetadata:
        """Fields set here win over ``base`` (front matter over sidecar, for example)."""
        return DocumentMetadata(
            source_id=self.source_id if self.source_id is not None else base.source_id,
            title=self.title if self.title is not None else base.title,
            acl=self.acl if self.acl is not None else base.acl,
            classification=(
                self.classification if self.classification is not None else base.classification
            ),
            oracle_id=self.oracle_id if self.oracle_id is not None else base.oracle_id,
            frameworks=self.frameworks or base.frameworks,
            ocr_confidence=self.ocr_confidence or base.ocr_confidence,
        )


@dataclass(frozen=True)
class SourceDocument:
    """One document as a transport yields it: untrusted bytes plus declared metadata.

    ``alias`` is the human-facing path or URL (an alias, never the identity).
    ``rejection`` is set by the transport when it already knows the document must be
    quarantined (sidecar unreadable, over the size cap, ...): ``(reason_code, message)``.
    The document is then never parsed, and never ingested with the wrong permissions.
    """

    source_system: str
    source_id: str
    source_rev: str
    content: bytes
    alias: str
    metadata: DocumentMetadata = field(default_factory=DocumentMetadata)
    rejection: tuple[str, str] | None = None


@dataclass(frozen=True)
class RawBlob:
    raw_digest: str
    content: bytes
    source_system: str
    source_id: str
    source_rev: str
    fetched_at: str


@dataclass(frozen=True)
class Paragraph:
    """A block of the normalized text: ``text[start:end]``.

    ``kind`` is one of heading, paragraph, list, table, code, quote, record.
    ``heading_path`` is the chain of headings above it (outermost first).
    """

    index: int
    start: int
    end: int
    kind: str
    heading_path: tuple[str, ...] = ()
    page: int | None = None


@dataclass(frozen=True)
class DroppedContent:
    """Content of the file that the normalized text leaves out (a comment, a deleted run,
    document information, an attachment), one entry per kind.

    ``text`` is what it says, for classification, when the parser could read it; None when
    it could not (an attachment, text past the cap): such content counts as the most
    severe label (:mod:`affidavit.policy.dropped`). The text is never stored.
    """

    kind: str
    text: str | None


@dataclass(frozen=True)
class ExtractedDocument:
    """Output of a parser: normalized text, its paragraph map and what the body declared.

    ``dropped`` is what the file holds beyond the text: what its original carries too.
    """

    text: str
    paragraphs: tuple[Paragraph, ...]
    format: str
    title: str | None = None
    metadata: DocumentMetadata = field(default_factory=DocumentMetadata)
    links: tuple[str, ...] = ()
    dropped: tuple[DroppedContent, ...] = ()

    def paragraph_text(self, paragraph: Paragraph) -> str:
        return self.text[paragraph.start : paragraph.end]


@dataclass(frozen=True)
class ParagraphLabel:
    """The sensitivity label one paragraph received and every signal that contributed."""

    index: int
    label: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Segment:
    """Adjacent paragraphs with one label: paragraphs ``[first, last]`` inclusive."""

    label: str
    first: int
    last: int
    start: int
    end: int


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk before it has an identity: a contiguous span of the normalized text."""

    ordinal: int
    start: int
    end: int
    text: str
    label: str
    heading_path: tuple[str, ...] = ()
    page: int | None = None


@dataclass(frozen=True)
class DerivedText:
    """The strings shown beside a chunk's body, each with its own label.

    ``title`` and ``alias`` are its document's title and source path; the heading strings
    are the chunk's ``heading_path``, labelled one by one in ``heading_labels``. A label of
    None is unknown and is never shown (see :mod:`affidavit.policy.derived`).
    ``withheld`` names what a view of it replaced by stand-ins: title, alias, headings.
    """

    title: str
    title_label: str | None
    alias: str
    alias_label: str | None
    heading_labels: tuple[str | None, ...]
    page: int | None = None
    withheld: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Chunk:
    """A retrievable unit. Its text is ``document.text[start:end]``; one label, always.

    ``label`` is the body's; ``derived`` labels the title, path and headings shown with it.
    """

    chunk_id: str
    node_id: str
    version_id: str
    ordinal: int
    start: int
    end: int
    text: str
    label: str
    heading_path: tuple[str, ...]
    locator: str
    witness: str
    derived: DerivedText | None = None

    @property
    def src(self) -> str:
        """The short citation tag used in prompts: ``[src:<first 8 hex>]``."""
        return self.chunk_id[:8]


@dataclass(frozen=True)
class SireTuple:
    """Spec 003 identity of a document version: (Subject, Included, Relevant, Excluded).

    Its terms are derived text: ``term_labels`` gives each term the most severe label of
    what it was derived from and ``subject_label`` the Subject's (see
    :mod:`affidavit.identity.sire_labels`). A term without a label is never shown to a
    reader.
    """

    subject: str
    included: tuple[str, ...]
    relevant: tuple[str, ...]
    excluded: tuple[str, ...]
    term_labels: tuple[tuple[str, str], ...] = ()
    subject_label: str | None = None

    def label_of(self, term: str) -> str | None:
        """The label ``term`` carries, or None when it carries none."""
        return dict(self.term_labels).get(term)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "subject": self.subject,
            "included": list(self.included),
            "relevant": list(self.relevant),
            "excluded": list(self.excluded),
        }
        if self.term_labels:
            data["term_labels"] = dict(self.term_labels)
        if self.subject_label is not None:
            data["subject_label"] = self.subject_label
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SireTuple:
        labels = data.get("term_labels") or {}
        subject_label = data.get("subject_label")
        return cls(
            subject=str(data["subject"]),
            included=tuple(data["included"]),
            relevant=tuple(data["relevant"]),
            excluded=tuple(data["excluded"]),
            term_labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
            subject_label=None if subject_label is None else str(subject_label),
        )


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class AuthzContext:
    """Everything retrieval needs to know about who is asking, computed once per request.

    ``tokens`` are the ACL tokens that admit this principal (itself, its groups, the
    tenant-wide token); ``granted_labels`` are the labels it may read (PUBLIC always).
    """

    tenant: str
    principal: str
    tokens: frozenset[str]
    granted_labels: frozenset[str]
    policy_version: str
    # The epochs the reader is served under (index.epochs.serving_epoch: the sensitivity
    # policy and the rest of the witness family): when set, only chunks derived under them
    # are admitted (a chunk derived under older ones may carry a stale label or identity).
    label_epoch: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "tenant": self.tenant,
            "principal": self.principal,
            "tokens": sorted(self.tokens),
            "granted_labels": sorted(self.granted_labels),
            "policy_version": self.policy_version,
        }
        if self.label_epoch is not None:
            data["label_epoch"] = self.label_epoch
        return data


@dataclass(frozen=True)
class ScoredChunk:
    """A chunk the caller may see, with its retrieval scores and document facts."""

    chunk: Chunk
    title: str
    doc_source_id: str
    score: float
    lexical_rank: int | None = None
    lexical_score: float | None = None
    sire_active: bool = False


def ordered_unique(items: Sequence[str]) -> tuple[str, ...]:
    """Items in first-seen order without repeats."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return tuple(out)


# --------------------------------------------------------------------------- references
# The Reference: a typed link between a document (or a ledger record) and a document.
#
# Kinds and location types follow spec 004. A reference's ``classification`` is the most
# severe label of what the link itself was derived from (both ends); the store filters on it
# inside the query, and :mod:`affidavit.references.access` checks that the reader may read
# both ends before any reference leaves. The text written with it (its label, reason and
# location detail) carries a label of its own, ``text_label``, found by the same detectors as
# a paragraph: a reader not granted that label sees the reference with that text withheld
# (:meth:`Reference.shown_to`), and a search never matches text its reader may not see.

CITATION = "Citation"
SOFT_KINDS = ("CrossReference", "DerivedFrom", "Supersedes", "BuildsOn", "Contradicts",
              "UpdateOf", "SupportedBy", "Bookmark")
KINDS = (CITATION, *SOFT_KINDS)
LOCATION_TYPES = ("Page", "Section", "Chunk")

DOCUMENT = "document"
LEDGER_RECORD = "ledger"

LABEL_CHARS = 100
"""A citation's label: the first characters of the cited text (spec 004)."""

LABEL_WITHHELD = "[label withheld]"
REASON_WITHHELD = "[reason withheld]"
"""Stand-ins (PUBLIC) for a reference's text whose label the reader is not granted."""

DIRECTIONS = ("in", "out", "both")


@dataclass(frozen=True)
class Reference:
    """One stored reference. ``source_type`` is ``document`` or ``ledger`` (a citation's
    answer record); the target is always a document, ``target_chunk_id`` narrowing it.
    ``text_label`` labels ``label``, ``reason`` and ``location_detail`` (None: unknown, so
    any of that text is never shown)."""

    ref_id: str
    kind: str
    source_type: str
    source_id: str
    target_id: str
    target_chunk_id: str | None
    location_type: str | None
    location_detail: str
    label: str
    reason: str
    classification: str
    created_by: str
    created_at: str
    text_label: str | None = None

    def shown_to(self, granted: Collection[str]) -> Reference:
        """This reference as a reader granted ``granted`` may see it: its own text replaced
        by stand-ins unless its label is granted (empty text has nothing to withhold)."""
        if self.text_label is not None and self.text_label in granted:
            return self
        return replace(
            self, label=LABEL_WITHHELD if self.label else "",
            reason=REASON_WITHHELD if self.reason else "",
            location_detail="{}", text_label=None)

    def to_dict(self) -> dict[str, Any]:
        return {"ref_id": self.ref_id, "kind": self.kind, "source_type": self.source_type,
                "source_id": self.source_id, "target_id": self.target_id,
                "target_chunk_id": self.target_chunk_id, "location_type": self.location_type,
                "location_detail": json.loads(self.location_detail or "{}"),
                "label": self.label, "reason": self.reason,
                "classification": self.classification, "created_by": self.created_by,
                "created_at": self.created_at}

    def row(self) -> tuple[object, ...]:
        """The stored columns, in :data:`REFERENCE_COLUMNS` order."""
        return (self.ref_id, self.kind, self.source_type, self.source_id, self.target_id,
                self.target_chunk_id, self.location_type, self.location_detail, self.label,
                self.reason, self.classification, self.created_by, self.created_at,
                self.text_label)

    def other_end(self, node_id: str) -> str | None:
        """The document at the other end from ``node_id`` (None for a citation's record)."""
        if self.source_type == DOCUMENT and self.target_id == node_id:
            return self.source_id
        if self.source_type == DOCUMENT and self.source_id == node_id:
            return self.target_id
        return None


REFERENCE_COLUMNS = ("ref_id, kind, source_type, source_id, target_id, target_chunk_id, "
                     "location_type, location_detail, label, reason, classification, "
                     "created_by, created_at, text_label")


def reference_from_row(row: tuple[object, ...] | Any) -> Reference:
    values = [None if v is None else str(v) for v in row]
    return Reference(
        ref_id=str(values[0]), kind=str(values[1]), source_type=str(values[2]),
        source_id=str(values[3]), target_id=str(values[4]), target_chunk_id=values[5],
        location_type=values[6], location_detail=str(values[7] or "{}"),
        label=str(values[8]), reason=str(values[9]), classification=str(values[10]),
        created_by=str(values[11]), created_at=str(values[12]), text_label=values[13])


def checked_kind(kind: str, *, soft: bool = True) -> str:
    """``kind`` spelled as stored; a citation is made only by the answer path."""
    allowed = SOFT_KINDS if soft else KINDS
    for name in allowed:
        if name.casefold() == kind.strip().casefold():
            return name
    raise InputRejected("REFERENCE_KIND",
                        f"unknown reference kind {kind!r}; one of {', '.join(allowed)}")


def checked_location(location_type: str | None) -> str | None:
    if location_type is None or not location_type.strip():
        return None
    for name in LOCATION_TYPES:
        if name.casefold() == location_type.strip().casefold():
            return name
    raise InputRejected("REFERENCE_LOCATION",
                        f"unknown location type {location_type!r}; one of "
                        f"{', '.join(LOCATION_TYPES)}")


def checked_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise InputRejected("REFERENCE_DIRECTION",
                            f"direction must be one of {', '.join(DIRECTIONS)}")
    return direction
