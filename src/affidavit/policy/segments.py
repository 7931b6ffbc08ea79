"""Pass 2 of classification: adjacent paragraphs with one label form a segment."""

from __future__ import annotations

from collections.abc import Sequence

from affidavit.errors import InputRejected
from affidavit.records import ExtractedDocument, ParagraphLabel, Segment


def build_segments(doc: ExtractedDocument, labels: Sequence[ParagraphLabel]) -> tuple[Segment, ...]:
    """Maximal runs of adjacent paragraphs sharing one label, in document order."""
    by_index = _labels_by_index(doc, labels)
    segments: list[Segment] = []
    for paragraph in doc.paragraphs:
        label = by_index[paragraph.index]
        last = segments[-1] if segments else None
        if last is not None and last.label == label:
            segments[-1] = Segment(label, last.first, paragraph.index, last.start, paragraph.end)
        else:
            segments.append(
                Segment(label, paragraph.index, paragraph.index, paragraph.start, paragraph.end)
            )
    return tuple(segments)


def _labels_by_index(doc: ExtractedDocument, labels: Sequence[ParagraphLabel]) -> dict[int, str]:
    """Exactly one label per paragraph, or the labels do not belong to this document."""
    by_index: dict[int, str] = {}
    for paragraph_label in labels:
        if paragraph_label.index in by_index:
            raise InputRejected(
                "LABELS_MISMATCH", f"paragraph {paragraph_label.index} is labelled twice"
            )
        by_index[paragraph_label.index] = paragraph_label.label
    expected = {paragraph.index for paragraph in doc.paragraphs}
    if set(by_index) != expected:
        raise InputRejected(
            "LABELS_MISMATCH", "labels do not cover exactly the document's paragraphs"
        )
    return by_index
