"""DOCX: body text with structure; hidden text, comments and deletions deliberately left out."""

from __future__ import annotations

import io

import docx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.fixtures.hostile.build import (
    W,
    document_xml,
    docx_package,
    entity_expansion_docx,
    overlapping_docx,
    paragraph,
    zip_bomb_docx,
)

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import extract
from affidavit.records import ExtractedDocument

LIMITS = IngestSettings()
STYLES_REL = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/styles" Target="styles.xml"/>'
    '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/hyperlink" Target="https://example.org/policy" TargetMode="External"/>'
    "</Relationships>"
)
STYLES = (
    f'<w:styles xmlns:w="{W}">'
    '<w:style w:type="paragraph" w:styleId="Secret"><w:name w:val="Secret"/>'
    "<w:rPr><w:vanish/></w:rPr></w:style>"
    '<w:style w:type="paragraph" w:styleId="StillSecret"><w:name w:val="Still"/>'
    '<w:basedOn w:val="Secret"/></w:style>'
    '<w:style w:type="character" w:styleId="HiddenChars"><w:name w:val="Hidden chars"/>'
    "<w:rPr><w:vanish/></w:rPr></w:style>"
    '<w:style w:type="paragraph" w:styleId="Clause"><w:name w:val="Clause heading"/>'
    '<w:basedOn w:val="H2"/></w:style>'
    '<w:style w:type="paragraph" w:styleId="H2"><w:name w:val="heading 2"/></w:style>'
    '<w:style w:type="paragraph" w:styleId="Loop"><w:name w:val="Loop"/>'
    '<w:basedOn w:val="Loop"/></w:style>'
    "</w:styles>"
)


def raw_docx(body: str, *, styles: str | None = STYLES) -> bytes:
    parts = {"word/_rels/document.xml.rels": STYLES_REL}
    if styles is not None:
        parts["word/styles.xml"] = styles
    return docx_package(document_xml(body), parts=parts)


def run(text: str, properties: str = "") -> str:
    return f'<w:r><w:rPr>{properties}</w:rPr><w:t xml:space="preserve">{text}</w:t></w:r>'


def styled(style: str, *runs: str) -> str:
    return f'<w:p><w:pPr><w:pStyle w:val="{style}"/></w:pPr>{"".join(runs)}</w:p>'


def parse(content: bytes, limits: IngestSettings = LIMITS) -> ExtractedDocument:
    return extract(content, filename="doc.docx", limits=limits)


def reason(content: bytes, limits: IngestSettings = LIMITS) -> InputRejected:
    with pytest.raises(InputRejected) as info:
        parse(content, limits)
    return info.value


def blocks(document: ExtractedDocument) -> list[tuple[str, str]]:
    return [(p.kind, document.paragraph_text(p)) for p in document.paragraphs]


