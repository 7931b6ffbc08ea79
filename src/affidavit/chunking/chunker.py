"""Passes 3 and 4 of ingestion chunking: chunk inside label segments, then merge small ones.

Every chunk is a contiguous span ``doc.text[start:end]`` (trimmed of whitespace) that lies
inside one run of same-label segments, so every chunk has exactly one label (DESIGN.md,
"Sensitivity and classification"). Split priority: label segment, heading, paragraph,
sentence, then a hard cut (at whitespace where there is some).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, replace

from affidavit.config.settings import ChunkingSettings
from affidavit.errors import ConfigurationError, InputRejected
from affidavit.records import ChunkDraft, ExtractedDocument, Paragraph, Segment
from affidavit.text.sentences import split_sentences

TOO_MANY_CHUNKS = "TOO_MANY_CHUNKS"

# Kinds of packing unit: a whole heading or paragraph, one sentence of an oversized
# paragraph, or a hard-cut piece of an oversized sentence.
_HEADING, _PARAGRAPH, _SENTENCE, _CUT = "heading", "paragraph", "sentence", "cut"


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    kind: str
    position: int  # position of its paragraph in doc.paragraphs


@dataclass(frozen=True)
class _Layout:
    """The document with lookups computed once: paragraph starts and nearest headings."""

    doc: ExtractedDocument
    starts: tuple[int, ...]
    heading_above: tuple[int, ...]  # position of the nearest heading at or above, or -1

    @classmethod
    def of(cls, doc: ExtractedDocument) -> _Layout:
        heading_above: list[int] = []
        nearest = -1
        for position, paragraph in enumerate(doc.paragraphs):
            if paragraph.kind == "heading":
                nearest = position
            heading_above.append(nearest)
        starts = tuple(paragraph.start for paragraph in doc.paragraphs)
        return cls(doc, starts, tuple(heading_above))

    def paragraph_at(self, offset: int) -> int:
        """Position of the last paragraph starting at or before ``offset``."""
        return max(0, bisect.bisect_right(self.starts, offset) - 1)


@dataclass(frozen=True)
class _Span:
    """A chunk under construction: its range, segments, and what it is made of."""

    start: int
    end: int
    first_segment: int
    last_segment: int
    kinds: frozenset[str]
    last: _Unit

    @property
    def size(self) -> int:
        return self.end - self.start


def chunk_document(
    doc: ExtractedDocument,
    segments: Sequence[Segment],
    *,
    settings: ChunkingSettings,
    max_chunks: int | None = None,
) -> tuple[ChunkDraft, ...]:
    """Chunks of ``doc`` in document order; none crosses a label segment boundary.

    A document that would make more than ``max_chunks`` chunks is refused with
    ``TOO_MANY_CHUNKS`` before any chunk's text is copied.
    """
    _check_settings(settings)
    _check_paragraph_map(doc)
    members = _segment_members(doc, segments)
    layout = _Layout.of(doc)
    spans: list[_Span] = []
    for number, positions in enumerate(members):
        units = _segment_units(doc, positions, settings.max_chars)
        spans.extend(_pack(layout, units, number, settings))
    labels = [segment.label for segment in segments]
    merged = _merge_small(spans, labels, settings)
    if max_chunks is not None and len(merged) > max_chunks:
        raise InputRejected(TOO_MANY_CHUNKS, f"{len(merged)} chunks, more than the "
                            f"{max_chunks} a document may make")
    return tuple(_draft(layout, ordinal, span, labels) for ordinal, span in enumerate(merged))


# ---------------------------------------------------------------------- checks


def _check_settings(settings: ChunkingSettings) -> None:
    if settings.max_chars <= 0 or not 0 <= settings.overlap_chars < settings.max_chars:
        raise ConfigurationError(
            "need max_chars > 0 and 0 <= overlap_chars < max_chars", key="chunking"
        )
    if settings.min_chars < 0:
        raise ConfigurationError("min_chars must not be negative", key="chunking.min_chars")


def _check_paragraph_map(doc: ExtractedDocument) -> None:
    """Paragraphs must lie inside the text, in order, without overlapping."""
    previous_end = 0
    for paragraph in doc.paragraphs:
        if not previous_end <= paragraph.start <= paragraph.end <= len(doc.text):
            raise InputRejected(
                "BAD_PARAGRAPH_MAP",
                f"paragraph {paragraph.index} spans {paragraph.start}:{paragraph.end}",
            )
        previous_end = paragraph.end


def _segment_members(doc: ExtractedDocument, segments: Sequence[Segment]) -> list[range]:
    """Paragraph positions of each segment; segments must tile the paragraphs in order."""
    position_of = {paragraph.index: position for position, paragraph in enumerate(doc.paragraphs)}
    members: list[range] = []
    expected = 0
    for segment in segments:
        first = position_of.get(segment.first)
        last = position_of.get(segment.last)
        if first != expected or last is None or last < first or not segment.label:
            raise InputRejected(
                "SEGMENTS_MISMATCH", "segments do not tile the document's paragraphs in order"
            )
        members.append(range(first, last + 1))
        expected = last + 1
    if expected != len(doc.paragraphs):
        raise InputRejected("SEGMENTS_MISMATCH", "segments leave paragraphs without a label")
    return members


# ---------------------------------------------------------------------- pass 3: units


def _segment_units(doc: ExtractedDocument, positions: range, max_chars: int) -> list[_Unit]:
    units: list[_Unit] = []
    for position in positions:
        paragraph = doc.paragraphs[position]
        span = _trim(doc.text, paragraph.start, paragraph.end)
        if span is None:
            continue
        start, end = span
        if end - start <= max_chars:
            kind = _HEADING if paragraph.kind == "heading" else _PARAGRAPH
            units.append(_Unit(start, end, kind, position))
        else:
            units.extend(_oversized_units(doc.text, start, end, position, max_chars))
    return units


def _oversized_units(text: str, start: int, end: int, position: int, max_chars: int) -> list[_Unit]:
    """An oversized paragraph as sentences, and oversized sentences as hard-cut pieces."""
    units: list[_Unit] = []
    for s_start, s_end in split_sentences(text, start, end):
        if s_end - s_start <= max_chars:
            units.append(_Unit(s_start, s_end, _SENTENCE, position))
        else:
            units.extend(
                _Unit(c_start, c_end, _CUT, position)
                for c_start, c_end in _hard_cuts(text, s_start, s_end, max_chars)
            )
    return units


def _hard_cuts(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Pieces of at most ``max_chars``, cut at the last whitespace that fits, if any."""
    pieces: list[tuple[int, int]] = []
    position = start
    while position < end:
        limit = position + max_chars
        cut = end if limit >= end else _last_space(text, position, limit)
        span = _trim(text, position, cut)
        if span is not None:
            pieces.append(span)
        position = cut
    return pieces


