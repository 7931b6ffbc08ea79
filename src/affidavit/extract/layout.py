"""Paragraph maps: spans of the normalized text, trimmed, ordered, counted against limits.

Two ways to build one: :class:`SpanCollector` marks spans of a text that already exists
(Markdown, plain text); :class:`RenderedText` writes a new text block by block (HTML, JSON,
CSV, YAML), separating blocks by one blank line. Either way each paragraph's
``text[start:end]`` is its trimmed text and is never empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract.decode import normalize_text
from affidavit.records import Paragraph

TOO_MANY_PARAGRAPHS = "TOO_MANY_PARAGRAPHS"
EXPANSION_LIMIT = "EXPANSION_LIMIT"

HEADING = "heading"
PARAGRAPH = "paragraph"
LIST = "list"
TABLE = "table"
CODE = "code"
QUOTE = "quote"
RECORD = "record"
KINDS = (HEADING, PARAGRAPH, LIST, TABLE, CODE, QUOTE, RECORD)

# A blank line: a line break, then a line holding only whitespace other than line breaks.
_BLANK_LINES = re.compile(r"\n[^\S\n]*(?=\n)")


def rendered_budget(input_size: int, limits: IngestSettings) -> int:
    """Characters of text a document of ``input_size`` bytes (or characters) may render to.

    Structured formats repeat key paths and column names on every line, so a few kilobytes
    can render to gigabytes; the text may grow by ``max_expansion_ratio`` and, however small
    the input, to ``expansion_floor_chars``, but never past ``max_rendered_chars``.
    """
    allowed = max(limits.expansion_floor_chars, int(limits.max_expansion_ratio * input_size))
    return min(limits.max_rendered_chars, allowed)


def expansion_refused(budget: int) -> InputRejected:
    """The refusal of a document whose rendered text would pass ``budget`` characters."""
    return InputRejected(EXPANSION_LIMIT, f"its text would render to more than {budget} "
                         "characters, out of proportion to its size")


def trimmed_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``(start, end)`` narrowed past surrounding whitespace; None if nothing is left."""
    piece = text[start:end]
    stripped = piece.lstrip()
    if not stripped:
        return None
    start += len(piece) - len(stripped)
    end -= len(stripped) - len(stripped.rstrip())
    return start, end


def blank_line_blocks(text: str) -> Iterator[tuple[int, int]]:
    """Spans of ``text`` separated by blank lines (untrimmed; may be whitespace only)."""
    position = 0
    for separator in _BLANK_LINES.finditer(text):
        yield position, separator.start()
        position = separator.end()
    yield position, len(text)


class SpanCollector:
    """Collects paragraphs that are spans of an existing text."""

    def __init__(self, text: str, *, max_paragraphs: int) -> None:
        self.text = text
        self._max_paragraphs = max_paragraphs
        self._paragraphs: list[Paragraph] = []

    def add(self, start: int, end: int, kind: str, heading_path: tuple[str, ...] = ()) -> bool:
        """Add ``text[start:end]`` trimmed; False (and nothing added) when it is blank."""
        span = trimmed_span(self.text, start, end)
        if span is None:
            return False
        if self._paragraphs and span[0] < self._paragraphs[-1].end:
            raise ValueError("paragraphs must be added in text order")  # a parser bug
        if len(self._paragraphs) >= self._max_paragraphs:
            raise InputRejected(TOO_MANY_PARAGRAPHS, f"more than {self._max_paragraphs} paragraphs")
        index = len(self._paragraphs)
        self._paragraphs.append(Paragraph(index, span[0], span[1], kind, heading_path))
        return True

    @property
    def paragraphs(self) -> tuple[Paragraph, ...]:
        return tuple(self._paragraphs)


class RenderedText:
    """Writes a text block by block; each non-blank block becomes one paragraph."""

    SEPARATOR = "\n\n"

    def __init__(self, *, max_paragraphs: int, max_chars: int | None = None) -> None:
        self._max_paragraphs = max_paragraphs
        self._max_chars = max_chars
        self._parts: list[str] = []
        self._length = 0
        self._paragraphs: list[Paragraph] = []

    def add(self, block: str, kind: str, heading_path: tuple[str, ...] = ()) -> bool:
        """Normalize, trim and append ``block``; False (and nothing added) when it is blank."""
        block = normalize_text(block).strip()
        if not block:
            return False
        if len(self._paragraphs) >= self._max_paragraphs:
            raise InputRejected(TOO_MANY_PARAGRAPHS, f"more than {self._max_paragraphs} paragraphs")
        separator = self.SEPARATOR if self._parts else ""
        if self._max_chars is not None and (
                self._length + len(separator) + len(block) > self._max_chars):
            raise expansion_refused(self._max_chars)
        if separator:
            self._parts.append(separator)
            self._length += len(separator)
        start = self._length
        self._parts.append(block)
        self._length += len(block)
        index = len(self._paragraphs)
        self._paragraphs.append(Paragraph(index, start, self._length, kind, heading_path))
        return True

    @property
    def room(self) -> int | None:
        """Characters that may still be written; None when there is no limit."""
        if self._max_chars is None:
            return None
        return max(0, self._max_chars - self._length)

    @property
    def text(self) -> str:
        return "".join(self._parts)

    @property
    def paragraphs(self) -> tuple[Paragraph, ...]:
        return tuple(self._paragraphs)


def collapse_blank_lines(value: str) -> str:
    """``value`` with blank lines removed, so a rendered block never splits in two."""
    if "\n" not in value:
        return value
    return "\n".join(line for line in value.split("\n") if line.strip())
