"""Markdown in answers, citation cards and the reader, rendered as HTML safely.

One renderer for every text the console shows as Markdown: markdown-it-py (CommonMark plus
tables) with raw HTML off, so markup in a document or a draft is shown as text; images off,
so no text makes the browser fetch anything; and the result passed through an allow-list
sanitiser (nh3) as a second wall, so only the tags Markdown itself produces reach the page.

Citation markers are not Markdown: an answer's ``[src:…]`` tags become numbered markers with
their passage card. They are put in after rendering, in the places that private-use
placeholders held through it, so a marker inside a table cell or a list item stays there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

if TYPE_CHECKING:
    from affidavit.service.console.views import Segment

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_MD.enable("table").disable("image")
_TAGS = frozenset({"p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol",
                   "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr",
                   "th", "td", "a", "del", "s"})
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
_SCHEMES = frozenset({"http", "https", "mailto"})
# Placeholders for markers: private-use characters, which Markdown leaves alone and which a
# source's own text cannot use to forge a marker (they are removed from it first).
_OPEN, _CLOSE = "\ue000", "\ue001"
_PLACEHOLDER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
_PRIVATE = re.compile(f"[{_OPEN}{_CLOSE}]")


def _clean(rendered: str) -> str:
    return nh3.clean(rendered, tags=set(_TAGS), attributes={k: set(v) for k, v in
                                                            _ATTRIBUTES.items()},
                     url_schemes=set(_SCHEMES), link_rel="noopener noreferrer nofollow",
                     strip_comments=True)


def markdown_html(text: str, *, inline: bool = False) -> Markup:
    """``text`` as sanitised HTML: block Markdown (paragraphs, lists, tables), or inline
    only (emphasis, code, links) for a sentence shown inside a line."""
    return _render(_PRIVATE.sub("", text), inline)


def _render(source: str, inline: bool) -> Markup:
    rendered = _MD.renderInline(source) if inline else _MD.render(source)
    return Markup(_clean(rendered))  # noqa: S704 - sanitised by the allow-list above


MarkerHtml = Callable[["Segment", str], str]


def marked_html(segments: Sequence[Segment], marker: MarkerHtml, *, key: str,
                inline: bool = False) -> Markup:
    """Answer text as sanitised Markdown with each citation segment drawn by ``marker``
    (given the segment and an id unique on the page, made from ``key``)."""
    parts: list[str] = []
    cites: list[Segment] = []
    for segment in segments:
        if segment.source is None:
            parts.append(_PRIVATE.sub("", segment.text))
        else:
            parts.append(f"{_OPEN}{len(cites)}{_CLOSE}")
            cites.append(segment)
    # A card holds block Markdown (a passage's paragraphs, its table), and a paragraph
    # cannot hold a block: the answer's paragraphs are divisions. Escaped text never holds
    # "<p>", so only the renderer's own tags are replaced.
    body = str(_render("".join(parts), inline))
    body = body.replace("<p>", '<div class="para">').replace("</p>", "</div>")

    def put(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return marker(cites[n], f"{key}-{n}")
    return Markup(_PLACEHOLDER.sub(put, body))  # noqa: S704 - markers escape their own text
