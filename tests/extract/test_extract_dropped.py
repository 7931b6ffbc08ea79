"""Every parser records what the file holds beyond the normalized text, by kind, with its
text where the parser can read it (so it is labelled) and without where it cannot (so it
counts as the most severe label)."""

from __future__ import annotations

from tests.fixtures.hostile.build import (
    W,
    document_xml,
    docx_package,
    paragraph,
    pdf_file,
    pdf_stream,
    text_operators,
    text_pdf,
)

from affidavit.config.settings import IngestSettings, SensitivitySettings
from affidavit.extract import extract
from affidavit.policy.dropped import dropped_labels, label_dropped
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import DroppedContent

LIMITS = IngestSettings()
WORD = "Lighthouse"


def dropped(content: bytes, filename: str) -> dict[str, str | None]:
    return {entry.kind: entry.text for entry in
            extract(content, filename=filename, limits=LIMITS).dropped}


def test_extractors_record_the_text_they_drop_by_kind() -> None:
    markdown = dropped(f"---\ntitle: {WORD} notes\nowner: ops\n---\n# notes\n\nBody.\n"
                       .encode(), "a.md")
    assert WORD in str(markdown["front_matter_field"]) and "owner" in str(
        markdown["front_matter_field"])
    html = dropped((f'<head><meta name="d" content="{WORD} meta"></head><body><p>Body</p>'
                    f'<!-- {WORD} comment --><p hidden>{WORD} hidden</p>'
                    f'<script>var x = "{WORD} script"</script>').encode(), "a.html")
    assert f"{WORD} comment" in str(html["html_comment"])
    assert f"{WORD} hidden" in str(html["html_hidden"])
    assert f"{WORD} meta" in str(html["html_meta"])
    assert f"{WORD} script" in str(html["html_not_rendered"])
    body = (paragraph("Body text.")
            + f'<w:p><w:del w:id="1" w:author="a"><w:r><w:delText>{WORD} deleted</w:delText>'
            f'</w:r></w:del><w:r><w:rPr><w:vanish/></w:rPr><w:t>{WORD} hidden</w:t></w:r></w:p>')
    comments = (f'<w:comments xmlns:w="{W}"><w:comment w:id="0"><w:p><w:r>'
                f"<w:t>{WORD} comment</w:t></w:r></w:p></w:comment></w:comments>")
    docx = dropped(docx_package(document_xml(body), parts={
        "word/comments.xml": comments, "word/embeddings/object.bin": "binary"}), "a.docx")
    assert docx["docx_deleted_run"] == f"{WORD} deleted"
    assert docx["docx_hidden_run"] == f"{WORD} hidden"
    assert docx["docx_comment"] == f"{WORD} comment"
    assert "docx_embedded" in docx and docx["docx_embedded"] is None
    pdf = dropped(text_pdf([["Body text."]], title=f"{WORD} info",
                           link=f"https://example.test/{WORD}"), "a.pdf")
    assert pdf["pdf_info"] == f"{WORD} info"
    assert WORD in str(pdf["pdf_annotation"])
    yaml = dropped(f"name: body  # {WORD} comment\n".encode(), "a.yaml")
    assert WORD in str(yaml["yaml_comment"])


def test_pdf_records_text_of_form_xobjects_and_attachments() -> None:
    form = pdf_stream(text_operators([f"{WORD} drawn"]),
                      b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
                      b"/Resources << /Font << /F1 3 0 R >> >>")
    content = pdf_file([
        b"<< /Type /Catalog /Pages 2 0 R /Names << /EmbeddedFiles << /Names [] >> >> >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
        b"<< /F1 3 0 R >> /XObject << /X1 6 0 R >> >> /Contents 5 0 R >>",
        pdf_stream(text_operators(["Body text."]) + b"\n/X1 Do"), form])
    pdf = dropped(content, "a.pdf")
    assert WORD in str(pdf["pdf_xobject_text"])
    assert "pdf_attachment" in pdf and pdf["pdf_attachment"] is None


def test_unread_dropped_content_and_unrecorded_versions_count_as_most_severe() -> None:
    policy = SensitivityPolicy.from_settings(SensitivitySettings())
    stored = label_dropped([DroppedContent("pdf_attachment", None),
                            DroppedContent("pdf_info", "ordinary words")],
                           policy=policy, declared="INTERNAL", path="a.pdf")
    assert stored == [{"kind": "pdf_attachment", "label": None},
                      {"kind": "pdf_info", "label": "INTERNAL"}]
    assert dropped_labels({"dropped": stored}, most_severe="RESTRICTED") == {
        "pdf_attachment": "RESTRICTED", "pdf_info": "INTERNAL"}
    assert dropped_labels({}, most_severe="RESTRICTED") == {"*": "RESTRICTED"}
