"""Markdown: front matter, block structure and links, with the source text kept as it is.

The normalized text of a Markdown document is its body exactly as written, with the front
matter removed. Nothing else is rewritten: heading lines keep their ``#`` markers (a
heading paragraph reads ``# Leave policy``), links keep their ``[text](url)`` form, so
every paragraph offset points at the author's own characters. ``heading_path`` holds the
heading texts without markers; a heading paragraph's path ends with the heading itself,
so a heading and the body under it share one path.

Blocks recognised (a practical subset of CommonMark and GitHub tables):

* ATX headings (``#`` to ``######``) and setext headings (a line underlined by ``===`` or
  ``---``) are paragraphs of their own, kind ``heading``;
* fenced code (``````` or ``~~~``) is one ``code`` paragraph, blank lines included; an
  unclosed fence runs to the end of the document;
* consecutive list items, including items separated by blank lines and indented
  continuation lines, form one ``list`` paragraph;
* a line with ``|`` followed by a delimiter row (``|---|:--:|``) starts a ``table``;
* ``>`` lines are a ``quote``; everything else is a ``paragraph``;
* thematic breaks (``***``, ``---``) and empty headings belong to no paragraph.

Front matter is YAML between a first line ``---`` and the next ``---`` (or ``...``) line.
It is read with the sidecar rules; any problem, including a front matter that is opened
but never closed, is ``MALFORMED_FRONT_MATTER``: a document whose declared permissions
cannot be read is not ingested with default ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract.decode import check_line_lengths
from affidavit.extract.dropped import FRONT_MATTER_FIELD, DroppedCollector
from affidavit.extract.layout import (
    CODE,
    HEADING,
    LIST,
    PARAGRAPH,
    QUOTE,
    TABLE,
    SpanCollector,
)
from affidavit.records import DocumentMetadata, ExtractedDocument, ordered_unique
from affidavit.sources.metadata import parse_metadata
from affidavit.sources.safe_yaml import load_yaml_document

MALFORMED_FRONT_MATTER = "MALFORMED_FRONT_MATTER"

_FRONT_MATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_ATX_OPENING = re.compile(r" {0,3}(#{1,6})(?:[ \t]|$)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}(?=[^`]*$)|~{3,}).*")
_THEMATIC_BREAK = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*")
_TABLE_DELIMITER_CELL = re.compile(r"[ \t]*:?-+:?[ \t]*")
_LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
# Only a bullet or an item numbered 1 may interrupt a running paragraph (CommonMark).
_LIST_INTERRUPT = re.compile(r" {0,3}(?:[-*+]|1[.)])[ \t]+\S")
_QUOTE = re.compile(r" {0,3}>")
_LINK = re.compile(
    r"(?<!!)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]"
    r"\(\s*<?(?P<inline>[^\s()<>]++(?:\([^\s()<>]*+\)[^\s()<>]*+)*+)>?"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
    r"|<(?P<auto>[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]+)>"
    r"|^ {0,3}\[[^\]\n]+\]:[ \t]*<?(?P<reference>[^\s<>]+)>?",
    re.MULTILINE,
)


class MarkdownParser:
    """Parser for ``.md`` and ``.markdown`` files."""

    formats: tuple[str, ...] = (".md", ".markdown")

    def parse(self, text: str, *, limits: IngestSettings) -> ExtractedDocument:
        """Front matter into metadata, the body into heading/code/list/table/... paragraphs."""
        check_line_lengths(text, limits.max_line_chars)
        metadata, body = split_front_matter(text, max_depth=limits.max_nesting_depth)
        reader = _BlockReader(body, max_paragraphs=limits.max_paragraphs)
        reader.read()
        # The front matter stays in the original file: every field of it, and its comments,
        # are text the chunks do not carry.
        dropped = DroppedCollector()
        dropped.add(FRONT_MATTER_FIELD, text[: len(text) - len(body)])
        document = ExtractedDocument(
            text=body,
            paragraphs=reader.spans.paragraphs,
            format="markdown",
            title=metadata.title or reader.first_title,
            metadata=metadata,
            dropped=dropped.entries(),
        )
        return _with_links(document)


def split_front_matter(text: str, *, max_depth: int) -> tuple[DocumentMetadata, str]:
    """The declared metadata and the body that follows the front matter."""
    first_break = text.find("\n")
    first_line = text if first_break < 0 else text[:first_break]
    if first_line.rstrip() != "---":
        return DocumentMetadata(), text
    closing = _FRONT_MATTER_CLOSE.search(text, first_break + 1) if first_break >= 0 else None
    if closing is None:
        raise InputRejected(MALFORMED_FRONT_MATTER, "front matter is opened but never closed")
    try:
        declared = load_yaml_document(text[first_break + 1 : closing.start()], max_depth=max_depth)
        if declared is None:
            metadata = DocumentMetadata()
        elif isinstance(declared, Mapping):
            metadata = parse_metadata(declared, origin="front matter")
        else:
            raise InputRejected(MALFORMED_FRONT_MATTER, "front matter must be a YAML mapping")
    except InputRejected as exc:
        raise InputRejected(MALFORMED_FRONT_MATTER, exc.detail) from exc
    return metadata, text[closing.end() + 1 :]


@dataclass
class _OpenBlock:
    """The block being read: where it starts, where its last non-blank line ends."""

    kind: str
    start: int
    end: int
    first_line: str
    lines: int = 1
    fence: str = ""
    after_blank: bool = False


class _BlockReader:
    """Reads the body line by line and closes each block into a paragraph."""

    def __init__(self, text: str, *, max_paragraphs: int) -> None:
        self.spans = SpanCollector(text, max_paragraphs=max_paragraphs)
        self.first_title: str | None = None
        self._headings: list[tuple[int, str]] = []
        self._block: _OpenBlock | None = None

    def read(self) -> None:
        offset = 0
        for line in self.spans.text.split("\n"):
            self._feed(offset, line)
            offset += len(line) + 1
        self._close()

    def _feed(self, start: int, line: str) -> None:
        end = start + len(line)
        block = self._block
        if block is not None and block.kind == CODE:
            self._feed_code(block, end, line)
        elif not line.strip():
            self._blank()
        elif block is not None and block.after_blank and not _continues_list(line):
            self._close()
            self._feed(start, line)
        elif block is not None and block.kind == PARAGRAPH and self._underline(block, end, line):
            return
        elif not self._own_block(start, end, line):
            self._extend(start, end, line)

    def _feed_code(self, block: _OpenBlock, end: int, line: str) -> None:
        block.end = end
        block.lines += 1
        if _closes_fence(line, block.fence):
            self._close()

    def _blank(self) -> None:
        if self._block is not None and self._block.kind == LIST:
            self._block.after_blank = True  # a list may go on after a blank line
        else:
            self._close()

    def _underline(self, block: _OpenBlock, end: int, line: str) -> bool:
        """A table delimiter row or a setext underline below a paragraph."""
        header = block.lines == 1 and "|" in block.first_line and "|" in line
        if header and _is_table_delimiter(line):
            block.kind, block.end, block.lines = TABLE, end, 2
            return True
        underline = _SETEXT_UNDERLINE.fullmatch(line)
        if underline is None:
            return False
        title = " ".join(self.spans.text[block.start : block.end].split())
        self._block = None
        self._heading(block.start, end, 1 if underline.group(1)[0] == "=" else 2, title)
        return True

    def _own_block(self, start: int, end: int, line: str) -> bool:
        """Headings, fences and thematic breaks: they close whatever block is open."""
        heading = _atx_heading(line)
        if heading is not None:
            self._close()
            self._heading(start, end, *heading)
            return True
        fence = _FENCE_OPEN.fullmatch(line)
        if fence is not None:
            self._close()
            self._block = _OpenBlock(CODE, start, end, line, fence=fence.group(1))
            return True
        if _THEMATIC_BREAK.fullmatch(line):
            self._close()
            return True
        return False

    def _extend(self, start: int, end: int, line: str) -> None:
        block = self._block
        if block is not None and block.kind == PARAGRAPH and _interrupts_paragraph(line):
            self._close()
            block = None
        if block is None:
            self._block = _OpenBlock(_opening_kind(line), start, end, line)
            return
        block.end, block.lines, block.after_blank = end, block.lines + 1, False

    def _heading(self, start: int, end: int, level: int, title: str) -> None:
        if not title:
            return  # an empty heading names nothing and opens no section
        while self._headings and self._headings[-1][0] >= level:
            self._headings.pop()
        self._headings.append((level, title))
        self.spans.add(start, end, HEADING, self._heading_path())
        if level == 1 and self.first_title is None:
            self.first_title = title

    def _close(self) -> None:
        block, self._block = self._block, None
        if block is not None:
            self.spans.add(block.start, block.end, block.kind, self._heading_path())

    def _heading_path(self) -> tuple[str, ...]:
        return tuple(title for _, title in self._headings)


def _atx_heading(line: str) -> tuple[int, str] | None:
    """Level and text of an ATX heading line (closing ``#`` run removed), else None.

    Written without a backtracking pattern: a heading line may be very long.
    """
    opening = _ATX_OPENING.match(line)
    if opening is None:
        return None
    content = line[opening.end() :].strip()
    without_closing = content.rstrip("#")
    if not without_closing or without_closing[-1] in " \t":
        content = without_closing.strip()
    return len(opening.group(1)), content


def _is_table_delimiter(line: str) -> bool:
    """A row like ``|---|:--:|`` (outer pipes optional), checked cell by cell."""
    cells = line.strip().strip("|").split("|")
    return all(_TABLE_DELIMITER_CELL.fullmatch(cell) for cell in cells)


def _opening_kind(line: str) -> str:
    if _LIST_ITEM.match(line):
        return LIST
    if _QUOTE.match(line):
        return QUOTE
    return PARAGRAPH


def _interrupts_paragraph(line: str) -> bool:
    return _LIST_INTERRUPT.match(line) is not None or _QUOTE.match(line) is not None


def _closes_fence(line: str, fence: str) -> bool:
    """A run of the fence character at least as long as the opening one, and nothing else."""
    stripped = line.strip()
    if len(line) - len(line.lstrip(" ")) > 3 or len(stripped) < len(fence):
        return False
    return stripped == fence[0] * len(stripped)


def _continues_list(line: str) -> bool:
    """After a blank line, a list goes on with another item or an indented line."""
    return _LIST_ITEM.match(line) is not None or line[:1] in (" ", "\t")


def _with_links(document: ExtractedDocument) -> ExtractedDocument:
    """The document with the targets of its links, in order, code blocks excluded."""
    targets: list[str] = []
    for paragraph in document.paragraphs:
        if paragraph.kind == CODE:
            continue
        for match in _LINK.finditer(document.paragraph_text(paragraph)):
            targets.append(match.group("inline") or match.group("auto") or match.group("reference"))
    return replace(document, links=ordered_unique(targets)) if targets else document
