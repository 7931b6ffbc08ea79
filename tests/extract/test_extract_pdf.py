"""PDF: the text layer page by page, page numbers in locators, hostile files refused."""

from __future__ import annotations

import io
from pathlib import Path

import pypdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.fixtures.hostile.build import (
    MIB,
    image_only_pdf,
    page_cycle_pdf,
    pdf_file,
    pdf_stream,
    stacked_filters_pdf,
    text_pdf,
)

from affidavit.config.settings import AclSettings, IngestSettings, Settings
from affidavit.errors import InputRejected
from affidavit.extract import extract
from affidavit.extract.pdf import pypdf_caps
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, ExtractedDocument, SourceDocument
from affidavit.sources import StaticSource
from affidavit.store import SQLiteStore

LIMITS = IngestSettings()
REPORT = text_pdf(
    [
        ["Annual report", "", "This first paragraph is long enough", "to wrap onto a second line.",
         "", "A second paragraph."],
        ["Page two   has   spaced words."],
    ],
    title="Annual Report 2024",
    link="https://example.org/annual",
)


def parse(content: bytes, limits: IngestSettings = LIMITS) -> ExtractedDocument:
    return extract(content, filename="doc.pdf", limits=limits)


def reason(content: bytes, limits: IngestSettings = LIMITS) -> InputRejected:
    with pytest.raises(InputRejected) as info:
        parse(content, limits)
    return info.value


def blocks(document: ExtractedDocument) -> list[tuple[int | None, str]]:
    return [(p.page, document.paragraph_text(p)) for p in document.paragraphs]


def test_paragraphs_follow_blank_lines_and_carry_their_page():
    document = parse(REPORT)
    assert blocks(document) == [
        (1, "Annual report"),
        (1, "This first paragraph is long enough\nto wrap onto a second line."),
        (1, "A second paragraph."),
        (2, "Page two has spaced words."),
    ]
    assert document.format == "pdf"
    assert {p.kind for p in document.paragraphs} == {"paragraph"}
    assert document.title == "Annual Report 2024"
    assert document.links == ("https://example.org/annual",)


def test_without_an_information_title_the_first_line_is_the_title():
    assert parse(text_pdf([["Policy on gifts", "", "Gifts over 50 EUR are declared."]])).title == (
        "Policy on gifts"
    )


def test_parsing_is_deterministic():
    assert parse(REPORT) == parse(REPORT)


def test_page_numbers_reach_the_chunk_locators(tmp_path: Path):
    line = "Every employee completes the annual conduct training before the end of March."
    pdf = text_pdf([[line] * 10 + ["", line] * 3, [line] * 10])
    document = SourceDocument("memory", "handbook", "r1", pdf, "handbook.pdf",
                              DocumentMetadata(acl=("*",)))
    store = SQLiteStore(tmp_path / "store.db")
    try:
        summary = Ingestor(store, Settings(acl=AclSettings(default=("*",)))).run(
            [StaticSource([document])]
        )
        (head,) = store.heads("default")
        locators = [c.locator for c in store.version_chunks("default", head.version_id)]
    finally:
        store.close()
    assert summary.count("ingested") == 1
    assert locators[0].startswith("handbook.pdf | p. 1 | chars 0-")
    assert any(" | p. 2 | " in locator for locator in locators)


def test_encrypted_documents_are_refused_without_trying_passwords():
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(REPORT)))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-256")
    buffer = io.BytesIO()
    writer.write(buffer)
    assert reason(buffer.getvalue()).reason_code == "ENCRYPTED_PDF"


def test_pages_without_text_have_no_text_layer():
    error = reason(image_only_pdf())
    assert error.reason_code == "NO_TEXT_LAYER"
    assert "1 pages" in error.detail


def test_a_document_without_pages_is_empty():
    empty = pdf_file([b"<< /Type /Catalog /Pages 2 0 R >>",
                      b"<< /Type /Pages /Kids [] /Count 0 >>"])
    assert reason(empty).reason_code == "EMPTY_DOCUMENT"


def test_page_count_over_the_cap_is_refused():
    limits = IngestSettings(max_pages=2)
    assert reason(text_pdf([["a"], ["b"], ["c"]]), limits).reason_code == "TOO_MANY_PAGES"
    assert parse(text_pdf([["a"], ["b"]]), limits).paragraphs[-1].page == 2
    # A tree that declares a million pages is refused before anything is flattened.
    declared = text_pdf([["a"]]).replace(b"/Count 1", b"/Count 1000000")
    assert reason(declared, limits).reason_code == "TOO_MANY_PAGES"


def test_stacked_compression_filters_stop_at_the_decompression_cap():
    error = reason(stacked_filters_pdf(size_mib=256))
    assert error.reason_code == "PDF_LIMIT_EXCEEDED"


@pytest.mark.parametrize(
    "kids",
    [b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",  # the tree lists itself
     b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>"],  # through a child that lists the root
)
def test_page_tree_cycles_are_malformed(kids: bytes):
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", kids,
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
               b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>"]
    assert reason(pdf_file(objects)).reason_code == "MALFORMED_PDF"
    assert reason(page_cycle_pdf()).reason_code == "MALFORMED_PDF"


def test_a_form_that_draws_itself_does_not_hang():
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources "
        b"<< /XObject << /X1 5 0 R >> /Font << /F1 6 0 R >> >> /Contents 4 0 R >>",
        pdf_stream(b"/X1 Do BT /F1 11 Tf 72 700 Td (Hello) Tj ET"),
        pdf_stream(b"/X1 Do", b"/Type /XObject /Subtype /Form /BBox [0 0 10 10] "
                   b"/Resources << /XObject << /X1 5 0 R >> >>"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    assert blocks(parse(pdf_file(objects))) == [(1, "Hello")]


@pytest.mark.parametrize("content", [b"%PDF-1.7\n", b"not a pdf", REPORT[: len(REPORT) // 2]])
def test_broken_files_are_malformed(content: bytes):
    assert reason(content).reason_code == "MALFORMED_PDF"


def test_an_empty_file_is_empty():
    assert reason(b"").reason_code == "EMPTY_DOCUMENT"


def test_pypdf_caps_follow_the_ingest_settings():
    limits = IngestSettings(max_decompressed_bytes=50 * MIB, max_compression_ratio=100,
                            max_pages=10, max_nesting_depth=20)
    small = pypdf_caps(limits, 1000)  # 100 kB by ratio, lifted to the 1 MiB floor
    large = pypdf_caps(limits, 10 * MIB)  # 1000 MiB by ratio, held to the 50 MiB cap
    assert small["zlib_maximum_output_length"] == MIB
    assert large["zlib_maximum_output_length"] == 50 * MIB
    assert large["stream_decoding_work_maximum_length"] == 50 * MIB
    assert large["page_tree_maximum_entries"] == 84
    assert large["page_tree_maximum_depth"] == 20
    assert large["jbig2dec_binary"] is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(REPORT) - 1), st.integers(0, 255)), max_size=4))
def test_any_corruption_is_read_or_refused(flips: list[tuple[int, int]]):
    content = bytearray(REPORT)
    for position, value in flips:
        content[position] = value
    try:
        document = parse(bytes(content))
    except InputRejected as error:
        assert error.reason_code.isupper()
    else:
        assert all(p.page in {1, 2} for p in document.paragraphs)