def _last_space(text: str, start: int, limit: int) -> int:
    """The last whitespace offset in ``(start, limit]``, else ``limit`` (a hard cut)."""
    for offset in range(limit, start, -1):
        if text[offset].isspace():
            return offset
    return limit


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


# ---------------------------------------------------------------------- pass 3: packing


def _pack(
    layout: _Layout, units: Sequence[_Unit], segment: int, settings: ChunkingSettings
) -> list[_Span]:
    """Greedy packing of one segment's units into spans of at most ``max_chars``."""
    spans: list[_Span] = []
    current: _Span | None = None
    for unit in units:
        if current is not None and _joins(current, unit, settings.max_chars):
            current = replace(current, end=unit.end, kinds=current.kinds | {unit.kind}, last=unit)
            continue
        if current is not None:
            spans.append(current)
        start = _overlap_start(layout, current, unit, settings)
        current = _Span(start, unit.end, segment, segment, frozenset({unit.kind}), unit)
    if current is not None:
        spans.append(current)
    return spans


def _joins(current: _Span, unit: _Unit, max_chars: int) -> bool:
    """Whether ``unit`` may extend ``current`` (a heading always starts a new chunk)."""
    if unit.end - current.start > max_chars or unit.kind in (_HEADING, _CUT):
        return False
    if current.last.kind == _CUT:
        return False
    if unit.kind == _SENTENCE:
        same_paragraph = current.last.kind == _SENTENCE and current.last.position == unit.position
        return same_paragraph or current.kinds == {_HEADING}
    return current.kinds <= {_HEADING, _PARAGRAPH}


