"""CSV: the first non-empty row names the columns; every later row is one record.

A row renders as ``Header1: v1; Header2: v2``, empty cells left out, whitespace inside a
cell collapsed. The delimiter is the most frequent of ``,`` ``;`` tab ``|`` on the header
line (comma on a tie). Quoting is read strictly, and a field longer than the ``csv``
module's field limit (128 KiB by default) is refused rather than truncated.
"""

from __future__ import annotations

import csv
import io
import re

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract.decode import check_line_lengths
from affidavit.extract.layout import RECORD, RenderedText, rendered_budget
from affidavit.records import ExtractedDocument

MALFORMED_CSV = "MALFORMED_CSV"
DELIMITERS = (",", ";", "\t", "|")
_VISIBLE = re.compile(r"\S")


class CsvParser:
    """Parser for ``.csv`` files."""

    formats: tuple[str, ...] = (".csv",)

    def parse(self, text: str, *, limits: IngestSettings) -> ExtractedDocument:
        """One ``record`` paragraph per data row, each cell labelled with its column."""
        check_line_lengths(text, limits.max_line_chars)
        # Column names repeat on every row: a wide header over short rows is refused with
        # EXPANSION_LIMIT once the rendered text outgrows the file.
        rendered = RenderedText(max_paragraphs=limits.max_paragraphs,
                                max_chars=rendered_budget(len(text), limits))
        rows = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text), strict=True)
        header: list[str] | None = None
        try:
            for row in rows:
                cells = [" ".join(cell.split()) for cell in row]
                if not any(cells):
                    continue
                if header is None:
                    header = [name or f"column {n}" for n, name in enumerate(cells, start=1)]
                else:
                    rendered.add(_record(header, cells), RECORD)
        except csv.Error as exc:
            raise InputRejected(MALFORMED_CSV, f"line {rows.line_num}: {exc}") from exc
        return ExtractedDocument(text=rendered.text, paragraphs=rendered.paragraphs, format="csv")


def _delimiter(text: str) -> str:
    header = _header_line(text)
    counts = [header.count(delimiter) for delimiter in DELIMITERS]
    best = max(counts)
    return DELIMITERS[counts.index(best)] if best else ","


def _header_line(text: str) -> str:
    """The first line holding something other than whitespace."""
    visible = _VISIBLE.search(text)
    if visible is None:
        return ""
    start = text.rfind("\n", 0, visible.start()) + 1
    end = text.find("\n", visible.start())
    return text[start : end if end >= 0 else len(text)]


def _record(header: list[str], cells: list[str]) -> str:
    named = (
        (header[n] if n < len(header) else f"column {n + 1}", value)
        for n, value in enumerate(cells)
    )
    return "; ".join(f"{name}: {value}" for name, value in named if value)
