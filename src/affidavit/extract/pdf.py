"""PDF: the text layer of every page, in paragraphs that remember their page number.

Read with ``pypdf``, whose resource caps are set from the ingest settings for the length
of one parse: every decompression filter (and the work of a whole filter chain) may
produce at most ``max_decompressed_bytes`` per stream, and no more than
``max_compression_ratio`` times the document's size; the page tree may not hold more than
about ``max_pages`` pages nor nest deeper than ``max_nesting_depth``; no external decoder
program is ever run. A cycle in the page tree is detected by ``pypdf`` and refused.

Text comes from ``pypdf``'s layout mode, which keeps vertical gaps as blank lines: blank
lines separate paragraphs, line breaks inside a paragraph are kept, runs of spaces that
only position text on the page become one space. Two-column pages therefore read across
both columns line by line. Each paragraph carries its page number, so locators read
``p. N``. The title is the document information title, or the first short line.
What the text layer leaves out (document information, outline, annotations, form fields,
attachments, form XObject text) is recorded for labelling (:mod:`.pdf_dropped`).

Refusals: ``ENCRYPTED_PDF`` (no password is ever tried, not even the empty one),
``TOO_MANY_PAGES``, ``NO_TEXT_LAYER`` (pages without text, as in a scan, unless OCR
reads them: :mod:`.ocr`, which adds its own reasons),
``EMPTY_DOCUMENT`` (no pages), ``PDF_LIMIT_EXCEEDED`` (a ``pypdf`` resource cap) and
``MALFORMED_PDF`` (anything else ``pypdf`` cannot read).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from io import BytesIO
from typing import Any

from pypdf import PageObject, PdfReader, apply_configuration
from pypdf.errors import LimitReachedError, PyPdfError

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract.archive import RATIO_FLOOR_BYTES
from affidavit.extract.decode import EMPTY_DOCUMENT
from affidavit.extract.layout import PARAGRAPH, RenderedText
from affidavit.extract.ocr import NO_TEXT_LAYER, read_scanned
from affidavit.extract.pdf_dropped import dropped_content
from affidavit.records import DocumentMetadata, ExtractedDocument, ordered_unique

ENCRYPTED_PDF = "ENCRYPTED_PDF"
TOO_MANY_PAGES = "TOO_MANY_PAGES"
PDF_LIMIT_EXCEEDED = "PDF_LIMIT_EXCEEDED"
MALFORMED_PDF = "MALFORMED_PDF"

REASON_CODES = (ENCRYPTED_PDF, MALFORMED_PDF, NO_TEXT_LAYER, PDF_LIMIT_EXCEEDED, TOO_MANY_PAGES)
"""Every reason code specific to PDF documents with OCR off (OCR's own: ``ocr.REASON_CODES``)."""

MAX_TITLE_CHARS = 120
_MAX_LINKS_PER_PAGE = 1000


class PdfParser:
    """Parser for ``.pdf`` files; reads bytes, not text."""

    formats: tuple[str, ...] = (".pdf",)

    def parse_bytes(self, content: bytes, *, limits: IngestSettings) -> ExtractedDocument:
        """Paragraphs of the text layer, each with its page number."""
        with apply_configuration(**pypdf_caps(limits, len(content))):
            try:
                return _read(content, limits)
            except (InputRejected, MemoryError):
                raise
            except RecursionError as exc:
                raise InputRejected(MALFORMED_PDF, "objects nested too deeply to read") from exc
            except LimitReachedError as exc:
                raise InputRejected(PDF_LIMIT_EXCEEDED, _short(exc)) from exc
            except Exception as exc:  # pypdf raises many types on broken files; all mean one thing
                raise InputRejected(MALFORMED_PDF, _short(exc)) from exc


def pypdf_caps(limits: IngestSettings, document_bytes: int) -> dict[str, Any]:
    """``pypdf`` configuration values derived from the ingest caps."""
    by_ratio = int(limits.max_compression_ratio * document_bytes)
    stream_bytes = min(limits.max_decompressed_bytes, max(RATIO_FLOOR_BYTES, by_ratio))
    depth = limits.max_nesting_depth
    return {
        "maximum_declared_stream_length": limits.max_document_bytes,
        "array_based_stream_maximum_output_length": stream_bytes,
        "jbig2_maximum_output_length": stream_bytes,
        "lzw_maximum_output_length": stream_bytes,
        "run_length_maximum_output_length": stream_bytes,
        "zlib_maximum_output_length": stream_bytes,
        "brotli_maximum_output_length": stream_bytes,
        "image_maximum_buffer_size": stream_bytes,
        "stream_decoding_work_maximum_length": stream_bytes,
        "page_tree_maximum_entries": 2 * limits.max_pages + 64,
        "page_tree_maximum_depth": depth,
        "outline_maximum_depth": depth,
        "form_fields_maximum_depth": depth,
        "named_destinations_maximum_depth": depth,
        "jbig2dec_binary": None,  # never hand document bytes to an external program
        "disable_legacy_handling": True,
    }


def _read(content: bytes, limits: IngestSettings) -> ExtractedDocument:
    reader = PdfReader(BytesIO(content), strict=False)
    if reader.is_encrypted:
        raise InputRejected(ENCRYPTED_PDF, "the PDF is encrypted; no password is tried")
    pages = _pages(reader, limits.max_pages)
    rendered = RenderedText(max_paragraphs=limits.max_paragraphs)
    page_numbers: list[int] = []
    links: list[str] = []
    layer = [_page_text(page) for page in pages]
    # Pages without a text layer (scans) are read by OCR when it is on (.ocr)
    scanned = read_scanned(content, [n for n, t in enumerate(layer, 1) if not t.strip()],
                           limits.ocr)
    for number, page in enumerate(pages, start=1):
        for block in _blocks(scanned.texts.get(number, layer[number - 1])):
            if rendered.add(block, PARAGRAPH):
                page_numbers.append(number)
        links.extend(_page_links(page))
    if not rendered.paragraphs:
        raise scanned.refusal(len(pages))
    paragraphs = tuple(
        dataclasses.replace(paragraph, page=page_numbers[paragraph.index])
        for paragraph in rendered.paragraphs
    )
    text = rendered.text
    first = text[paragraphs[0].start : paragraphs[0].end].split("\n", 1)[0]
    return ExtractedDocument(
        text=text,
        paragraphs=paragraphs,
        format="pdf",
        title=_info_title(reader) or (first if len(first) <= MAX_TITLE_CHARS else None),
        links=ordered_unique(links),
        metadata=DocumentMetadata(ocr_confidence=scanned.confidence),
        dropped=dropped_content(reader, pages, content) + scanned.dropped,
    )


def _pages(reader: PdfReader, max_pages: int) -> list[PageObject]:
    """The pages, refused when the declared or the actual count is over ``max_pages``."""
    pages_node = reader.root_object.get("/Pages")
    declared = pages_node.get_object().get("/Count") if pages_node is not None else None
    if isinstance(declared, int) and declared > max_pages:
        raise InputRejected(TOO_MANY_PAGES, f"{declared} pages exceeds the limit of {max_pages}")
    pages = list(reader.pages)
    if len(pages) > max_pages:
        raise InputRejected(TOO_MANY_PAGES, f"{len(pages)} pages exceeds the limit of {max_pages}")
    if not pages:
        raise InputRejected(EMPTY_DOCUMENT, "the PDF has no pages")
    return pages


def _page_text(page: PageObject) -> str:
    """Layout-mode text; plain text when the layout renderer cannot place this page."""
    try:
        return page.extract_text(extraction_mode="layout")
    except (LimitReachedError, MemoryError, RecursionError):
        raise
    except Exception:  # layout mode is stricter about fonts than plain extraction
        return page.extract_text()


def _blocks(page_text: str) -> Iterator[str]:
    """Blank-line separated blocks, each line with its spacing runs collapsed."""
    lines: list[str] = []
    for raw_line in page_text.split("\n"):
        line = " ".join(raw_line.split())
        if line:
            lines.append(line)
        elif lines:
            yield "\n".join(lines)
            lines = []
    if lines:
        yield "\n".join(lines)


def _page_links(page: PageObject) -> Iterator[str]:
    """URIs of the page's link annotations."""
    annotations = page.get("/Annots")
    annotations = annotations.get_object() if annotations is not None else None
    if not isinstance(annotations, list):
        return
    for annotation in annotations[:_MAX_LINKS_PER_PAGE]:
        action = _mapping(_mapping(annotation).get("/A"))
        uri = action.get("/URI")
        if isinstance(uri, str) and uri.strip():
            yield uri.strip()


def _mapping(value: object) -> dict[str, Any]:
    resolved = value.get_object() if hasattr(value, "get_object") else value
    return resolved if isinstance(resolved, dict) else {}


def _info_title(reader: PdfReader) -> str | None:
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except (PyPdfError, AttributeError, KeyError, TypeError, ValueError):
        return None  # a broken information dictionary costs the title, not the document
    if isinstance(title, str):
        title = " ".join(title.split())
        if title and len(title) <= MAX_TITLE_CHARS:
            return title
    return None


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]
