"""The document reader (spec 004, layers 2 and 3): a document as one caller may read it.

Layer 2, :func:`read_document`: the document's head chunks in reading order. A chunk the
caller may read shows its text; one whose label the caller is not granted shows a
placeholder naming the label ("Content requires FINANCIAL clearance"). Titles, headings and
locators follow the derived-text rule of every other surface
(:func:`affidavit.classify.derived.shown_to`). The view is an extraction, and says so.

Layer 3, :func:`original_file`: the stored bytes from the blob plane, only when the caller
may read every chunk; for a PDF, a copy without the pages that hold any chunk the caller
may not read. A document of which the caller may read nothing, of another tenant, or that
does not exist, reads the same: :class:`~affidavit.errors.NotFound`.

Readable chunks are read back through the store's authorization filter with the caller's
own context. The outline of the others (label, place, headings) is read with the caller's
document access but every label admitted; their bodies are dropped here, never returned.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pypdf import PdfReader, PdfWriter
from pypdf.generic import NameObject

from affidavit.classify.derived import shown_to
from affidavit.errors import AuthorizationError, NotFound
from affidavit.query import Engine
from affidavit.records import AuthzContext
from affidavit.store.base import ChunkRecord

EXTRACTION_NOTICE = ("Platform extraction: an interpretation of the original, not the "
                     "original. Open the original for the authoritative version.")
PDF_MAGIC = b"%PDF-"


def placeholder(label: str) -> str:
    """What stands in for a chunk the caller is not cleared for: it names the label only."""
    return f"Content requires {label} clearance"


class OriginalWithheld(AuthorizationError):
    """The document is readable in part, so its original file is not served."""


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
class OriginalFile:
    """Layer 3: the bytes to serve, and the PDF pages (1-based) removed from them."""

    doc_id: str
    content: bytes
    media_type: str
    removed_pages: tuple[int, ...] = ()

    @property
    def filename(self) -> str:
        # The stored path is derived text with its own label: the id names the download.
        return self.doc_id + (".pdf" if self.media_type == "application/pdf" else "")


@dataclass(frozen=True)
class _Outline:
    """The caller's readable records and the outline records of the document, in order."""

    version_id: str
    readable: dict[str, ChunkRecord]
    outline: list[ChunkRecord]
    # head chunks neither readable nor outlined (no document access, a stale label)
    unseen: int


def read_document(engine: Engine, principal: str | None, doc_id: str) -> DocumentView:
    """The reader's view of ``doc_id`` for ``principal``; NotFound when nothing is readable."""
    authz = engine.authz_context(principal)
    outline = _outline(engine, authz, doc_id)
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


def original_file(engine: Engine, principal: str | None, doc_id: str) -> OriginalFile:
    """The original bytes of ``doc_id`` as far as ``principal`` may have them.

    NotFound as for :func:`read_document`; OriginalWithheld when part of the document is
    unreadable and no page-level copy can leave that part out.
    """
    authz = engine.authz_context(principal)
    outline = _outline(engine, authz, doc_id)
    head = engine.store.head(engine.tenant, doc_id)
    blob = engine.store.blob(engine.tenant, head.raw_digest) if head is not None else None
    if head is None or blob is None or head.version_id != outline.version_id:
        # The head moved while reading: what was checked is not what would be served.
        raise NotFound(f"no document {doc_id} that you may read")
    is_pdf = blob.content.startswith(PDF_MAGIC)
    media_type = "application/pdf" if is_pdf else "application/octet-stream"
    hidden = [r for r in outline.outline if r.chunk.chunk_id not in outline.readable]
    if not hidden and not outline.unseen:
        return OriginalFile(doc_id, blob.content, media_type)
    if not is_pdf or outline.unseen:
        raise OriginalWithheld("the original holds content you are not cleared for; "
                               "the document reader shows what you may read")
    pages = _page_count(blob.content)
    removed = _pages_holding(hidden, outline.outline, pages)
    if len(removed) >= pages:
        raise OriginalWithheld("every page of the original holds content you are not "
                               "cleared for")
    return OriginalFile(doc_id, _without_pages(blob.content, removed), media_type,
                        tuple(sorted(removed)))


def _outline(engine: Engine, authz: AuthzContext, doc_id: str) -> _Outline:
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
    return _Outline(versions.pop(), readable, outlined, len(set(ids)) - len(outlined))


def _pages_holding(hidden: Sequence[ChunkRecord], ordered: Sequence[ChunkRecord],
                   pages: int) -> set[int]:
    """Every page a hidden chunk may touch. A chunk records the page it starts on; it can
    run on to the page where the next chunk starts (the last one to the end), so all of
    those pages go. A hidden chunk without a page withholds the whole file."""
    starts = [r.chunk.derived.page if r.chunk.derived is not None else None for r in ordered]
    position = {r.chunk.chunk_id: i for i, r in enumerate(ordered)}
    removed: set[int] = set()
    for record in hidden:
        i = position[record.chunk.chunk_id]
        first = starts[i]
        if first is None:
            raise OriginalWithheld("the original holds content you are not cleared for")
        following = next((p for p in starts[i + 1:] if p is not None), None)
        last = pages if following is None else following
        removed.update(range(first, min(last, pages) + 1))
    return removed


def _page_count(content: bytes) -> int:
    return len(PdfReader(io.BytesIO(content)).pages)


def _without_pages(content: bytes, removed: set[int]) -> bytes:
    """A copy of the PDF without ``removed`` (1-based). Kept pages lose their annotations:
    a link annotation can reference a removed page, and copying it would copy that page.
    The document information (title, author) is not copied either."""
    reader = PdfReader(io.BytesIO(content))
    writer = PdfWriter()
    for number, page in enumerate(reader.pages, start=1):
        if number in removed:
            continue
        for key in ("/Annots", "/B"):
            if NameObject(key) in page:
                del page[NameObject(key)]
        writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
