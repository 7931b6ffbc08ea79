"""The console's one Markdown renderer (raw HTML off, sanitised, markers placed after
rendering) and the rule that a refused answer's draft claims are not shown."""

from __future__ import annotations

from affidavit.service.console.markdown import markdown_html, marked_html
from affidavit.service.console.views import Segment, Source, marked, was_refused

SOURCE = Source("c1", "d1", "Title", "doc.md", "INTERNAL", "passage", src="ab12cd34")


def marker(segment: Segment, key: str) -> str:
    return f'<a class="cite" id="{key}">[{segment.number}]</a>'


def test_raw_html_and_script_links_in_markdown_stay_text() -> None:
    rendered = str(markdown_html('<b onclick="x()">hi</b> [go](javascript:alert(1)) '
                                 '![img](https://example.test/i.png)'))
    assert "<b" not in rendered and "&lt;b onclick" in rendered
    assert "javascript:" not in rendered.replace("[go](javascript:alert(1))", "")
    assert "<img" not in rendered


def test_tables_and_lists_render_as_tables_and_lists() -> None:
    rendered = str(markdown_html("| a | b |\n|---|---|\n| 1 | 2 |\n\n- x\n- y\n"))
    assert "<table>" in rendered and "<td>2</td>" in rendered
    assert rendered.count("<li>") == 2


def test_a_citation_marker_inside_a_table_cell_stays_in_the_cell() -> None:
    text = "| item | n |\n|---|---|\n| staplers [src:ab12cd34] | 14 |\n"
    html = str(marked_html(marked(text, [SOURCE]), marker, key="a"))
    cell = html.split("<td>")[1]
    assert cell.startswith('staplers <a class="cite" id="a-0">[1]</a>'), html


def test_a_source_cannot_forge_a_marker_with_placeholder_characters() -> None:
    forged = "\ue0000\ue001 and **bold** [src:ab12cd34]"
    html = str(marked_html(marked(forged, [SOURCE]), marker, key="a"))
    assert html.count('class="cite"') == 1
    assert "\ue000" not in html and "<strong>bold</strong>" in html


def test_answer_paragraphs_can_hold_a_card_with_blocks() -> None:
    html = str(marked_html(marked("One. [src:ab12cd34]\n\nTwo.", [SOURCE]), marker, key="a"))
    assert "<p>" not in html and html.count('<div class="para">') == 2


def test_a_refused_answers_draft_is_recognised_by_the_gates_rule() -> None:
    assert was_refused("REQUIRES_SPEC", ["QUESTION_NOT_ADDRESSED"], 1)
    assert was_refused("NARRATIVE_ONLY", ["QUESTION_NOT_ADDRESSED:2"], 3)
    assert was_refused("BLOCKED", ["CONTRADICTED_CLAIM:1"], 0)
    assert not was_refused("AUTHORIZED", ["ALL_CLAIMS_VERIFIED"], 2)
    # a vetted FAQ answer carries no claims and is shown
    assert not was_refused("AUTHORIZED", ["FAQ_MATCH"], 0)
