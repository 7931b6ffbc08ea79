"""What a Word package holds beyond its visible body text, by kind, for labelling.

Used by :mod:`affidavit.extract.docx`. In the main document part every text node the body
reader did not render is dropped content: tracked deletions and moved-away text, hidden
runs, field instructions, text boxes and drawings, hidden rows; so are the alternative
texts of pictures. Every other XML part (comments, headers, footers, footnotes, document
properties, custom XML) is read for its text. Parts that are not XML and not a picture
(embedded objects, macros) cannot be read: they are unclassified.
"""

from __future__ import annotations

from collections.abc import Callable
from xml.etree.ElementTree import Element

from affidavit.errors import InputRejected
from affidavit.extract.archive import SafeZip
from affidavit.extract.docx_body import BodyReader
from affidavit.extract.dropped import (
    DOCX_COMMENT,
    DOCX_DELETED_RUN,
    DOCX_EMBEDDED,
    DOCX_FIELD_INSTRUCTION,
    DOCX_HIDDEN_RUN,
    DOCX_NOT_RENDERED,
    DOCX_PART,
    DOCX_PROPERTIES,
    DroppedCollector,
)
from affidavit.records import DroppedContent

# Pictures: their pixels are not text the extractor could read or drop.
_PICTURES = frozenset({"png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff", "emf", "wmf",
                       "ico", "webp", "wdp", "jfif"})
_XML = frozenset({"xml", "vml"})
_DELETED = frozenset({"del", "moveFrom"})
_INSTRUCTIONS = frozenset({"instrText", "delInstrText"})
# Attributes that hold words a reader does not see on the page: alternative text of a
# picture, the string of WordArt.
_TEXT_ATTRIBUTES = frozenset({"descr", "title", "string", "alt"})


def dropped_content(package: SafeZip, main: str, document: Element, reader: BodyReader,
                    parse: Callable[[SafeZip, str], Element]) -> tuple[DroppedContent, ...]:
    """Dropped content of the package whose main part ``document`` ``reader`` rendered."""
    dropped = DroppedCollector()
    _main_part(document, reader, dropped)
    for name in package.names:
        if name.lower() == main.lower() or name.endswith("/"):
            continue
        kind = _part_kind(name)
        if kind is None:
            continue
        if kind == DOCX_EMBEDDED:
            dropped.add_unread(kind)
            continue
        try:
            root = parse(package, name)
        except InputRejected:
            dropped.add_unread(kind)  # a side part that cannot be read is not known
            continue
        for _, text, _ in _texts(root):
            dropped.add(kind, text)
    return dropped.entries()


def _part_kind(name: str) -> str | None:
    lowered = name.lower()
    leaf = lowered.rsplit("/", 1)[-1]
    extension = leaf.rsplit(".", 1)[-1] if "." in leaf else ""
    if leaf == "[content_types].xml" or extension == "rels" or extension in _PICTURES:
        return None
    if extension not in _XML:
        return DOCX_EMBEDDED
    if leaf.startswith("comments"):
        return DOCX_COMMENT
    if lowered.startswith("docprops/"):
        return DOCX_PROPERTIES
    return DOCX_PART


def _main_part(document: Element, reader: BodyReader, dropped: DroppedCollector) -> None:
    for element, text, deleted in _texts(document):
        if id(element) in reader.rendered:
            continue
        dropped.add(DOCX_DELETED_RUN if deleted else _node_kind(element, reader), text)


def _node_kind(element: Element, reader: BodyReader) -> str:
    name = _local(element.tag)
    if name == "delText":
        return DOCX_DELETED_RUN
    if name in _INSTRUCTIONS:
        return DOCX_FIELD_INSTRUCTION
    if id(element) in reader.hidden:
        return DOCX_HIDDEN_RUN
    return DOCX_NOT_RENDERED


def _texts(root: Element) -> list[tuple[Element, str, bool]]:
    """Every non-blank text node and text attribute under ``root``, in document order,
    walked without recursion, each marked when it lies inside a deletion."""
    found: list[tuple[Element, str, bool]] = []
    stack = [(root, False)]
    while stack:
        element, deleted = stack.pop()
        deleted = deleted or _local(element.tag) in _DELETED
        if element.text and element.text.strip():
            found.append((element, element.text, deleted))
        for attribute, value in element.attrib.items():
            if _local(attribute) in _TEXT_ATTRIBUTES and value.strip():
                found.append((element, value, deleted))
        stack.extend((child, deleted) for child in reversed(list(element)))
    return found


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
