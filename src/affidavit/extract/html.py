"""HTML: the visible text of a page, with its block structure, headings, tables and links.

Built on the standard library's tolerant ``html.parser``, with a small element stack that
applies the usual implied end tags (a new ``<p>``, ``<li>``, ``<tr>`` or ``<td>`` closes the
previous one). What a reader cannot see is dropped with everything inside it: ``script``,
``style``, ``template``, ``noscript``, ``iframe`` and the ``head`` (its ``<title>`` becomes the
document title), and any element with a ``hidden`` attribute, ``aria-hidden="true"``, or an
inline ``display: none`` / ``visibility: hidden`` style.

Rendering: each block element becomes a paragraph; ``h1``-``h6`` are headings and build the
heading path (a heading's own path ends with itself); items of one list, nested lists
included, form one ``list`` paragraph written ``- item`` or ``1. item``; the rows of one
table form one ``table`` paragraph, one ``cell | cell`` line per row; ``pre`` is ``code``
with its line breaks kept; ``blockquote`` is ``quote``. Elsewhere whitespace is collapsed
and ``<br>`` is a line break.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from html.parser import HTMLParser as _StdlibHTMLParser
from itertools import groupby

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract.decode import EMPTY_DOCUMENT
from affidavit.extract.dropped import (
    HTML_ATTRIBUTE,
    HTML_COMMENT,
    HTML_HIDDEN,
    HTML_META,
    HTML_NOT_RENDERED,
    DroppedCollector,
)
from affidavit.extract.html_elements import (
    BLOCKS,
    CELLS,
    DROPPED,
    HEADINGS,
    LISTS,
    SCOPE_LIMITS,
    TABLE_PARTS,
    VOID,
    hides,
)
from affidavit.extract.layout import (
    CODE,
    HEADING,
    LIST,
    PARAGRAPH,
    QUOTE,
    TABLE,
    RenderedText,
    expansion_refused,
    rendered_budget,
)
from affidavit.records import ExtractedDocument, ordered_unique

NESTING_TOO_DEEP = "NESTING_TOO_DEEP"
MALFORMED_HTML = "MALFORMED_HTML"

_LINE_BREAK = "\x00"  # never in decoded text: NUL is refused before parsing


@dataclass(eq=False)
class _Element:
    """One open element; ``dropped`` and ``concealed`` are inherited by its children."""

    tag: str
    serial: int
    dropped: bool = False
    concealed: bool = False
    marker: str = ""
    counter: int = 0
    parts: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Context:
    """Where the text being collected sits: its kind, list or table group, list item."""

    kind: str
    group: int | None = None
    level: int = 0
    item: _Element | None = None
    depth: int = 0


@dataclass(frozen=True)
class _Block:
    kind: str
    text: str
    heading_path: tuple[str, ...]
    group: int | None


class HtmlParser:
    """Parser for ``.html`` and ``.htm`` files."""

    formats: tuple[str, ...] = (".html", ".htm")

    def parse(self, text: str, *, limits: IngestSettings) -> ExtractedDocument:
        """The visible text of the page as paragraphs; hidden content never appears."""
        budget = rendered_budget(len(text), limits)
        reader = _PageReader(max_depth=limits.max_nesting_depth, max_chars=budget)
        try:
            reader.feed(text)
            reader.close()
        except AssertionError as exc:  # the standard parser's reaction to some garbage
            raise InputRejected(MALFORMED_HTML, f"unreadable markup: {exc}"[:300]) from exc
        rendered = RenderedText(max_paragraphs=limits.max_paragraphs, max_chars=budget)
        for block in _merge_groups(reader.blocks):
            rendered.add(block.text, block.kind, block.heading_path)
        if not rendered.paragraphs:
            detail = "the page has no visible text"
            if reader.hidden_text:
                detail += "; the only text was hidden"
            raise InputRejected(EMPTY_DOCUMENT, detail)
        return ExtractedDocument(
            text=rendered.text,
            paragraphs=rendered.paragraphs,
            format="html",
            title=reader.title or reader.first_h1,
            links=ordered_unique(reader.links),
            dropped=reader.dropped.entries(),
        )


class _PageReader(_StdlibHTMLParser):
    """Turns parser events into visible blocks, a title and links."""

    def __init__(self, *, max_depth: int, max_chars: int | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[_Block] = []
        # List items are indented on every line, by depth: blocks are counted against
        # the rendered-text budget as they are made, not once the page is read.
        self._max_chars = max_chars
        self._block_chars = 0
        self.links: list[str] = []
        self.title: str | None = None
        self.first_h1: str | None = None
        self.hidden_text = False
        self._max_depth = max_depth
        self._stack: list[_Element] = []
        self._serial = 0
        self._buffer: list[str] = []
        self._context: _Context | None = None
        self._headings: list[tuple[int, str]] = []
        self._title: _Element | None = None  # the <title> being read, if any
        # What the page holds that no reader sees: comments, hidden and unrendered
        # elements, attribute values, markup left unfinished.
        self.dropped = DroppedCollector()

    # ------------------------------------------------------------------ parser events

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._note_attributes(attrs)
        if tag in VOID:
            if tag == "br":
                self._line_break()
            elif tag == "hr":
                self._flush()
            return
        self._imply_end_tags(tag)
        if tag in BLOCKS:
            self._flush()
        element = self._open(tag, attrs)
        if tag == "a" and not (element.dropped or element.concealed):
            href = dict(attrs).get("href")
            if href and href.strip():
                self.links.append(href.strip())
        elif tag == "title" and self.title is None:
            self._title = element
        elif tag == "li":
            self._mark_item(element)
        elif tag == "ol":
            start = dict(attrs).get("start") or "1"
            element.counter = int(start) if start.strip().isdigit() and len(start) < 10 else 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "br":
            self._line_break()
            return
        for position in range(len(self._stack) - 1, -1, -1):
            if self._stack[position].tag == tag:
                self._close_down_to(position)
                return

    def handle_data(self, data: str) -> None:
        data = data.replace(_LINE_BREAK, "")
        if self._title is not None:
            self._title.parts.append(data)
            return
        element = self._stack[-1] if self._stack else None
        if element is not None and element.dropped:
            self.dropped.add(HTML_NOT_RENDERED, data)
            return
        if element is not None and element.concealed:
            self.hidden_text = self.hidden_text or bool(data.strip())
            self.dropped.add(HTML_HIDDEN, data)
            return
        cell = self._open_cell()
        if cell is not None:
            cell.parts.append(data)
        elif self._buffer or data.strip():
            if self._context is None:
                self._context = self._current_context()
            self._buffer.append(data)

    def handle_comment(self, data: str) -> None:
        self.dropped.add(HTML_COMMENT, data)

    def handle_pi(self, data: str) -> None:
        self.dropped.add(HTML_NOT_RENDERED, data)

    def handle_decl(self, decl: str) -> None:
        self.dropped.add(HTML_NOT_RENDERED, decl)

    def unknown_decl(self, data: str) -> None:
        self.dropped.add(HTML_NOT_RENDERED, data)

    def _note_attributes(self, attrs: list[tuple[str, str | None]]) -> None:
        """Attribute values (a meta description, a tooltip, a link target) are in the
        file and in no paragraph."""
        for name, value in attrs:
            if value:
                self.dropped.add(HTML_META if name == "content" else HTML_ATTRIBUTE, value)

    def close(self) -> None:
        super().close()
        self._close_down_to(0)
        self._flush()

    # ------------------------------------------------------------------ unfinished markup
    # The whole page is fed at once, so markup still open when the parser asks for more
    # data runs to the end of the page. As in browsers, the rest of the page belongs to
    # that unfinished tag, comment or declaration and is not visible. Swallowing it here
    # also keeps parsing linear: left alone, the parser re-scans the remaining text from
    # every later "<", which is quadratic on crafted input.

    def parse_starttag(self, i: int) -> int:
        return self._or_to_end(i, super().parse_starttag(i))

    def parse_endtag(self, i: int) -> int:
        return self._or_to_end(i, super().parse_endtag(i))

    def parse_comment(self, i: int, report: bool = True) -> int:
        return self._or_to_end(i, super().parse_comment(i, report))

    def parse_pi(self, i: int) -> int:
        return self._or_to_end(i, super().parse_pi(i))

    def parse_html_declaration(self, i: int) -> int:
        if self.rawdata.startswith("<![", i):
            # Marked sections mean nothing in HTML (browsers read a bogus comment), and the
            # generic handler raises on unknown keywords.
            return self._or_to_end(i, self.parse_bogus_comment(i))
        return self._or_to_end(i, super().parse_html_declaration(i))

    def _or_to_end(self, start: int, end: int) -> int:
        if end >= 0:
            return end
        self.dropped.add(HTML_NOT_RENDERED, self.rawdata[start:])
        return len(self.rawdata)

    # ------------------------------------------------------------------ the element stack

    def _open(self, tag: str, attrs: list[tuple[str, str | None]]) -> _Element:
        if len(self._stack) >= self._max_depth:
            raise InputRejected(
                NESTING_TOO_DEEP, f"elements nested deeper than {self._max_depth} levels"
            )
        parent = self._stack[-1] if self._stack else None
        self._serial += 1
        element = _Element(
            tag,
            self._serial,
            dropped=tag in DROPPED or (parent is not None and parent.dropped),
            concealed=hides(attrs) or (parent is not None and parent.concealed),
        )
        self._stack.append(element)
        return element

    def _imply_end_tags(self, tag: str) -> None:
        """Close what a new ``tag`` implicitly ends, as browsers do."""
        if tag in BLOCKS and tag not in TABLE_PARTS:
            self._close_open({"head"}, limits=frozenset())
            self._close_open({"p"}, limits=SCOPE_LIMITS)
        if tag in HEADINGS and self._stack and self._stack[-1].tag in HEADINGS:
            self._close_down_to(len(self._stack) - 1)
        if tag == "a":
            self._close_open({"a"}, limits=SCOPE_LIMITS)  # links do not nest
        elif tag == "li":
            self._close_open({"li"}, limits=LISTS | SCOPE_LIMITS)
        elif tag in {"dd", "dt"}:
            self._close_open({"dd", "dt"}, limits={"dl"} | SCOPE_LIMITS)
        elif tag == "tr":
            self._close_open({"tr"}, limits={"table"})
        elif tag in CELLS:
            self._close_open(CELLS, limits={"tr", "table"})
        elif tag in {"thead", "tbody", "tfoot"}:
            self._close_open({"thead", "tbody", "tfoot"}, limits={"table"})

    def _close_open(self, targets: AbstractSet[str], *, limits: AbstractSet[str]) -> None:
        for position in range(len(self._stack) - 1, -1, -1):
            tag = self._stack[position].tag
            if tag in targets:
                self._close_down_to(position)
                return
            if tag in limits:
                return

    def _close_down_to(self, position: int) -> None:
        while len(self._stack) > position:
            self._on_close(self._stack.pop())

    def _on_close(self, element: _Element) -> None:
        if element.tag in BLOCKS:
            self._flush()
        if element is self._title:
            self._title = None
            self.title = " ".join("".join(element.parts).split()) or None
        elif element.tag in CELLS:
            self._finish_cell(element)
        elif element.tag == "tr" and not (element.dropped or element.concealed):
            row = " | ".join(element.cells)
            if row.replace("|", "").strip():
                self._add_block(TABLE, row, self._enclosing_serial({"table"}) or element.serial)

    # ------------------------------------------------------------------ text collection

    def _line_break(self) -> None:
        cell = self._open_cell()
        if cell is not None:
            cell.parts.append(" ")
        elif self._buffer:
            self._buffer.append(_LINE_BREAK)

    def _open_cell(self) -> _Element | None:
        for element in reversed(self._stack):
            if element.tag in CELLS:
                return element
            if element.tag == "table":
                return None
        return None

    def _finish_cell(self, cell: _Element) -> None:
        text = " ".join("".join(cell.parts).split())
        for element in reversed(self._stack):
            if element.tag == "tr":
                element.cells.append(text)
                return
            if element.tag == "table":
                break
        if text and not (cell.dropped or cell.concealed):
            self._add_block(PARAGRAPH, text, None)  # a cell outside any row

    def _mark_item(self, item: _Element) -> None:
        for element in reversed(self._stack[:-1]):
            if element.tag in LISTS:
                if element.tag == "ol":
                    item.marker = f"{element.counter}. "
                    element.counter += 1
                else:
                    item.marker = "- "
                return
        item.marker = "- "

    def _current_context(self) -> _Context:
        lists = [element for element in self._stack if element.tag in LISTS | {"dl"}]
        group = lists[0].serial if lists else None
        for element in reversed(self._stack):
            if element.tag == "pre":
                return _Context(CODE)
            if element.tag in HEADINGS:
                return _Context(HEADING, level=HEADINGS[element.tag])
            if element.tag in {"li", "dd", "dt"}:
                return _Context(LIST, group, item=element, depth=max(len(lists) - 1, 0))
            if element.tag == "blockquote":
                return _Context(QUOTE)
        return _Context(PARAGRAPH)

    def _flush(self) -> None:
        context, raw = self._context, "".join(self._buffer)
        self._buffer, self._context = [], None
        if context is None:
            return
        if context.kind == CODE:
            self._add_block(CODE, _code_text(raw), None)
            return
        text = _flowing_text(raw)
        if not text:
            return
        if context.kind == HEADING:
            self._add_heading(context.level, " ".join(text.split()))
        elif context.kind == LIST:
            self._charge(len(text) + text.count("\n") * (2 * context.depth + 2))
            self._add_block(LIST, _list_line(context, text), context.group)
        else:
            self._add_block(context.kind, text, None)

    def _add_heading(self, level: int, title: str) -> None:
        while self._headings and self._headings[-1][0] >= level:
            self._headings.pop()
        self._headings.append((level, title))
        if level == 1 and self.first_h1 is None:
            self.first_h1 = title
        self._add_block(HEADING, title, None)

    def _charge(self, chars: int) -> None:
        """Refuse the page once its blocks would pass the rendered-text budget."""
        if self._max_chars is not None and self._block_chars + chars > self._max_chars:
            raise expansion_refused(self._max_chars)

    def _add_block(self, kind: str, text: str, group: int | None) -> None:
        self._charge(len(text))
        self._block_chars += len(text)
        if text.strip():
            path = tuple(title for _, title in self._headings)
            self.blocks.append(_Block(kind, text, path, group))

    def _enclosing_serial(self, tags: set[str]) -> int | None:
        for element in reversed(self._stack):
            if element.tag in tags:
                return element.serial
        return None


def _flowing_text(raw: str) -> str:
    """Whitespace collapsed within each line; lines exist only where ``<br>`` put them."""
    lines = (" ".join(line.split()) for line in raw.split(_LINE_BREAK))
    return "\n".join(line for line in lines if line)


def _code_text(raw: str) -> str:
    lines = [line.rstrip() for line in raw.replace(_LINE_BREAK, "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def _list_line(context: _Context, text: str) -> str:
    indent = "  " * context.depth
    item = context.item
    if item is not None and item.marker:
        marker, item.marker = item.marker, ""
        return indent + marker + text.replace("\n", "\n" + indent + "  ")
    return indent + "  " + text.replace("\n", "\n" + indent + "  ")


def _merge_groups(blocks: list[_Block]) -> Iterator[_Block]:
    """Adjacent blocks of one list or one table become one block, one line each."""
    for (kind, group), run in groupby(blocks, key=_group_key):
        members = list(run)
        if group is None:
            yield from members
        else:
            text = "\n".join(block.text for block in members)
            yield _Block(kind, text, members[0].heading_path, group)


def _group_key(block: _Block) -> tuple[str, int | None]:
    return block.kind, block.group
