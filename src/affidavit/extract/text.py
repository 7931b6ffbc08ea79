"""Plain text: paragraphs are separated by blank lines; the first short line is the title."""

from __future__ import annotations

import re

from affidavit.config.settings import IngestSettings
from affidavit.extract.decode import check_line_lengths
from affidavit.extract.layout import PARAGRAPH, SpanCollector, blank_line_blocks
from affidavit.records import ExtractedDocument

MAX_TITLE_CHARS = 120
_FIRST_LINE = re.compile(r"\S[^\n]*")


class TextParser:
    """Parser for ``.txt`` and ``.text`` files."""

    formats: tuple[str, ...] = (".txt", ".text")

    def parse(self, text: str, *, limits: IngestSettings) -> ExtractedDocument:
        """Split ``text`` into blank-line separated paragraphs."""
        check_line_lengths(text, limits.max_line_chars)
        spans = SpanCollector(text, max_paragraphs=limits.max_paragraphs)
        for start, end in blank_line_blocks(text):
            spans.add(start, end, PARAGRAPH)
        return ExtractedDocument(
            text=text, paragraphs=spans.paragraphs, format="text", title=_title(text)
        )


def _title(text: str) -> str | None:
    """The first non-blank line, when it is short enough to be a title."""
    match = _FIRST_LINE.search(text)
    if match is None:
        return None
    line = match.group().strip()
    return line if len(line) < MAX_TITLE_CHARS else None
