"""The PDF copy of an original: kept pages only, nothing of the document around them.

:func:`page_copy` writes a new PDF of the pages kept, each stripped to what draws it
(contents, resources, boxes, rotation): no annotations (links, comments, form widgets),
no thumbnails, no page metadata. Nothing of the document level comes along: document
information, XMP metadata, outline, form fields, attachments, scripts, earlier
revisions are all left behind, since the writer starts from an empty document.

A kept page can still draw text of a page it lost: a form XObject, a tiling pattern or a
Type 3 glyph shared between pages, or merely listed in resources that pages share,
travels with every page that lists it. So the copy is read back, and every text it can
draw or holds as a string is compared with the text the caller may not read (the hidden
chunks, the withheld titles and headings); a match that the caller could not read anyway
in a readable chunk refuses the copy (:class:`CopyRefused`). Any failure to read it back
refuses it too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from io import BytesIO
from typing import Any

from pypdf import PdfReader, PdfWriter, apply_configuration
from pypdf.generic import DictionaryObject, NameObject, StreamObject

from affidavit.extract.dropped import PDF_KINDS, PDF_XOBJECT_TEXT
from affidavit.extract.pdf_objects import drawable_streams, resolved, stream_text, strings_under

COPY_REMOVES = PDF_KINDS - {PDF_XOBJECT_TEXT}
"""Dropped kinds the copy leaves behind. XObject text is drawn by the pages themselves."""

_PAGE_KEYS = frozenset({"/Type", "/Parent", "/Resources", "/Contents", "/MediaBox",
                        "/CropBox", "/BleedBox", "/TrimBox", "/ArtBox", "/Rotate",
                        "/UserUnit", "/Group"})
_WORD = re.compile(r"\w+")
WINDOW = 8
"""Words compared at a time: a hidden line of up to this many words, or each run of this
many words of a longer one, found in the copy and in no readable chunk refuses it."""
_GLUED_MIN = 12


class CopyRefused(Exception):
    """The kept pages may carry text the caller may not read, or could not be checked."""


def page_copy(content: bytes, removed: set[int], *, hidden: Sequence[str],
              readable: Sequence[str], caps: dict[str, Any]) -> bytes:
    """``content`` without the pages in ``removed`` (1-based) nor anything around the
    pages; CopyRefused when a kept page may draw or hold text of ``hidden`` that is not
    in ``readable``. ``caps`` are the ``pypdf`` resource caps of the extractor."""
    try:
        with apply_configuration(**caps):
            copy = _write(content, removed)
            surface = _surface(copy)
    except CopyRefused:
        raise
    except Exception as exc:  # what cannot be read back cannot be vouched for
        raise CopyRefused(f"the copy could not be checked: {type(exc).__name__}") from exc
    if carries_hidden_text(surface, hidden=hidden, readable=readable):
        raise CopyRefused("a kept page carries text the caller may not read")
    return copy


def page_count(content: bytes, caps: dict[str, Any]) -> int:
    """The pages of ``content``; CopyRefused when it cannot be read."""
    try:
        with apply_configuration(**caps):
            return len(PdfReader(BytesIO(content), strict=False).pages)
    except Exception as exc:  # a file the extractor read once; now it does not
        raise CopyRefused(f"the pages could not be counted: {type(exc).__name__}") from exc


def _write(content: bytes, removed: set[int]) -> bytes:
    reader = PdfReader(BytesIO(content), strict=False)
    writer = PdfWriter()
    for number, page in enumerate(reader.pages, start=1):
        if number in removed:
            continue
        for key in [k for k in page if k not in _PAGE_KEYS]:
            del page[NameObject(key)]
        writer.add_page(page)
    writer.metadata = None
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def _surface(copy: bytes) -> list[str]:
    """Every text the copy's pages draw (page by page and stream by stream, followed as
    far as ``pypdf`` follows them) and every string or metadata stream it holds."""
    reader = PdfReader(BytesIO(copy), strict=False)
    texts: list[str] = []
    seen: set[int] = set()
    for page in reader.pages:
        texts.append(page.extract_text())
        texts.append(page.extract_text(extraction_mode="layout"))
        texts += [stream_text(s, r) for s, r in drawable_streams(page.get("/Resources"), seen)]
    root = reader.trailer["/Root"]
    texts += strings_under(root)
    texts += _metadata_streams(root)
    return texts


def _metadata_streams(root: object) -> list[str]:
    """XML streams (XMP metadata of an XObject, say) anywhere in the copy."""
    found: list[str] = []
    seen: set[int] = set()
    pending = [root]
    while pending:
        current = resolved(pending.pop())
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, StreamObject) and (current.get("/Type") == "/Metadata"
                                                  or current.get("/Subtype") == "/XML"):
            found.append(current.get_data().decode("utf-8", errors="replace"))
        if isinstance(current, DictionaryObject):
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
    return found


def carries_hidden_text(surface: Iterable[str], *, hidden: Iterable[str],
                        readable: Iterable[str]) -> bool:
    """Whether some line of ``hidden`` (or run of :data:`WINDOW` words of one) occurs in
    ``surface`` without occurring in ``readable``. Words are compared case-folded, so
    spacing and line breaks do not hide a match; a long line is also compared with its
    spaces removed, as text extraction may glue words."""
    surface_words = [_words(text) for text in surface]
    readable_words = [_words(text) for text in readable]
    in_surface, in_readable = _grams(surface_words), _grams(readable_words)
    glued_surface = "\x00".join("".join(words) for words in surface_words)
    glued_readable = "\x00".join("".join(words) for words in readable_words)
    for line in _lines(hidden):
        if any(unit in in_surface and unit not in in_readable for unit in _units(line)):
            return True
        glued = "".join(line)
        if (len(glued) >= _GLUED_MIN and glued in glued_surface
                and glued not in glued_readable):
            return True
    return False


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _lines(texts: Iterable[str]) -> Iterable[list[str]]:
    for text in texts:
        for line in text.split("\n"):
            words = _words(line)
            if words:
                yield words


def _units(words: list[str]) -> list[tuple[str, ...]]:
    if len(words) <= WINDOW:
        return [tuple(words)]
    return [tuple(words[i : i + WINDOW]) for i in range(len(words) - WINDOW + 1)]


def _grams(texts: list[list[str]]) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for words in texts:
        for size in range(1, WINDOW + 1):
            grams.update(tuple(words[i : i + size]) for i in range(len(words) - size + 1))
    return grams