def _overlap_start(
    layout: _Layout, previous: _Span | None, unit: _Unit, settings: ChunkingSettings
) -> int:
    """Where a new chunk starts: ``unit.start``, or earlier to share the previous tail.

    Only a chunk that opens on a whole paragraph shares; sub-chunks of one oversized
    paragraph never overlap. The shared text starts at a sentence or paragraph boundary,
    is at most ``overlap_chars`` long, and the chunk still fits ``max_chars``.
    """
    if settings.overlap_chars == 0 or previous is None or unit.kind != _PARAGRAPH:
        return unit.start
    if previous.last.kind == _CUT:
        return unit.start
    for boundary in _sentence_starts(layout, previous):
        shared = previous.end - boundary
        if shared <= settings.overlap_chars and unit.end - boundary <= settings.max_chars:
            return boundary
    return unit.start


def _sentence_starts(layout: _Layout, span: _Span) -> list[int]:
    """Sentence starts strictly inside ``span``, ascending (paragraph starts included)."""
    text = layout.doc.text
    starts: list[int] = []
    for position in range(layout.paragraph_at(span.start), len(layout.starts)):
        paragraph = layout.doc.paragraphs[position]
        if paragraph.start >= span.end:
            break
        low, high = max(paragraph.start, span.start), min(paragraph.end, span.end)
        if low < high:
            starts.extend(start for start, _ in split_sentences(text, low, high))
    return [start for start in starts if span.start < start < span.end]


# ---------------------------------------------------------------------- pass 4: merge


def _merge_small(
    spans: Sequence[_Span], labels: Sequence[str], settings: ChunkingSettings
) -> list[_Span]:
    """Merge neighbours that are both under ``min_chars``, within one label, up to max."""
    merged: list[_Span] = []
    for span in spans:
        if merged and _mergeable(merged[-1], span, labels, settings):
            left = merged[-1]
            merged[-1] = replace(
                left,
                end=span.end,
                last_segment=span.last_segment,
                kinds=left.kinds | span.kinds,
                last=span.last,
            )
        else:
            merged.append(span)
    return merged


def _mergeable(
    left: _Span, right: _Span, labels: Sequence[str], settings: ChunkingSettings
) -> bool:
    if left.size >= settings.min_chars or right.size >= settings.min_chars:
        return False
    if right.end - left.start > settings.max_chars:
        return False
    # Every segment the merged span would touch must carry the one label: never across labels.
    touched = labels[left.first_segment : right.last_segment + 1]
    return len(set(touched)) == 1


# ---------------------------------------------------------------------- drafts


def _draft(layout: _Layout, ordinal: int, span: _Span, labels: Sequence[str]) -> ChunkDraft:
    position = layout.paragraph_at(span.start)
    return ChunkDraft(
        ordinal=ordinal,
        start=span.start,
        end=span.end,
        text=layout.doc.text[span.start : span.end],
        label=labels[span.first_segment],
        heading_path=_heading_path(layout, position),
        page=layout.doc.paragraphs[position].page,
    )


def _heading_path(layout: _Layout, position: int) -> tuple[str, ...]:
    """The section a chunk belongs to, from the paragraph it starts in.

    A chunk opening on a heading belongs to that heading's section; otherwise it takes its
    first paragraph's heading path, or failing that the nearest heading above it.
    """
    paragraph = layout.doc.paragraphs[position]
    if paragraph.kind != "heading" and paragraph.heading_path:
        return paragraph.heading_path
    above = layout.heading_above[position]
    if above < 0:
        return paragraph.heading_path
    heading = layout.doc.paragraphs[above]
    return _with_title(heading.heading_path, _heading_title(layout.doc, heading))


def _heading_title(doc: ExtractedDocument, heading: Paragraph) -> str:
    return " ".join(doc.paragraph_text(heading).strip().lstrip("#").split())


def _with_title(path: tuple[str, ...], title: str) -> tuple[str, ...]:
    if not title or (path and path[-1] == title):
        return path
    return (*path, title)
