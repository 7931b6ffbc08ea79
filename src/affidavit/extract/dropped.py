"""What a parser leaves out of the normalized text, recorded so that it is labelled too.

The original file carries more than its chunks: front-matter fields, HTML comments and
hidden elements, DOCX comments, tracked deletions and hidden runs, PDF document
information, outlines, annotations, form fields and attachments. Each parser notes such
content here as it meets it, by kind; the text of one kind is kept (up to
:data:`MAX_DROPPED_CHARS`) so the classify stage can label it, and content whose text the
parser cannot read, or that is too long to read whole, is kept without text: it then
counts as the most severe label, since nobody classified it.
"""

from __future__ import annotations

from affidavit.records import DroppedContent

MAX_DROPPED_CHARS = 1_000_000
"""Characters of dropped text kept per kind; past it the kind is unclassified."""

HTML_COMMENT = "html_comment"
HTML_HIDDEN = "html_hidden"
HTML_NOT_RENDERED = "html_not_rendered"
HTML_META = "html_meta"
HTML_ATTRIBUTE = "html_attribute"
FRONT_MATTER_FIELD = "front_matter_field"
DOCX_COMMENT = "docx_comment"
DOCX_DELETED_RUN = "docx_deleted_run"
DOCX_HIDDEN_RUN = "docx_hidden_run"
DOCX_FIELD_INSTRUCTION = "docx_field_instruction"
DOCX_NOT_RENDERED = "docx_not_rendered"
DOCX_PART = "docx_part"
DOCX_PROPERTIES = "docx_properties"
DOCX_EMBEDDED = "docx_embedded"
PDF_INFO = "pdf_info"
PDF_XMP = "pdf_xmp"
PDF_OUTLINE = "pdf_outline"
PDF_ANNOTATION = "pdf_annotation"
PDF_XOBJECT_TEXT = "pdf_xobject_text"
PDF_FORM_FIELD = "pdf_form_field"
PDF_ATTACHMENT = "pdf_attachment"
PDF_NAMES = "pdf_names"
PDF_EARLIER_REVISION = "pdf_earlier_revision"
PDF_OCR_LOW_CONFIDENCE = "pdf_ocr_low_confidence"  # scanned pages OCR could not read well
YAML_COMMENT = "yaml_comment"

PDF_KINDS = frozenset({PDF_INFO, PDF_XMP, PDF_OUTLINE, PDF_ANNOTATION, PDF_XOBJECT_TEXT,
                       PDF_FORM_FIELD, PDF_ATTACHMENT, PDF_NAMES, PDF_EARLIER_REVISION,
                       PDF_OCR_LOW_CONFIDENCE})
"""Every kind a PDF records."""


class DroppedCollector:
    """Dropped content of one document, gathered by kind in the order first met."""

    def __init__(self) -> None:
        self._texts: dict[str, list[str]] = {}
        self._sizes: dict[str, int] = {}
        self._unread: set[str] = set()

    def add(self, kind: str, text: str) -> None:
        """Content of ``kind`` whose text is ``text`` (blank text is nothing dropped)."""
        if not text.strip() or kind in self._unread:
            return
        size = self._sizes.get(kind, 0) + len(text) + 1
        if size > MAX_DROPPED_CHARS:
            self.add_unread(kind)
            return
        self._sizes[kind] = size
        self._texts.setdefault(kind, []).append(text)

    def add_unread(self, kind: str) -> None:
        """Content of ``kind`` that is there but whose text is not read."""
        self._unread.add(kind)
        self._texts.setdefault(kind, [])

    def entries(self) -> tuple[DroppedContent, ...]:
        return tuple(DroppedContent(kind, None if kind in self._unread else "\n".join(texts))
                     for kind, texts in self._texts.items())
