"""The document reader (spec 004, layer 2): a document as one caller may read it.

Layer 2, :func:`read_document`: the document's head chunks in reading order. A chunk the
caller may read shows its text; one whose label the caller is not granted shows a
placeholder naming the label ("Content requires FINANCIAL clearance"). Titles, headings and
locators follow the derived-text rule of every other surface
(:func:`affidavit.policy.derived.shown_to`). The view is an extraction, and says so.
Layer 3, the original file, is :mod:`affidavit.engine.original`. A document of which the caller
may read nothing, of another tenant, or that does not exist, reads the same:
:class:`~affidavit.errors.NotFound`.

Readable chunks are read back through the store's authorization filter with the caller's
own context. The outline of the others (label, place, headings) is read with the caller's
document access but every label admitted; their bodies are dropped here, never returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from affidavit.engine.query import Engine
from affidavit.errors import NotFound
from affidavit.policy.derived import shown_to
from affidavit.records import AuthzContext
from affidavit.store.protocol import ChunkRecord

EXTRACTION_NOTICE = ("Platform extraction: an interpretation of the original, not the "
                     "original. Open the original for the authoritative version.")


def placeholder(label: str) -> str:
    """What stands in for a chunk the caller is not cleared for: it names the label only."""
    return f"Content requires {label} clearance"


@dataclass(frozen=True)
class ReaderSection:
    """One chunk of the document as the caller sees it."""

    ordinal: int
    readable: bool
    label: str
    text: str
    heading_path: tuple[str, ...]
    locator: str
    page: int | None
    chunk_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"ordinal": self.ordinal, "readable": self.readable, "label": self.label,
                "text": self.text, "heading_path": list(self.heading_path),
                "locator": self.locator, "page": self.page, "chunk_id": self.chunk_id}


@dataclass(frozen=True)
class DocumentView:
    """Layer 2: the document's sections, readable text or placeholders, in order."""

    doc_id: str
    version_id: str
    title: str
    source_id: str
    sections: tuple[ReaderSection, ...]
    notice: str = EXTRACTION_NOTICE
    extraction: bool = True
    withheld_labels: tuple[str, ...] = field(default=())

    @property
    def complete(self) -> bool:
        return all(section.readable for section in self.sections)

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "version_id": self.version_id, "title": self.title,
                "source_id": self.source_id, "extraction": self.extraction,
                "notice": self.notice, "complete": self.complete,
                "withheld_labels": list(self.withheld_labels),
                "sections": [section.to_dict() for section in self.sections]}


@dataclass(frozen=True)
class DocumentOutline:
    """The caller's readable records and the outline records of the document, in order."""

    version_id: str
    readable: dict[str, ChunkRecord]
    outline: list[ChunkRecord]
    # head chunks neither readable nor outlined (no document access, a stale label)
    unseen: int


def read_document(engine: Engine, principal: str | None, doc_id: str) -> DocumentView:
    """The reader's view of ``doc_id`` for ``principal``; NotFound when nothing is readable."""
    authz = engine.authz_context(principal)
    outline = document_outline(engine, authz, doc_id)
    sections: list[ReaderSection] = []
    for record in outline.outline:
        shown = shown_to(record.chunk, authz.granted_labels)
        readable = outline.readable.get(shown.chunk_id)
        page = shown.derived.page if shown.derived is not None else None
        if readable is not None:
            chunk = readable.chunk
            sections.append(ReaderSection(chunk.ordinal, True, chunk.label, chunk.text,
                                          chunk.heading_path, chunk.locator, page,
                                          chunk.chunk_id))
        else:
            sections.append(ReaderSection(shown.ordinal, False, shown.label,
                                          placeholder(shown.label), shown.heading_path,
                                          shown.locator, page))
    first = next(iter(outline.readable.values()))
    withheld = sorted({s.label for s in sections if not s.readable})
    return DocumentView(doc_id, outline.version_id, first.title, first.source_id,
                        tuple(sections), withheld_labels=tuple(withheld))


def document_outline(engine: Engine, authz: AuthzContext, doc_id: str) -> DocumentOutline:
    """The caller's readable chunks of ``doc_id`` and the bodiless outline of all its head
    chunks; NotFound when none is readable or they belong to more than one version."""
    ids = engine.store.document_chunk_ids(engine.tenant, doc_id)
    readable = {r.chunk.chunk_id: r for r in engine.store.get_chunks(authz, ids)}
    if not readable:
        raise NotFound(f"no document {doc_id} that you may read")
    # The caller's document access with every label admitted: which chunks exist for it
    # and where. Their bodies are replaced at once; only label, place and headings stay.
    every_label = replace(authz, granted_labels=frozenset(engine.settings.sensitivity.labels))
    outlined = [replace(r, chunk=replace(r.chunk, text=""))
                for r in engine.store.get_chunks(every_label, ids)]
    outlined.sort(key=lambda r: (r.chunk.ordinal, r.chunk.chunk_id))
    versions = {r.chunk.version_id for r in outlined}
    if len(versions) != 1:
        raise NotFound(f"no document {doc_id} that you may read")
    return DocumentOutline(versions.pop(), readable, outlined, len(set(ids)) - len(outlined))
