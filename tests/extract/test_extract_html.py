"""HTML: visible text only, structure, headings, tables, links, hostile markup."""

from __future__ import annotations

import time

import pytest

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import extract
from affidavit.records import ExtractedDocument

LIMITS = IngestSettings()


def parse(html: str, limits: IngestSettings = LIMITS) -> ExtractedDocument:
    return extract(html.encode(), filename="page.html", limits=limits)


def blocks(document: ExtractedDocument) -> list[tuple[str, str]]:
    return [(p.kind, document.paragraph_text(p)) for p in document.paragraphs]


def reason(html: str, limits: IngestSettings = LIMITS) -> InputRejected:
    with pytest.raises(InputRejected) as info:
        parse(html, limits)
    return info.value


PAGE = """<!DOCTYPE html>
<html><head>
  <title> Expense   policy </title>
  <meta name="description" content="meta text must not appear">
  <style>.x { color: red }</style>
  <script>var leaked = "script text";</script>
</head>
<body>
  <nav aria-hidden="true">Skip navigation</nav>
  <h1>Expenses</h1>
  <p>Claims over &euro;500 need <a href="/approvals">approval</a>.<br>Submit monthly.</p>
  <div hidden><p>Draft: cut all budgets</p></div>
  <p style="color: red; display : none">invisible</p>
  <span style="visibility:hidden">also invisible</span>
  <template><p>template text</p></template>
  <noscript>enable scripts</noscript>
  <h2>Limits</h2>
  <ul>
    <li>Meals <b>capped</b>
    <li>Travel
      <ol><li>economy</li><li>rail</li></ol>
  </ul>
  <table>
    <tr><th>Grade</th><th>Limit</th></tr>
    <tr><td>A</td><td>1&nbsp;000</td></tr>
    <tr><td>B</td><td></td></tr>
  </table>
  <blockquote><p>Quoted rule.</p></blockquote>
  <pre>
line one
  indented two
</pre>
  <h2>Contact</h2>
  <p>Write to <a href="mailto:finance@example.com">finance</a>.</p>
</body></html>
"""


def test_visible_structure():
    document = parse(PAGE)
    assert document.format == "html"
    assert blocks(document) == [
        ("heading", "Expenses"),
        ("paragraph", "Claims over €500 need approval.\nSubmit monthly."),
        ("heading", "Limits"),
        ("list", "- Meals capped\n- Travel\n  1. economy\n  2. rail"),
        ("table", "Grade | Limit\nA | 1 000\nB |"),
        ("quote", "Quoted rule."),
        ("code", "line one\n  indented two"),
        ("heading", "Contact"),
        ("paragraph", "Write to finance."),
    ]


def test_hidden_and_non_content_text_never_appears():
    text = parse(PAGE).text
    for hidden in (
        "meta text",
        "script text",
        "color: red",
        "Skip navigation",
        "Draft",
        "invisible",
        "template text",
        "enable scripts",
        "Expense policy",
    ):
        assert hidden not in text


def test_title_heading_paths_and_links():
    document = parse(PAGE)
    assert document.title == "Expense policy"
    assert document.paragraphs[0].heading_path == ("Expenses",)
    assert document.paragraphs[3].heading_path == ("Expenses", "Limits")
    assert document.paragraphs[-1].heading_path == ("Expenses", "Contact")
    assert document.links == ("/approvals", "mailto:finance@example.com")


def test_title_falls_back_to_first_h1():
    assert parse("<h2>Minor</h2><h1>Main</h1><p>x</p>").title == "Main"


def test_links_inside_hidden_elements_are_not_collected():
    document = parse('<p>x</p><div hidden><a href="/secret">s</a></div>')
    assert document.links == ()


def test_implied_end_tags():
    document = parse("<p>one<p>two<div>three</div><p hidden>gone<p>four")
    assert blocks(document) == [
        ("paragraph", "one"),
        ("paragraph", "two"),
        ("paragraph", "three"),
        ("paragraph", "four"),
    ]


def test_page_with_only_hidden_text_is_empty():
    error = reason('<html><body><div style="display:none">secret plan</div></body></html>')
    assert error.reason_code == "EMPTY_DOCUMENT"
    assert "hidden" in error.detail


def test_page_with_only_script_is_empty():
    error = reason("<script>alert(1)</script><style>p{}</style>")
    assert error.reason_code == "EMPTY_DOCUMENT"
    assert "hidden" not in error.detail


def test_deep_nesting_is_refused():
    error = reason("<div>" * 100 + "x", IngestSettings(max_nesting_depth=64))
    assert error.reason_code == "NESTING_TOO_DEEP"


def test_unfinished_markup_hides_the_rest_of_the_page():
    assert parse("<p>kept</p><!-- never closed <p>gone</p>").text == "kept"
    assert parse('<p>kept</p><a href="x>gone').text == "kept"


@pytest.mark.parametrize(
    "html",
    [
        "x<a" * 100_000,
        "x</" * 100_000,
        "x<!--" * 100_000,
        "x<![CDATA[" * 50_000,
        "x<![foo[" * 50_000,
        "x<?" * 100_000,
        'x<a b="y>' * 50_000 + '"',
    ],
)
def test_crafted_markup_is_handled_in_linear_time(html):
    started = time.perf_counter()
    try:
        parse(html)
    except InputRejected as error:
        assert error.reason_code in {"NESTING_TOO_DEEP", "EMPTY_DOCUMENT"}
    assert time.perf_counter() - started < 2.0


def test_marked_sections_do_not_crash_the_parser():
    document = parse("<p>x</p><![if !supportLists]><p>y</p><![endif]><![ <p>z</p>")
    assert [text for _, text in blocks(document)] == ["x", "y", "z"]
