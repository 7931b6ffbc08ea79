"""DOCX: the visible body text of a Word document, with headings, lists and tables.

The package is read with :class:`~affidavit.extract.archive.SafeZip` (entry, size and ratio
caps, overlapping entries refused) and every XML part with ``defusedxml``, which refuses
any document type declaration: no entity, internal or external, is ever expanded.

What becomes text, and what deliberately does not:

* paragraphs of the main document body, in order; a paragraph whose style is ``Title``,
  ``heading N`` (or one based on them) or that has an outline level is a heading and builds
  the heading path; numbered and bulleted paragraphs form one list block per run of items;
* each table is one ``table`` block, one ``cell | cell`` line per row; a nested table's
  text stays inside its cell;
* tracked changes are read as accepted: insertions are kept, deletions and moved-away
  text are dropped;
* **hidden text never reaches the index**: runs marked hidden (``w:vanish``, directly or
  through a paragraph or character style) and hidden table rows are dropped;
* **comments are excluded**: comment marks in the body are skipped, so reviewers'
  remarks are not merged into the document's text (``word/comments.xml`` is read only to
  label what the original file carries: :mod:`affidavit.extract.docx_dropped`);
* field instructions, drawings and text boxes, headers, footers, footnotes and endnotes are
  not part of the body text and are left out.

The title is ``dc:title`` of the core properties, else the first Title paragraph, else the
first top-level heading. External hyperlinks are the document's links.

Refusals: ``MALFORMED_DOCX`` (not a Word package, unreadable XML),
``XML_ENTITY_REFUSED`` (a DTD, entity or external reference in any part), the archive
codes of :mod:`~affidavit.extract.archive`, ``NESTING_TOO_DEEP``, ``TOO_MANY_PARAGRAPHS``
and ``EMPTY_DOCUMENT``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import groupby
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract.archive import ArchiveLimits, SafeZip
from affidavit.extract.decode import EMPTY_DOCUMENT
from affidavit.extract.docx_body import (
    Block,
    BodyReader,
    StyleSheet,
    local_name,
    word_attribute,
)
from affidavit.extract.docx_dropped import dropped_content
from affidavit.extract.layout import HEADING, LIST, RenderedText
from affidavit.records import ExtractedDocument, ordered_unique

MALFORMED_DOCX = "MALFORMED_DOCX"
XML_ENTITY_REFUSED = "XML_ENTITY_REFUSED"

REASON_CODES = (MALFORMED_DOCX, XML_ENTITY_REFUSED)
"""Reason codes specific to DOCX documents (archive codes come on top)."""

_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_RELATIONSHIPS = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_OFFICE_DOCUMENT = "/officeDocument"
_STYLES = "/styles"
_HYPERLINK = "/hyperlink"
_CORE_PROPERTIES = "/core-properties"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


@dataclass(frozen=True)
class _Relationship:
    kind: str
    target: str
    external: bool


class DocxParser:
    """Parser for ``.docx`` files; reads bytes, not text."""

    formats: tuple[str, ...] = (".docx",)

    def parse_bytes(self, content: bytes, *, limits: IngestSettings) -> ExtractedDocument:
        """The body's visible text; hidden text, comments and deletions stay out."""
        if content.startswith(_OLE_SIGNATURE):
            raise InputRejected(
                MALFORMED_DOCX, "an OLE compound file: a legacy or password-protected document"
            )
        package = SafeZip(content, ArchiveLimits.from_settings(limits))
        package_rels = _relationships(package, "")
        main = _target(package_rels, _OFFICE_DOCUMENT) or "word/document.xml"
        if main not in package:
            raise InputRejected(MALFORMED_DOCX, "the package has no main document part")
        reader = _body_reader(package, main, limits)
        document = parse_part(package, main)
        blocks = list(reader.blocks(_body(document)))
        rendered = RenderedText(max_paragraphs=limits.max_paragraphs)
        title = _render(blocks, rendered)
        if not rendered.paragraphs:
            hidden = "; the only text was hidden" if reader.hidden_text else ""
            raise InputRejected(EMPTY_DOCUMENT, f"the document has no visible text{hidden}")
        core = _target(package_rels, _CORE_PROPERTIES)
        return ExtractedDocument(
            text=rendered.text,
            paragraphs=rendered.paragraphs,
            format="docx",
            title=_core_title(package, core) or title,
            links=ordered_unique(reader.links),
            dropped=dropped_content(package, main, document, reader, parse_part),
        )


