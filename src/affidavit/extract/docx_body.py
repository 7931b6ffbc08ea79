"""The body of a WordprocessingML document as blocks: what a reader of the page sees.

Used by :mod:`affidavit.extract.docx`, which documents the rules; this module applies them
to the element tree of ``word/document.xml``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from affidavit.errors import InputRejected
from affidavit.extract.layout import HEADING, LIST, PARAGRAPH, TABLE, collapse_blank_lines

NESTING_TOO_DEEP = "NESTING_TOO_DEEP"

WORD_NAMESPACES = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",  # ISO 29500 strict
)
RELATIONSHIP_NAMESPACES = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "http://purl.oclc.org/ooxml/officeDocument/relationships",
)

# Containers whose children belong to the text where they stand: content controls,
# custom XML, smart tags, inserted and moved-here revisions, simple fields, hyperlinks.
_TRANSPARENT = frozenset(
    {"sdt", "sdtContent", "customXml", "smartTag", "ins", "moveTo", "fldSimple", "hyperlink",
     "dir", "bdo"}
)
_RUN_TEXT = {"t": None, "tab": "\t", "ptab": "\t", "br": "\n", "cr": "\n", "noBreakHyphen": "-"}
_OFF = frozenset({"0", "false", "off"})


@dataclass(frozen=True)
class Block:
    """One paragraph, list item or table of the body, before rendering."""

    kind: str
    text: str
    level: int = 0  # heading level (0 for Title) or list level


class StyleSheet:
    """What the paragraph and character styles of ``styles.xml`` say, with inheritance."""

    def __init__(self, styles: Mapping[str, Element], default_hidden: bool = False) -> None:
        self._styles = styles
        self.default_hidden = default_hidden

    def hidden(self, style_id: str | None) -> bool | None:
        """Whether the style (or one it is based on) hides its text; None when unsaid."""
        for style in self._chain(style_id):
            vanish = _switch(_find(_find(style, "rPr"), "vanish"))
            if vanish is not None:
                return vanish
        return None

    def heading_level(self, style_id: str | None) -> int | None:
        """0 for a Title style, N for "heading N" or an outline level N-1; else None."""
        for style in self._chain(style_id):
            name = (_value(_find(style, "name")) or "").strip().lower()
            if name == "title":
                return 0
            if name.startswith("heading ") and name[8:].isdigit():
                return int(name[8:])
            outline = _value(_find(_find(style, "pPr"), "outlineLvl"))
            if outline is not None and outline.isdigit() and int(outline) < 9:
                return int(outline) + 1
        return None

    def numbered(self, style_id: str | None) -> bool:
        """Whether the style makes its paragraphs list items."""
        return any(_find(_find(style, "pPr"), "numPr") is not None
                   for style in self._chain(style_id))

    def _chain(self, style_id: str | None) -> Iterator[Element]:
        seen: set[str] = set()
        while style_id is not None and style_id not in seen and len(seen) < 32:
            seen.add(style_id)
            style = self._styles.get(style_id)
            if style is None:
                return
            yield style
            style_id = _value(_find(style, "basedOn"))


@dataclass
class BodyReader:
    """Walks ``w:body`` into :class:`Block` values, collecting hyperlinks on the way."""

    styles: StyleSheet
    hyperlinks: Mapping[str, str]
    max_depth: int
    links: list[str] = field(default_factory=list)
    hidden_text: bool = False
    # ids of the text nodes rendered, and of those skipped as hidden: every other text
    # node of the part is dropped content (affidavit.extract.docx_dropped)
    rendered: set[int] = field(default_factory=set)
    hidden: set[int] = field(default_factory=set)

    def blocks(self, container: Element, depth: int = 0) -> Iterator[Block]:
        """Paragraphs and tables of ``container`` in reading order."""
        self._check_depth(depth)
        for child in container:
            name = local_name(child.tag)
            if name == "p":
                block = self._paragraph(child, depth + 1)
                if block is not None:
                    yield block
            elif name == "tbl":
                table = self._table(child, depth + 1)
                if table:
                    yield Block(TABLE, table)
            elif name in _TRANSPARENT:
                yield from self.blocks(child, depth + 1)

    # ------------------------------------------------------------------ paragraphs

    def _paragraph(self, paragraph: Element, depth: int) -> Block | None:
        properties = _find(paragraph, "pPr")
        style_id = _value(_find(properties, "pStyle"))
        style_hidden = self.styles.hidden(style_id)
        hidden = self.styles.default_hidden if style_hidden is None else style_hidden
        text = collapse_blank_lines("".join(self._inline(paragraph, hidden, depth)))
        if not text.strip():
            return None
        level = _outline_level(properties)
        if level is None:
            level = self.styles.heading_level(style_id)
        if level is not None:
            return Block(HEADING, " ".join(text.split()), level)
        numbering = _find(properties, "numPr")
        if numbering is not None:
            list_level = _list_level(numbering)
        else:
            list_level = 0 if self.styles.numbered(style_id) else None
        if list_level is not None:
            return Block(LIST, text.strip(), list_level)
        return Block(PARAGRAPH, text)

    def _inline(self, element: Element, hidden: bool, depth: int) -> Iterator[str]:
        """Visible text of runs under ``element``; deleted, hidden and field code text skipped."""
        self._check_depth(depth)
        for child in element:
            name = local_name(child.tag)
            if name == "r":
                yield from self._run(child, hidden)
            elif name in _TRANSPARENT:
                if name == "hyperlink":
                    self._note_link(child)
                yield from self._inline(child, hidden, depth + 1)

    def _run(self, run: Element, paragraph_hidden: bool) -> Iterator[str]:
        properties = _find(run, "rPr")
        if self._run_hidden(properties, paragraph_hidden):
            self.hidden_text = self.hidden_text or any(
                local_name(child.tag) == "t" and (child.text or "").strip() for child in run
            )
            self.hidden.update(id(child) for child in run)
            return
        for child in run:
            name = local_name(child.tag)
            if name in _RUN_TEXT:
                self.rendered.add(id(child))
                yield (child.text or "") if name == "t" else str(_RUN_TEXT[name])

    def _run_hidden(self, properties: Element | None, paragraph_hidden: bool) -> bool:
        for switch in ("vanish", "specVanish"):
            direct = _switch(_find(properties, switch))
            if direct is not None:
                return direct
        character_hidden = self.styles.hidden(_value(_find(properties, "rStyle")))
        return paragraph_hidden if character_hidden is None else character_hidden

    def _note_link(self, hyperlink: Element) -> None:
        for namespace in RELATIONSHIP_NAMESPACES:
            target = self.hyperlinks.get(hyperlink.get(f"{{{namespace}}}id", ""))
            if target:
                self.links.append(target)
                return

    # ------------------------------------------------------------------ tables

    def _table(self, table: Element, depth: int) -> str:
        rows: list[str] = []
        for row in self._members(table, "tr", depth):
            if _switch(_find(_find(row, "trPr"), "hidden")):
                continue
            cells = [self._cell(cell, depth + 2) for cell in self._members(row, "tc", depth + 1)]
            line = " | ".join(cells)
            if line.replace("|", "").strip():
                rows.append(line)
        return "\n".join(rows)

    def _cell(self, cell: Element, depth: int) -> str:
        return " ".join(" ".join(block.text.split()) for block in self.blocks(cell, depth))

    def _members(self, element: Element, name: str, depth: int) -> Iterator[Element]:
        """Children named ``name``, looking through content controls and revisions."""
        self._check_depth(depth)
        for child in element:
            child_name = local_name(child.tag)
            if child_name == name:
                yield child
            elif child_name in _TRANSPARENT:
                yield from self._members(child, name, depth + 1)

    def _check_depth(self, depth: int) -> None:
        if depth > self.max_depth:
            raise InputRejected(NESTING_TOO_DEEP, f"elements nested deeper than {self.max_depth}")


@functools.lru_cache(maxsize=1024)
def local_name(tag: str) -> str:
    """The local name of a WordprocessingML tag; empty for any other namespace."""
    namespace, _, name = tag[1:].partition("}")
    return name if tag.startswith("{") and namespace in WORD_NAMESPACES else ""


def word_attribute(element: Element, name: str) -> str | None:
    """The ``w:``-namespaced attribute ``name`` of ``element``."""
    for namespace in WORD_NAMESPACES:
        value = element.get(f"{{{namespace}}}{name}")
        if value is not None:
            return value
    return None


def _find(element: Element | None, name: str) -> Element | None:
    if element is None:
        return None
    for child in element:
        if local_name(child.tag) == name:
            return child
    return None


def _value(element: Element | None) -> str | None:
    return word_attribute(element, "val") if element is not None else None


def _switch(element: Element | None) -> bool | None:
    """An on/off property: absent is None, present is on unless its value says off."""
    if element is None:
        return None
    value = _value(element)
    return value is None or value.strip().lower() not in _OFF


def _outline_level(properties: Element | None) -> int | None:
    outline = _value(_find(properties, "outlineLvl"))
    if outline is not None and outline.isdigit() and int(outline) < 9:
        return int(outline) + 1
    return None


def _list_level(numbering: Element) -> int | None:
    if _value(_find(numbering, "numId")) == "0":
        return None  # numId 0 removes the numbering a style would add
    level = _value(_find(numbering, "ilvl")) or "0"
    return min(int(level), 8) if level.isdigit() else 0
