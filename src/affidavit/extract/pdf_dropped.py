"""What a PDF holds beyond the text layer its pages give, by kind, for labelling.

Used by :mod:`affidavit.extract.pdf`. Read for their text: the document information,
XMP metadata, the outline (bookmarks), annotations, form fields, and the text of every
form XObject, tiling pattern and Type 3 glyph procedure a page's resources reach (the
layout-mode page text does not follow them). Not readable, hence unclassified: attached
files, scripts and other name trees, XFA forms, and the earlier revisions an incremental
update leaves in the file. Anything that fails to read is unclassified too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pypdf import PageObject, PdfReader
from pypdf.generic import DictionaryObject, StreamObject

from affidavit.extract.dropped import (
    PDF_ANNOTATION,
    PDF_ATTACHMENT,
    PDF_EARLIER_REVISION,
    PDF_FORM_FIELD,
    PDF_INFO,
    PDF_NAMES,
    PDF_OUTLINE,
    PDF_XMP,
    PDF_XOBJECT_TEXT,
    DroppedCollector,
)
from affidavit.extract.pdf_objects import drawable_streams, resolved, stream_text, strings_under
from affidavit.records import DroppedContent

# Keys of an annotation or a field that point back into the page tree or at other fields
# and pages: followed, they would reach the whole document.
_BACK_REFERENCES = frozenset({"/P", "/Parent", "/Kids", "/Dest", "/Popup", "/IRT", "/D"})
_OUTLINE_SKIP = frozenset({"/Parent", "/Prev", "/Last", "/Dest", "/A", "/SE"})


def dropped_content(reader: PdfReader, pages: Sequence[PageObject],
                    content: bytes) -> tuple[DroppedContent, ...]:
    """Dropped content of the document ``reader`` reads (``pages`` its pages)."""
    dropped = DroppedCollector()
    root = reader.root_object
    _read(dropped, PDF_INFO, lambda: strings_under(reader.trailer.get("/Info")))
    _read(dropped, PDF_XMP, lambda: _xmp(root, pages))
    _read(dropped, PDF_OUTLINE, lambda: strings_under(root.get("/Outlines"),
                                                       skip=_OUTLINE_SKIP))
    _read(dropped, PDF_ANNOTATION, lambda: _annotations(pages, dropped))
    _read(dropped, PDF_FORM_FIELD, lambda: _form_fields(root, dropped))
    _read(dropped, PDF_XOBJECT_TEXT, lambda: _drawable_text(pages))
    names = resolved(root.get("/Names"))
    if isinstance(names, DictionaryObject):
        for key in names:
            dropped.add_unread(PDF_ATTACHMENT if key == "/EmbeddedFiles" else PDF_NAMES)
    if _earlier_revisions(reader, content):
        dropped.add_unread(PDF_EARLIER_REVISION)
    return dropped.entries()


def _read(dropped: DroppedCollector, kind: str, texts: Callable[[], list[str]]) -> None:
    try:
        found = texts()
    except Exception:  # a broken part of a readable document: what it holds is unknown
        dropped.add_unread(kind)
        return
    for text in found:
        dropped.add(kind, text)


def _xmp(root: DictionaryObject, pages: Sequence[PageObject]) -> list[str]:
    texts = []
    for owner in (root, *pages):
        stream = resolved(owner.get("/Metadata"))
        if isinstance(stream, StreamObject):
            texts.append(stream.get_data().decode("utf-8", errors="replace"))
    return texts


def _annotations(pages: Sequence[PageObject], dropped: DroppedCollector) -> list[str]:
    texts: list[str] = []
    for page in pages:
        annotations = resolved(page.get("/Annots"))
        for value in annotations if isinstance(annotations, list) else ():
            annotation = resolved(value)
            if not isinstance(annotation, DictionaryObject):
                continue
            if annotation.get("/Subtype") == "/FileAttachment" or "/FS" in annotation:
                dropped.add_unread(PDF_ATTACHMENT)
            texts += strings_under(annotation, skip=_BACK_REFERENCES | {"/AP"})
            texts += _appearance_text(annotation)
    return texts


def _appearance_text(owner: DictionaryObject) -> list[str]:
    """What the appearance streams of an annotation or a field draw."""
    appearances = resolved(owner.get("/AP"))
    if not isinstance(appearances, DictionaryObject):
        return []
    texts = []
    for state in appearances.values():
        state = resolved(state)
        streams = list(state.values()) if isinstance(state, DictionaryObject) else [state]
        for value in streams:
            stream = resolved(value)
            if isinstance(stream, StreamObject):
                resources = resolved(stream.get("/Resources")) or DictionaryObject()
                texts.append(stream_text(stream, resources))
                texts += [stream_text(s, r) for s, r in drawable_streams(resources)]
    return texts


def _form_fields(root: DictionaryObject, dropped: DroppedCollector) -> list[str]:
    form = resolved(root.get("/AcroForm"))
    if not isinstance(form, DictionaryObject):
        return []
    if "/XFA" in form:
        dropped.add_unread(PDF_FORM_FIELD)
    texts = strings_under(form.get("/Fields"), skip=frozenset({"/P", "/Parent", "/AP"}))
    return texts + strings_under(form.get("/DR"))


def _drawable_text(pages: Sequence[PageObject]) -> list[str]:
    seen: set[int] = set()
    return [stream_text(stream, resources)
            for page in pages
            for stream, resources in drawable_streams(page.get("/Resources"), seen)]


def _earlier_revisions(reader: PdfReader, content: bytes) -> bool:
    """An incremental update keeps every earlier revision's objects in the file. A
    linearized file has two sections by design, which is not an earlier revision."""
    sections = content.count(b"%%EOF")
    linearized = b"/Linearized" in content[:1024]
    return sections > (2 if linearized else 1) or (
        "/Prev" in reader.trailer and not linearized)
