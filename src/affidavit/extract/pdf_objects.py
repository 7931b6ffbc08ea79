"""Text a PDF page can draw beyond its own content stream, and strings held in objects.

The page text of :mod:`affidavit.extract.pdf` comes from ``pypdf``'s layout mode, which
does not follow form XObjects; tiling patterns and Type 3 glyph procedures are content
streams of their own too. :func:`drawable_streams` finds every such stream a page's
resources can reach (used or not: the bytes travel with the page), and
:func:`stream_text` reads the text one of them draws. :func:`strings_under` collects the
text strings of an object graph. The extractor labels what these find; the original
download checks with them that a page it keeps draws nothing the caller may not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pypdf import PageObject
from pypdf.generic import (
    ArrayObject,
    ByteStringObject,
    DecodedStreamObject,
    DictionaryObject,
    IndirectObject,
    NameObject,
    StreamObject,
    TextStringObject,
)

MAX_STREAMS = 10_000
"""Drawable streams followed per document; past it the rest is not known."""


class TooManyObjects(Exception):
    """More drawable streams or objects than are followed: what they hold is not known."""


def resolved(value: object) -> Any:
    return value.get_object() if isinstance(value, IndirectObject) else value


def drawable_streams(resources: object, seen: set[int] | None = None
                     ) -> Iterator[tuple[StreamObject, DictionaryObject]]:
    """Each form XObject, tiling pattern and Type 3 glyph procedure reachable from
    ``resources``, with the resources it draws with; each stream once (``seen``)."""
    seen = set() if seen is None else seen
    pending: list[DictionaryObject] = []
    if isinstance(resolved(resources), DictionaryObject):
        pending.append(resolved(resources))
    while pending:
        current = pending.pop()
        for stream, own in _streams_of(current):
            if id(stream) in seen:
                continue
            seen.add(id(stream))
            if len(seen) > MAX_STREAMS:
                raise TooManyObjects("too many drawable streams")
            drawn_with = own if own is not None else current
            yield stream, drawn_with
            if own is not None:
                pending.append(own)


def _streams_of(resources: DictionaryObject
                ) -> Iterator[tuple[StreamObject, DictionaryObject | None]]:
    for key in ("/XObject", "/Pattern"):
        entries = resolved(resources.get(key))
        if not isinstance(entries, DictionaryObject):
            continue
        for value in entries.values():
            stream = resolved(value)
            if isinstance(stream, StreamObject) and stream.get("/Subtype") != "/Image":
                yield stream, _resources(stream)
    fonts = resolved(resources.get("/Font"))
    if isinstance(fonts, DictionaryObject):
        for value in fonts.values():
            font = resolved(value)
            if not isinstance(font, DictionaryObject):
                continue
            procedures = resolved(font.get("/CharProcs"))
            if isinstance(procedures, DictionaryObject):
                for procedure in procedures.values():
                    stream = resolved(procedure)
                    if isinstance(stream, StreamObject):
                        yield stream, _resources(font)


def _resources(owner: DictionaryObject) -> DictionaryObject | None:
    own = resolved(owner.get("/Resources"))
    return own if isinstance(own, DictionaryObject) else None


def stream_text(stream: StreamObject, resources: DictionaryObject) -> str:
    """The text ``stream`` draws, read as a page of its own with ``resources``."""
    page = PageObject.create_blank_page(width=1000, height=1000)
    page[NameObject("/Resources")] = resources
    content = DecodedStreamObject()
    content.set_data(stream.get_data())
    page[NameObject("/Contents")] = content
    return page.extract_text()


def strings_under(value: object, *, skip: frozenset[str] = frozenset(),
                  limit: int = 100_000) -> list[str]:
    """Text strings in the object graph under ``value`` (keys in ``skip`` not followed),
    each object once; raises :class:`TooManyObjects` past ``limit`` objects."""
    found: list[str] = []
    seen: set[int] = set()
    pending = [value]
    while pending:
        current = resolved(pending.pop())
        if id(current) in seen:
            continue
        seen.add(id(current))
        if len(seen) > limit:
            raise TooManyObjects("too many objects")
        if isinstance(current, TextStringObject | ByteStringObject):
            found.append(str(current) if isinstance(current, TextStringObject)
                         else bytes(current).decode("latin-1"))
        elif isinstance(current, DictionaryObject):
            pending.extend(v for k, v in current.items() if k not in skip)
        elif isinstance(current, ArrayObject):
            pending.extend(current)
    return found
