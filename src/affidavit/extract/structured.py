"""Rendering of structured data (JSON, YAML) into ``path: value`` record paragraphs.

Each field of a top-level mapping, each item of a top-level list, and a top-level scalar
becomes one ``record`` paragraph. Nested values are flattened into one line per leaf,
``key.child[0].name: value``, in document order. The walk is iterative, so rendering never
depends on Python's recursion limit.

Every leaf line repeats its whole path, so a small document of long keys over many leaves
renders to a text thousands of times its size. The text is built against a budget
(:func:`~affidavit.extract.layout.rendered_budget`) and the walk stops with
``EXPANSION_LIMIT`` as soon as the lines written, or the paths it holds open, pass it.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Iterator, Mapping

from affidavit.extract.layout import (
    RECORD,
    RenderedText,
    collapse_blank_lines,
    expansion_refused,
)


def render_records(documents: Iterable[object], out: RenderedText) -> None:
    """Append the record paragraphs of each document to ``out``."""
    for document in documents:
        if isinstance(document, Mapping):
            for key, value in document.items():
                out.add(record_lines(scalar_text(key), value, max_chars=out.room), RECORD)
        elif isinstance(document, list):
            for item in document:
                out.add(record_lines("", item, max_chars=out.room), RECORD)
        elif document is not None:
            out.add(scalar_text(document), RECORD)


def record_lines(path: str, value: object, *, max_chars: int | None = None) -> str:
    """One ``path: value`` line per leaf under ``value`` (just ``value`` when no path).

    When the lines would pass ``max_chars`` characters, or the paths of the containers being
    walked would, the document is refused with ``EXPANSION_LIMIT``.
    """
    lines: list[str] = []
    written = -1  # the lines are joined by one separator fewer than there are lines
    held = 0
    # Children are produced lazily, so only the paths of the open containers are held.
    open_containers: list[tuple[int, Iterator[tuple[str, object]]]] = [
        (0, iter([(path, value)]))]
    while open_containers:
        path_length, children = open_containers[-1]
        step = next(children, None)
        if step is None:
            open_containers.pop()
            held -= path_length
            continue
        path, value = step
        if _has_children(value):
            open_containers.append((len(path), _children(path, value)))
            held += len(path)
        else:
            text = scalar_text(value)
            line = f"{path}: {text}" if path else text
            lines.append(line)
            written += len(line) + 1
        if max_chars is not None and max(written, held) > max_chars:
            raise expansion_refused(max_chars)
    return "\n".join(lines)


def _has_children(value: object) -> bool:
    return isinstance(value, Mapping | list) and len(value) > 0


def _children(path: str, value: object) -> Iterator[tuple[str, object]]:
    if isinstance(value, Mapping):
        prefix = f"{path}." if path else ""
        return ((prefix + scalar_text(key), child) for key, child in value.items())
    if isinstance(value, list):
        return ((f"{path}[{index}]", child) for index, child in enumerate(value))
    return iter(())


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
