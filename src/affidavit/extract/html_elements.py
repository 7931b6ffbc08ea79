"""The HTML vocabulary the page reader needs: which elements are void, dropped, blocks."""

from __future__ import annotations

import re

VOID = frozenset(
    {
        "area",
        "base",
        "basefont",
        "bgsound",
        "br",
        "col",
        "embed",
        "frame",
        "hr",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
DROPPED = frozenset({"script", "style", "template", "noscript", "iframe", "head"})
HEADINGS = {f"h{level}": level for level in range(1, 7)}
LISTS = frozenset({"ul", "ol", "menu", "dir"})
CELLS = frozenset({"td", "th"})
TABLE_PARTS = CELLS | {"tr", "thead", "tbody", "tfoot", "caption"}
BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    }
) | frozenset(HEADINGS)
# An implied end tag never reaches past these elements.
SCOPE_LIMITS = frozenset({"table", "td", "th", "caption", "button", "html", "template"})
HIDING_STYLE = re.compile(r"(?:^|[;\s])(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)


def hides(attrs: list[tuple[str, str | None]]) -> bool:
    """True when the attributes hide the element: ``hidden``, ``aria-hidden``, inline style."""
    for name, value in attrs:
        if name == "hidden":
            return True
        if name == "aria-hidden" and (value or "").strip().lower() == "true":
            return True
        if name == "style" and value and HIDING_STYLE.search(value):
            return True
    return False
