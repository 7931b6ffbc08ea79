"""Stage B: untrusted bytes to normalized text, a paragraph map, links and declared metadata.

One parser per format, chosen by the file name's suffix. Every parser is deterministic and
refuses bad input only with :class:`~affidavit.errors.InputRejected`; the reason codes are
listed in :data:`REASON_CODES`.

Each parser also records, by kind, what the file holds beyond that text (front matter,
comments, hidden content, document information, attachments: ``ExtractedDocument.dropped``,
:mod:`affidavit.extract.dropped`), so that the original file is labelled as a whole.

Text formats (:class:`Parser`) read the strictly decoded, normalized text. Binary formats
(:class:`BinaryParser`: PDF, DOCX) read the bytes, in a forked child process held to
``parse_timeout_seconds`` and a memory budget (:mod:`affidavit.extract.guard`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import archive, docx, guard, pdf
from affidavit.extract.csv_format import MALFORMED_CSV, CsvParser
from affidavit.extract.decode import (
    BINARY_CONTENT,
    EMPTY_DOCUMENT,
    LINE_TOO_LONG,
    UNDECODABLE_TEXT,
    check_line_lengths,
    decode_text,
)
from affidavit.extract.docx import DocxParser
from affidavit.extract.html import MALFORMED_HTML, HtmlParser
from affidavit.extract.json_format import MALFORMED_JSON, NESTING_TOO_DEEP, JsonParser
from affidavit.extract.layout import (
    EXPANSION_LIMIT,
    KINDS,
    TOO_MANY_PARAGRAPHS,
    expansion_refused,
    rendered_budget,
)
from affidavit.extract.markdown import MALFORMED_FRONT_MATTER, MarkdownParser
from affidavit.extract.pdf import PdfParser
from affidavit.extract.text import TextParser
from affidavit.extract.yaml_format import YamlParser
from affidavit.records import ExtractedDocument
from affidavit.sources.safe_yaml import MALFORMED_YAML

UNSUPPORTED_FORMAT = "UNSUPPORTED_FORMAT"
TOO_LARGE = "TOO_LARGE"

REASON_CODES = tuple(
    sorted(
        {
            BINARY_CONTENT,
            EMPTY_DOCUMENT,
            EXPANSION_LIMIT,
            LINE_TOO_LONG,
            MALFORMED_CSV,
            MALFORMED_FRONT_MATTER,
            MALFORMED_HTML,
            MALFORMED_JSON,
            MALFORMED_YAML,
            NESTING_TOO_DEEP,
            TOO_LARGE,
            TOO_MANY_PARAGRAPHS,
            UNDECODABLE_TEXT,
            UNSUPPORTED_FORMAT,
            *archive.REASON_CODES,
            *docx.REASON_CODES,
            *guard.REASON_CODES,
            *pdf.REASON_CODES,
        }
    )
)
"""Every reason code :func:`extract` may refuse a document with."""


class Parser(Protocol):
    """Turns normalized text of one format into an :class:`ExtractedDocument`."""

    formats: tuple[str, ...]
    """Lowercase file name suffixes this parser reads, with the dot (``".md"``)."""

    def parse(self, text: str, *, limits: IngestSettings) -> ExtractedDocument:
        """Paragraphs, title, links and declared metadata of ``text``."""
        ...


class BinaryParser(Protocol):
    """Turns the raw bytes of one binary format (PDF, DOCX) into an :class:`ExtractedDocument`.

    Runs in a disposable child process (see :mod:`affidavit.extract.guard`); it may raise
    ``MemoryError`` or take too long, and the guard turns either into a reason code.
    """

    formats: tuple[str, ...]
    """Lowercase file name suffixes this parser reads, with the dot (``".pdf"``)."""

    def parse_bytes(self, content: bytes, *, limits: IngestSettings) -> ExtractedDocument:
        """Paragraphs, title and links of the document in ``content``."""
        ...


def _by_suffix(*parsers: Parser) -> Mapping[str, Parser]:
    return {suffix: parser for parser in parsers for suffix in parser.formats}


def _binary_by_suffix(*parsers: BinaryParser) -> Mapping[str, BinaryParser]:
    return {suffix: parser for parser in parsers for suffix in parser.formats}


PARSERS: Mapping[str, Parser] = _by_suffix(
    MarkdownParser(), TextParser(), HtmlParser(), JsonParser(), CsvParser(), YamlParser()
)
BINARY_PARSERS: Mapping[str, BinaryParser] = _binary_by_suffix(PdfParser(), DocxParser())
SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(sorted({*PARSERS, *BINARY_PARSERS}))


def parser_for(filename: str) -> Parser | BinaryParser:
    """The parser for ``filename``'s suffix (case-insensitive), or ``UNSUPPORTED_FORMAT``."""
    suffix = _suffix(filename)
    parser = PARSERS.get(suffix) or BINARY_PARSERS.get(suffix)
    if parser is None:
        shown = suffix or "no suffix"
        raise InputRejected(UNSUPPORTED_FORMAT, f"{shown!r} is not one of {SUPPORTED_SUFFIXES}")
    return parser


def extract(content: bytes, *, filename: str, limits: IngestSettings) -> ExtractedDocument:
    """Decode, normalize and parse one document; bad input raises ``InputRejected``."""
    parser_for(filename)  # an unsupported suffix is refused before the size is looked at
    if len(content) > limits.max_document_bytes:
        raise InputRejected(
            TOO_LARGE, f"{len(content)} bytes exceeds the limit of {limits.max_document_bytes}"
        )
    suffix = _suffix(filename)
    if suffix in BINARY_PARSERS:
        document = _parse_binary(BINARY_PARSERS[suffix], content, limits)
    else:
        document = _parse_text(PARSERS[suffix], content, limits)
    # Every format, binary ones included, is held to the same proportion of rendered text to
    # input; JSON, YAML and CSV are also held to it while they render.
    budget = rendered_budget(len(content), limits)
    if len(document.text) > budget:
        raise expansion_refused(budget)
    check_line_lengths(document.text, limits.max_line_chars)
    if not document.paragraphs:
        raise InputRejected(EMPTY_DOCUMENT, "the document has no readable text")
    return document


def _parse_text(parser: Parser, content: bytes, limits: IngestSettings) -> ExtractedDocument:
    text = decode_text(content)
    try:
        return parser.parse(text, limits=limits)
    except RecursionError as exc:  # a last guard: every parser bounds its own nesting
        raise InputRejected(NESTING_TOO_DEEP, "nesting too deep to read") from exc


def _parse_binary(
    parser: BinaryParser, content: bytes, limits: IngestSettings
) -> ExtractedDocument:
    if not content:
        raise InputRejected(EMPTY_DOCUMENT, "the document is empty")
    return guard.parse_isolated(
        lambda: parser.parse_bytes(content, limits=limits),
        timeout_seconds=limits.parse_timeout_seconds,
        memory_bytes=guard.memory_budget(limits),
    )


def _suffix(filename: str) -> str:
    name = filename.replace("\\", "/").rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


__all__ = [
    "BINARY_PARSERS",
    "KINDS",
    "PARSERS",
    "REASON_CODES",
    "SUPPORTED_SUFFIXES",
    "BinaryParser",
    "Parser",
    "extract",
    "parser_for",
]