def word_document() -> bytes:
    document = docx.Document()
    document.core_properties.title = "Expense policy"
    document.add_heading("Expenses", 0)
    document.add_heading("Scope", 1)
    intro = document.add_paragraph("Applies to all staff. ")
    intro.add_run("Internal note: budget is tight.").font.hidden = True
    document.add_heading("Limits", 2)
    document.add_paragraph("Meals", style="List Bullet")
    document.add_paragraph("Hotels", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for row, cells in enumerate([("Item", "Limit"), ("Meal", "30 EUR")]):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    reviewed = document.add_paragraph("Receipts are kept for seven years.")
    document.add_comment(reviewed.runs, text="Check with legal: is it ten?", author="Ann")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_a_word_document_reads_as_structured_blocks():
    document = parse(word_document())
    assert blocks(document) == [
        ("heading", "Expenses"),
        ("heading", "Scope"),
        ("paragraph", "Applies to all staff."),
        ("heading", "Limits"),
        ("list", "- Meals\n- Hotels"),
        ("table", "Item | Limit\nMeal | 30 EUR"),
        ("paragraph", "Receipts are kept for seven years."),
    ]
    assert [p.heading_path for p in document.paragraphs] == [
        ("Expenses",),
        ("Expenses", "Scope"),
        ("Expenses", "Scope"),
        ("Expenses", "Scope", "Limits"),
        ("Expenses", "Scope", "Limits"),
        ("Expenses", "Scope", "Limits"),
        ("Expenses", "Scope", "Limits"),
    ]
    assert document.title == "Expense policy"
    assert document.format == "docx"


def test_hidden_text_and_comments_never_reach_the_text():
    text = parse(word_document()).text
    assert "budget is tight" not in text
    assert "Check with legal" not in text and "Ann" not in text


def test_hidden_text_through_styles_is_dropped():
    body = (
        styled("Secret", run("whole paragraph hidden"))
        + styled("StillSecret", run("hidden by inheritance"))
        + styled("Secret", run("shown again", '<w:vanish w:val="0"/>'))
        + paragraph("Visible ")
        + "<w:p>" + run("character style", '<w:rStyle w:val="HiddenChars"/>') + run("kept")
        + "</w:p><w:p>" + run("switched off", '<w:vanish w:val="false"/>') + "</w:p>"
    )
    assert blocks(parse(raw_docx(body))) == [
        ("paragraph", "shown again"), ("paragraph", "Visible"), ("paragraph", "kept"),
        ("paragraph", "switched off"),
    ]


def test_a_document_whose_only_text_is_hidden_is_empty():
    error = reason(raw_docx(styled("Secret", run("nothing to see"))))
    assert error.reason_code == "EMPTY_DOCUMENT"
    assert "only text was hidden" in error.detail


def test_tracked_changes_read_as_accepted():
    body = (
        "<w:p>"
        + run("The limit is ")
        + '<w:del w:id="1" w:author="A"><w:r><w:delText>20</w:delText></w:r></w:del>'
        + f'<w:ins w:id="2" w:author="A">{run("30")}</w:ins>'
        + run(" EUR.")
        + "</w:p>"
        + f'<w:moveFrom w:id="3" w:author="A">{paragraph("moved away")}</w:moveFrom>'
        + f'<w:p><w:moveFrom w:id="4" w:author="A">{run("gone ")}</w:moveFrom>{run("here")}</w:p>'
    )
    assert blocks(parse(raw_docx(body))) == [("paragraph", "The limit is 30 EUR."),
                                             ("paragraph", "here")]


def test_fields_links_content_controls_and_breaks():
    body = (
        "<w:p>"
        + '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>PAGE</w:instrText></w:r>'
        + f'<w:r><w:fldChar w:fldCharType="separate"/></w:r>{run("3")}'
        + '<w:r><w:fldChar w:fldCharType="end"/></w:r>'
        + f'<w:hyperlink r:id="rId2">{run(" policy")}</w:hyperlink>'
        + f'<w:fldSimple w:instr="DATE">{run(" today")}</w:fldSimple>'
        + "</w:p>"
        + f"<w:sdt><w:sdtPr/><w:sdtContent>{paragraph('In a control')}</w:sdtContent></w:sdt>"
        + '<w:p><w:r><w:t>Line one</w:t><w:br/><w:t>Line</w:t><w:tab/><w:t>two</w:t></w:r></w:p>'
        + '<w:p><w:r><w:t>a</w:t><w:br/><w:br/><w:br/><w:t>b</w:t></w:r></w:p>'
    )
    document = parse(raw_docx(body))
    assert blocks(document) == [
        ("paragraph", "3 policy today"),
        ("paragraph", "In a control"),
        ("paragraph", "Line one\nLine\ttwo"),
        ("paragraph", "a\nb"),
    ]
    assert document.links == ("https://example.org/policy",)


def test_headings_from_style_inheritance_and_outline_levels():
    body = (
        styled("Clause", run("Clause 1"))
        + f'<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr>{run("Part A")}</w:p>'
        + styled("Loop", run("A style based on itself is plain text"))
    )
    document = parse(raw_docx(body))
    assert blocks(document) == [("heading", "Clause 1"), ("heading", "Part A"),
                                ("paragraph", "A style based on itself is plain text")]
    assert document.paragraphs[2].heading_path == ("Part A",)
    assert document.title == "Part A"


def test_list_levels_and_numbering_switched_off():
    def item(text: str, level: int, num_id: str = "1") -> str:
        numbering = f'<w:numPr><w:ilvl w:val="{level}"/><w:numId w:val="{num_id}"/></w:numPr>'
        return f"<w:p><w:pPr>{numbering}</w:pPr>{run(text)}</w:p>"

    body = item("one", 0) + item("nested", 1) + item("two", 0) + item("plain", 0, num_id="0")
    assert blocks(parse(raw_docx(body))) == [("list", "- one\n  - nested\n- two"),
                                             ("paragraph", "plain")]


def test_nested_tables_stay_in_their_cell_and_hidden_rows_are_dropped():
    def cell(content: str) -> str:
        return f"<w:tc>{content}</w:tc>"

    inner = f"<w:tbl><w:tr>{cell(paragraph('x'))}{cell(paragraph('y'))}</w:tr></w:tbl>"
    body = (
        "<w:tbl>"
        + f"<w:tr>{cell(paragraph('outer'))}{cell(paragraph('before') + inner)}</w:tr>"
        + f"<w:tr><w:trPr><w:hidden/></w:trPr>{cell(paragraph('secret row'))}</w:tr>"
        + "</w:tbl>"
    )
    assert blocks(parse(raw_docx(body))) == [("table", "outer | before x | y")]


def test_nesting_deeper_than_the_cap_is_refused():
    body = paragraph("bottom")
    for _ in range(40):
        body = f"<w:tbl><w:tr><w:tc>{body}</w:tc></w:tr></w:tbl>"
    assert reason(raw_docx(body)).reason_code == "NESTING_TOO_DEEP"


def test_paragraph_cap():
    body = "".join(paragraph(f"p{i}") for i in range(6))
    limits = IngestSettings(max_paragraphs=5)
    assert reason(raw_docx(body), limits).reason_code == "TOO_MANY_PARAGRAPHS"


@pytest.mark.parametrize(
    "prolog",
    [
        '<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
        '<!DOCTYPE w:document [<!ENTITY x "expanded">]>',
        '<!DOCTYPE w:document SYSTEM "http://example.org/evil.dtd">',
    ],
)
def test_dtds_and_entities_are_refused_in_every_part(prolog: str):
    document = document_xml(paragraph("&x;" if "ENTITY" in prolog else "text"), prolog=prolog)
    assert reason(docx_package(document)).reason_code == "XML_ENTITY_REFUSED"
    styles = f"<?xml version=\"1.0\"?>{prolog.replace('w:document', 'w:styles')}<w:styles/>"
    assert reason(raw_docx(paragraph("text"), styles=styles)).reason_code == "XML_ENTITY_REFUSED"


def test_entity_expansion_bombs_are_refused():
    assert reason(entity_expansion_docx()).reason_code == "XML_ENTITY_REFUSED"


def test_archive_attacks_keep_their_reason():
    assert reason(zip_bomb_docx(size_mib=256)).reason_code == "COMPRESSION_RATIO_TOO_HIGH"
    assert reason(overlapping_docx()).reason_code == "OVERLAPPING_ARCHIVE_ENTRIES"


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"plain text, not a package", "MALFORMED_ARCHIVE"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100, "MALFORMED_DOCX"),
        (docx_package("<w:document"), "MALFORMED_DOCX"),
        (docx_package('<html xmlns="http://www.w3.org/1999/xhtml"/>'), "MALFORMED_DOCX"),
        (docx_package(f'<w:document xmlns:w="{W}"/>'), "MALFORMED_DOCX"),
    ],
)
def test_what_is_not_a_word_document_is_refused(content: bytes, code: str):
    assert reason(content).reason_code == code


def test_parsing_is_deterministic():
    content = word_document()
    assert parse(content) == parse(content)


_SAMPLE = raw_docx(styled("Clause", run("Clause 1")) + paragraph("Body text") + styled(
    "Secret", run("hidden")))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_SAMPLE) - 1), st.integers(0, 255)), max_size=4))
def test_any_corruption_is_read_or_refused(flips: list[tuple[int, int]]):
    content = bytearray(_SAMPLE)
    for position, value in flips:
        content[position] = value
    try:
        document = parse(bytes(content))
    except InputRejected as error:
        assert error.reason_code.isupper() and error.reason_code != "PARSE_FAILED"
    else:
        assert "hidden" not in document.text
