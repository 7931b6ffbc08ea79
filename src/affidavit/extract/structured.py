"""Rendering of structured data (JSON, YAML) into ``path: value`` record paragraphs.

Each field of a top-level mapping, each item of a top-level list, and a top-level scalar
becomes one ``record`` paragraph. Nested values are flattened into one line per leaf,
``key.child[0].name: value``, in document order. The walk is iterative, so rendering never
depends on Python's recursion limit.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping

from affidavit.extract.layout import RECORD, RenderedText, collapse_blank_lines


def render_records(documents: Iterable[object], out: RenderedText) -> None:
    """Append the record paragraphs of each document to ``out``."""
    for document in documents:
        if isinstance(document, Mapping):
            for key, value in document.items():
                out.add(record_lines(scalar_text(key), value), RECORD)
        elif isinstance(document, list):
            for item in document:
                out.add(record_lines("", item), RECORD)
        elif document is not None:
            out.add(scalar_text(document), RECORD)


def record_lines(path: str, value: object) -> str:
    """One ``path: value`` line per leaf under ``value`` (just ``value`` when no path)."""
    lines: list[str] = []
    pending: list[tuple[str, object]] = [(path, value)]
    while pending:
        path, value = pending.pop()
        children = _children(path, value)
        if children:
            pending.extend(reversed(children))
        else:
            text = scalar_text(value)
            lines.append(f"{path}: {text}" if path else text)
    return "\n".join(lines)


def _children(path: str, value: object) -> list[tuple[str, object]]:
    if isinstance(value, Mapping):
        prefix = f"{path}." if path else ""
        return [(prefix + scalar_text(key), child) for key, child in value.items()]
    if isinstance(value, list):
        return [(f"{path}[{index}]", child) for index, child in enumerate(value)]
    return []


def scalar_text(value: object) -> str:
    """A leaf value as text, written the way JSON would write it where JSON can."""
    if isinstance(value, str):
        return collapse_blank_lines(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return str(value)


def top_level_title(documents: Iterable[object]) -> str | None:
    """The first top-level ``title`` string, stripped, if any document has one."""
    for document in documents:
        if isinstance(document, Mapping):
            title = document.get("title")
            if isinstance(title, str) and title.strip():
                return " ".join(title.split())
    return None
