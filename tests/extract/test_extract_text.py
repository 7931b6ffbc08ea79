"""Plain text: blank-line paragraphs, titles, Chinese text, span invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import extract
from affidavit.records import ExtractedDocument

LIMITS = IngestSettings()


def parse(text: str) -> ExtractedDocument:
    return extract(text.encode(), filename="notes.TXT", limits=LIMITS)


def texts(document: ExtractedDocument) -> list[str]:
    return [document.paragraph_text(p) for p in document.paragraphs]


def test_paragraphs_are_separated_by_blank_lines():
    document = parse("Title line\n\nFirst para\nsame para\n \t \n\n\nSecond para\n")
    assert document.format == "text"
    assert texts(document) == ["Title line", "First para\nsame para", "Second para"]
    assert all(p.kind == "paragraph" and p.heading_path == () for p in document.paragraphs)
    assert document.title == "Title line"


def test_long_first_line_is_not_a_title():
    assert parse("x" * 130 + "\n\nbody").title is None
    assert parse("\n\n  Short title  \nbody").title == "Short title"


def test_chinese_document():
    raw = (
        "员工休假制度\r\n\r\n"
        "第一条　为规范公司员工休假管理，制定本制度。\r\n"
        "第二条　本制度适用于全体正式员工。\r\n"
        "\u3000\u3000\r\n"
        "第三条　年假天数按工龄计算：满一年不满十年的，年休假五天。\r\n"
    )
    document = extract(raw.encode("utf-8"), filename="制度.txt", limits=LIMITS)
    assert document.title == "员工休假制度"
    assert texts(document) == [
        "员工休假制度",
        "第一条　为规范公司员工休假管理，制定本制度。\n第二条　本制度适用于全体正式员工。",
        "第三条　年假天数按工龄计算：满一年不满十年的，年休假五天。",
    ]
    assert "\r" not in document.text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab 中\n\t\u3000\r.#-"), max_size=80))
def test_text_span_invariants_hold_for_any_input(text):
    try:
        document = parse(text)
    except InputRejected as error:
        assert error.reason_code == "EMPTY_DOCUMENT"
        return
    previous_end = 0
    for index, paragraph in enumerate(document.paragraphs):
        piece = document.text[paragraph.start : paragraph.end]
        assert paragraph.index == index
        assert piece and piece == piece.strip()
        assert paragraph.start >= previous_end
        assert "\n\n" not in piece.replace(" ", "").replace("\t", "").replace("\u3000", "")
        previous_end = paragraph.end
    covered = "".join(document.paragraph_text(p) for p in document.paragraphs)
    assert "".join(covered.split()) == "".join(document.text.split())