def _body_reader(package: SafeZip, main: str, limits: IngestSettings) -> BodyReader:
    """A reader with the main part's styles and external hyperlink targets."""
    relationships = _relationships(package, main)
    return BodyReader(
        styles=_style_sheet(package, _target(relationships, _STYLES)),
        hyperlinks={rel_id: rel.target for rel_id, rel in relationships.items()
                    if rel.external and rel.kind.endswith(_HYPERLINK)},
        max_depth=limits.max_nesting_depth,
    )


def parse_part(package: SafeZip, name: str) -> Element:
    """One XML part of the package; DTDs and entities refused, size within the archive caps."""
    data = package.read(name)
    try:
        root: Element = fromstring(data, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise InputRejected(XML_ENTITY_REFUSED, f"{name}: {type(exc).__name__}") from exc
    except ParseError as exc:
        raise InputRejected(MALFORMED_DOCX, f"{name}: {exc}"[:300]) from exc
    return root


# ---------------------------------------------------------------------- package parts


def _relationships(package: SafeZip, part: str) -> Mapping[str, _Relationship]:
    """Relationships of ``part`` ("" for the package), targets resolved to part names."""
    folder, _, filename = part.rpartition("/")
    rels_name = posixpath.join(folder, "_rels", f"{filename}.rels")
    if rels_name not in package:
        return {}
    relationships: dict[str, _Relationship] = {}
    for element in parse_part(package, rels_name):
        if element.tag != _RELATIONSHIPS:
            continue
        external = element.get("TargetMode", "").lower() == "external"
        target = element.get("Target", "")
        resolved = target.strip() if external else _part_name(folder, target)
        if resolved:
            relationships[element.get("Id", "")] = _Relationship(
                element.get("Type", ""), resolved, external
            )
    return relationships


def _part_name(folder: str, target: str) -> str:
    """A relationship target as a part name; "" when it points outside the package."""
    path = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
    normalized = posixpath.normpath(path) if path else ""
    return "" if normalized.startswith("..") or normalized == "." else normalized


def _target(relationships: Mapping[str, _Relationship], kind: str) -> str | None:
    """The internal target of the first relationship whose type ends with ``kind``."""
    for relationship_id in sorted(relationships):
        relationship = relationships[relationship_id]
        if relationship.kind.endswith(kind) and not relationship.external:
            return relationship.target
    return None


def _style_sheet(package: SafeZip, part: str | None) -> StyleSheet:
    if part is None or part not in package:
        return StyleSheet({})
    root = parse_part(package, part)
    styles = {
        style_id: element
        for element in root
        if local_name(element.tag) == "style"
        and (style_id := word_attribute(element, "styleId")) is not None
    }
    return StyleSheet(styles, default_hidden=_default_hidden(root))


def _default_hidden(styles_root: Element) -> bool:
    """Whether the document defaults (``w:docDefaults``) make every run hidden."""
    element: Element | None = styles_root
    for name in ("docDefaults", "rPrDefault", "rPr", "vanish"):
        if element is None:
            return False
        element = next((child for child in element if local_name(child.tag) == name), None)
    if element is None:
        return False
    value = word_attribute(element, "val")
    return value is None or value.lower() not in {"0", "false", "off"}


def _body(document: Element) -> Element:
    if local_name(document.tag) != "document":
        raise InputRejected(MALFORMED_DOCX, "the main part is not a WordprocessingML document")
    for child in document:
        if local_name(child.tag) == "body":
            return child
    raise InputRejected(MALFORMED_DOCX, "the document has no body")


def _core_title(package: SafeZip, part: str | None) -> str | None:
    part = part or "docProps/core.xml"
    if part not in package:
        return None
    for element in parse_part(package, part):
        if element.tag == _DC_TITLE:
            title = " ".join((element.text or "").split())
            return title or None
    return None


# ---------------------------------------------------------------------- rendering


def _render(blocks: Iterable[Block], rendered: RenderedText) -> str | None:
    """Blocks into ``rendered`` with heading paths; returns the title the body suggests."""
    headings: list[tuple[int, str]] = []
    title: str | None = None
    first_top_heading: str | None = None
    for kind, run in groupby(blocks, key=lambda block: block.kind):
        members = list(run)
        if kind == LIST:
            rendered.add("\n".join(_list_line(block) for block in members), LIST, _path(headings))
            continue
        for block in members:
            if kind == HEADING:
                while headings and headings[-1][0] >= block.level:
                    headings.pop()
                headings.append((block.level, block.text))
                title = title or (block.text if block.level == 0 else None)
                first_top_heading = first_top_heading or (
                    block.text if block.level == 1 else None
                )
            rendered.add(block.text, kind, _path(headings))
    return title or first_top_heading


def _path(headings: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(text for _, text in headings)


def _list_line(block: Block) -> str:
    indent = "  " * block.level
    return indent + "- " + block.text.replace("\n", "\n" + indent + "  ")
