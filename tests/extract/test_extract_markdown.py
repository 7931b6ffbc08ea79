"""Markdown: front matter, block structure, heading paths, links and span invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import KINDS, extract
from affidavit.records import ExtractedDocument

LIMITS = IngestSettings()


def parse(text: str, limits: IngestSettings = LIMITS) -> ExtractedDocument:
    return extract(text.encode(), filename="doc.md", limits=limits)


def blocks(document: ExtractedDocument) -> list[tuple[str, str]]:
    return [(p.kind, document.paragraph_text(p)) for p in document.paragraphs]


def assert_span_invariants(document: ExtractedDocument) -> None:
    previous_end = 0
    for index, paragraph in enumerate(document.paragraphs):
        piece = document.text[paragraph.start : paragraph.end]
        assert paragraph.index == index
        assert piece and piece == piece.strip()
        assert paragraph.start >= previous_end
        assert paragraph.kind in KINDS
        previous_end = paragraph.end


POLICY = """---
title: Leave policy
source_id: HR-LEAVE
acl: [group:hr#member, "user:cfo"]
classification: confidential
date: 2024-03-01
tags: [hr]
---
# Annual leave

Every employee gets [25 days](https://intranet.example/leave) per year.
See also <https://intranet.example/faq>.

## Eligibility

- permanent staff
- fixed-term staff
  after probation

- contractors are excluded

| Grade | Days |
|-------|-----:|
| A     | 25   |

```python
# not a heading
days = 25

print(days)  # [not](a-link)
```

> Approved by the board.

### Carry-over
Up to five days.

# Appendix
Text.
"""


def test_front_matter_becomes_metadata_and_is_removed_from_text():
    document = parse(POLICY)
    assert document.format == "markdown"
    assert document.metadata.source_id == "HR-LEAVE"
    assert document.metadata.acl == ("group:hr#member", "user:cfo")
    assert document.metadata.classification == "CONFIDENTIAL"
    assert document.title == "Leave policy"
    assert "source_id" not in document.text
    assert document.text.startswith("# Annual leave")


def test_blocks_and_kinds():
    document = parse(POLICY)
    assert blocks(document) == [
        ("heading", "# Annual leave"),
        (
            "paragraph",
            "Every employee gets [25 days](https://intranet.example/leave) per year.\n"
            "See also <https://intranet.example/faq>.",
        ),
        ("heading", "## Eligibility"),
        (
            "list",
            "- permanent staff\n- fixed-term staff\n  after probation\n\n"
            "- contractors are excluded",
        ),
        ("table", "| Grade | Days |\n|-------|-----:|\n| A     | 25   |"),
        ("code", "```python\n# not a heading\ndays = 25\n\nprint(days)  # [not](a-link)\n```"),
        ("quote", "> Approved by the board."),
        ("heading", "### Carry-over"),
        ("paragraph", "Up to five days."),
        ("heading", "# Appendix"),
        ("paragraph", "Text."),
    ]
    assert_span_invariants(document)


def test_heading_paths_nest_and_reset():
    document = parse(POLICY)
    paths = [(document.paragraph_text(p)[:14], p.heading_path) for p in document.paragraphs]
    assert paths[0] == ("# Annual leave", ("Annual leave",))
    assert paths[3][1] == ("Annual leave", "Eligibility")
    assert paths[7][1] == ("Annual leave", "Eligibility", "Carry-over")
    assert paths[8][1] == ("Annual leave", "Eligibility", "Carry-over")
    assert paths[9][1] == ("Appendix",)


def test_links_are_collected_in_order_outside_code():
    document = parse(POLICY)
    assert document.links == (
        "https://intranet.example/leave",
        "https://intranet.example/faq",
    )


def test_title_falls_back_to_first_level_one_heading():
    document = parse("Intro\n\n## Minor\n\n# Main title #\n\ntext\n")
    assert document.title == "Main title"
    assert parse("no headings here").title is None


def test_setext_headings():
    document = parse("Title\n=====\n\nbody\n\nSection\n-------\nmore\n")
    assert blocks(document)[0] == ("heading", "Title\n=====")
    assert document.title == "Title"
    assert document.paragraphs[3].heading_path == ("Title", "Section")


def test_unclosed_fence_runs_to_the_end():
    document = parse("text\n\n```\ncode\n\n# still code\n")
    assert blocks(document)[-1] == ("code", "```\ncode\n\n# still code")


def test_thematic_breaks_and_empty_headings_are_not_paragraphs():
    document = parse("one\n\n***\n\n#\n\ntwo\n")
    assert blocks(document) == [("paragraph", "one"), ("paragraph", "two")]


def test_image_and_reference_links():
    document = parse('![logo](logo.png) and [a](a.md "title")\n\n[ref]: https://ref.example\n')
    assert document.links == ("a.md", "https://ref.example")


def test_no_front_matter_means_empty_metadata():
    document = parse("# Title\n")
    assert document.metadata.acl is None and document.metadata.title is None


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: [unclosed\n---\nbody\n",
        "---\na: &x 1\nb: *x\n---\nbody\n",
        "---\n!!python/object/apply:os.system ['id']\n---\nbody\n",
        "---\n- a list\n---\nbody\n",
        "---\nacl: 5\n---\nbody\n",
        "---\ntitle: never closed\n\nbody\n",
        "---\ntitle: a\ntitle: b\n---\nbody\n",
    ],
)
def test_malformed_front_matter_is_refused(text):
    with pytest.raises(InputRejected) as info:
        parse(text)
    assert info.value.reason_code == "MALFORMED_FRONT_MATTER"


def test_empty_front_matter_is_allowed():
    document = parse("---\n---\nbody\n")
    assert document.text == "body\n"
    assert blocks(document) == [("paragraph", "body")]


def test_too_many_paragraphs():
    limits = IngestSettings(max_paragraphs=3)
    parse("a\n\nb\n\nc\n", limits)
    with pytest.raises(InputRejected) as info:
        parse("a\n\nb\n\nc\n\nd\n", limits)
    assert info.value.reason_code == "TOO_MANY_PARAGRAPHS"


def test_line_too_long():
    with pytest.raises(InputRejected) as info:
        parse("ok\n" + "x" * 101, IngestSettings(max_line_chars=100))
    assert info.value.reason_code == "LINE_TOO_LONG"


FRAGMENTS = st.sampled_from(
    [
        "",
        "   ",
        "# Heading",
        "## Sub heading ##",
        "###### six",
        "####### seven",
        "#",
        "- item",
        "* item",
        "1. first",
        "2) second",
        "  continued",
        "```",
        "~~~ lang",
        "| a | b |",
        "|---|---|",
        "---",
        "===",
        "***",
        "> quote",
        "plain words",
        "[link](http://x.example)",
        "\t tabbed",
        "中文段落。",
        "---\ntitle: x\n---",
    ]
)
LINES = st.lists(st.one_of(FRAGMENTS, st.text(max_size=12)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(LINES)
def test_markdown_span_invariants_hold_for_any_input(lines):
    text = "\n".join(lines)
    try:
        document = parse(text)
    except InputRejected as error:
        assert error.reason_code in {"EMPTY_DOCUMENT", "MALFORMED_FRONT_MATTER", "BINARY_CONTENT"}
        return
    assert_span_invariants(document)
    for paragraph in document.paragraphs:
        if paragraph.kind == "heading":
            assert paragraph.heading_path and paragraph.heading_path[-1]
    assert parse(text) == document  # deterministic
