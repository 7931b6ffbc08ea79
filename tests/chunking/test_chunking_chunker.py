"""The chunker: one label per chunk, contiguous spans, packing, splitting, overlap, merging."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import affidavit.chunking as chunking_package
from affidavit.chunking import chunk_document
from affidavit.config.settings import ChunkingSettings
from affidavit.errors import ConfigurationError, InputRejected
from affidavit.policy.segments import build_segments
from affidavit.records import ChunkDraft, ExtractedDocument, Paragraph, ParagraphLabel, Segment


def make_doc(
    blocks: Sequence[tuple[str, str]], separators: Sequence[str] | None = None
) -> ExtractedDocument:
    """(kind, text) blocks joined by the given separators (blank lines by default)."""
    parts: list[str] = []
    paragraphs: list[Paragraph] = []
    offset = 0
    for index, (kind, text) in enumerate(blocks):
        if index:
            separator = separators[index - 1] if separators else "\n\n"
            parts.append(separator)
            offset += len(separator)
        paragraphs.append(Paragraph(index, offset, offset + len(text), kind, page=index // 2 + 1))
        parts.append(text)
        offset += len(text)
    return ExtractedDocument("".join(parts), tuple(paragraphs), "markdown")


def segments_for(doc: ExtractedDocument, labels: Sequence[str]) -> tuple[Segment, ...]:
    return build_segments(doc, [ParagraphLabel(i, label, ()) for i, label in enumerate(labels)])


def chunk(
    doc: ExtractedDocument,
    labels: Sequence[str],
    max_chars: int = 800,
    min_chars: int = 0,
    overlap_chars: int = 0,
) -> tuple[ChunkDraft, ...]:
    config = ChunkingSettings(max_chars=max_chars, min_chars=min_chars, overlap_chars=overlap_chars)
    return chunk_document(doc, segments_for(doc, labels), settings=config)


def texts(chunks: Sequence[ChunkDraft]) -> list[str]:
    return [c.text for c in chunks]


def test_paragraphs_pack_up_to_max_and_never_cross_labels() -> None:
    doc = make_doc(
        [
            ("paragraph", "Public one."),
            ("paragraph", "Public two."),
            ("paragraph", "Salary of Jo."),
            ("paragraph", "Public three."),
        ]
    )
    chunks = chunk(doc, ["PUBLIC", "PUBLIC", "PII", "PUBLIC"], max_chars=100)
    assert texts(chunks) == ["Public one.\n\nPublic two.", "Salary of Jo.", "Public three."]
    assert [c.label for c in chunks] == ["PUBLIC", "PII", "PUBLIC"]
    assert [c.ordinal for c in chunks] == [0, 1, 2]
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)


def test_heading_starts_a_new_chunk_and_names_its_section() -> None:
    doc = make_doc(
        [
            ("heading", "# Scope"),
            ("paragraph", "Applies to staff."),
            ("heading", "# Rules"),
            ("paragraph", "Be kind."),
        ]
    )
    chunks = chunk(doc, ["PUBLIC"] * 4, max_chars=200)
    assert texts(chunks) == ["# Scope\n\nApplies to staff.", "# Rules\n\nBe kind."]
    assert [c.heading_path for c in chunks] == [("Scope",), ("Rules",)]
    assert [c.page for c in chunks] == [1, 2]


def test_heading_path_comes_from_first_paragraph_or_nearest_heading() -> None:
    text = "# Top\n\nBody one.\n\nBody two."
    paragraphs = (
        Paragraph(0, 0, 5, "heading"),
        Paragraph(1, 7, 16, "paragraph", ("Top", "Sub")),
        Paragraph(2, 18, 27, "paragraph"),
    )
    doc = ExtractedDocument(text, paragraphs, "markdown")
    chunks = chunk(doc, ["PUBLIC", "PII", "SECRET"])
    assert [c.heading_path for c in chunks] == [("Top",), ("Top", "Sub"), ("Top",)]


def test_oversized_paragraph_splits_at_sentences_without_overlap() -> None:
    long = "First sentence is here. Second one follows it. Third closes the paragraph."
    doc = make_doc([("paragraph", long)])
    chunks = chunk(doc, ["PUBLIC"], max_chars=50, overlap_chars=20)
    assert texts(chunks) == [
        "First sentence is here. Second one follows it.",
        "Third closes the paragraph.",
    ]
    assert chunks[0].end < chunks[1].start


def test_oversized_sentence_is_cut_at_whitespace_then_hard() -> None:
    doc = make_doc([("paragraph", "alpha beta gamma delta"), ("paragraph", "x" * 25)])
    chunks = chunk(doc, ["PUBLIC", "PII"], max_chars=10)
    assert texts(chunks) == ["alpha beta", "gamma", "delta", "x" * 10, "x" * 10, "x" * 5]
    assert all(len(c.text) <= 10 for c in chunks)


def test_heading_stays_with_the_first_sentences_of_a_long_paragraph() -> None:
    doc = make_doc([("heading", "# H"), ("paragraph", "One two three. Four five six.")])
    chunks = chunk(doc, ["PUBLIC", "PUBLIC"], max_chars=20)
    assert texts(chunks) == ["# H\n\nOne two three.", "Four five six."]


def test_small_neighbours_merge_only_within_one_label() -> None:
    doc = make_doc(
        [
            ("heading", "# A"),
            ("heading", "# B"),
            ("heading", "# C"),
            ("paragraph", "Tiny."),
        ]
    )
    chunks = chunk(doc, ["PUBLIC", "PUBLIC", "PII", "PII"], max_chars=100, min_chars=50)
    assert texts(chunks) == ["# A\n\n# B", "# C\n\nTiny."]
    assert [c.label for c in chunks] == ["PUBLIC", "PII"]


def test_merge_respects_max_chars_and_min_chars() -> None:
    doc = make_doc([("heading", "# A"), ("heading", "# B"), ("heading", "# C")])
    assert texts(chunk(doc, ["PUBLIC"] * 3, max_chars=8, min_chars=50)) == ["# A\n\n# B", "# C"]
    assert texts(chunk(doc, ["PUBLIC"] * 3, max_chars=100, min_chars=3)) == ["# A", "# B", "# C"]


def test_merge_never_spans_a_blank_paragraph_of_another_label() -> None:
    doc = make_doc([("paragraph", "One."), ("paragraph", "   "), ("paragraph", "Two.")])
    chunks = chunk(doc, ["PUBLIC", "SECRET", "PUBLIC"], max_chars=100, min_chars=50)
    assert texts(chunks) == ["One.", "Two."]


def test_overlap_starts_at_a_sentence_boundary_and_stays_within_budget() -> None:
    doc = make_doc(
        [
            ("paragraph", "Alpha one. Alpha two."),
            ("paragraph", "Beta one. Beta two."),
            ("paragraph", "Gamma one."),
        ]
    )
    chunks = chunk(doc, ["PUBLIC"] * 3, max_chars=40, overlap_chars=12)
    assert texts(chunks) == [
        "Alpha one. Alpha two.",
        "Alpha two.\n\nBeta one. Beta two.",
        "Beta two.\n\nGamma one.",
    ]
    for left, right in itertools.pairwise(chunks):
        assert 0 < left.end - right.start <= 12
        assert len(right.text) <= 40


def test_overlap_never_reaches_into_another_segment() -> None:
    doc = make_doc([("paragraph", "Alpha one. Alpha two."), ("paragraph", "Beta one.")])
    chunks = chunk(doc, ["PUBLIC", "PII"], max_chars=40, overlap_chars=12)
    assert texts(chunks) == ["Alpha one. Alpha two.", "Beta one."]


def test_empty_document_and_blank_paragraphs_give_no_chunks() -> None:
    assert chunk(make_doc([]), []) == ()
    assert chunk(make_doc([("paragraph", "  \n ")]), ["PUBLIC"]) == ()


def test_bad_input_is_rejected() -> None:
    doc = make_doc([("paragraph", "One."), ("paragraph", "Two.")])
    config = ChunkingSettings()
    with pytest.raises(InputRejected) as partial:
        chunk_document(doc, [Segment("PUBLIC", 0, 0, 0, 4)], settings=config)
    assert partial.value.reason_code == "SEGMENTS_MISMATCH"
    with pytest.raises(InputRejected):
        chunk_document(
            doc, [Segment("PUBLIC", 1, 1, 6, 10), Segment("PII", 0, 0, 0, 4)], settings=config
        )
    overlapping = ExtractedDocument(
        "abcdef", (Paragraph(0, 0, 4, "paragraph"), Paragraph(1, 2, 6, "paragraph")), "text"
    )
    with pytest.raises(InputRejected) as bad_map:
        chunk(overlapping, ["PUBLIC", "PUBLIC"])
    assert bad_map.value.reason_code == "BAD_PARAGRAPH_MAP"
    with pytest.raises(ConfigurationError):
        chunk(doc, ["PUBLIC", "PUBLIC"], max_chars=10, overlap_chars=10)
    with pytest.raises(ConfigurationError):
        chunk(doc, ["PUBLIC", "PUBLIC"], max_chars=0)


def test_export_list() -> None:
    assert sorted(chunking_package.__all__) == [
        "TOO_MANY_CHUNKS", "chunk_document", "chunk_ids", "split_sentences"]


# ---------------------------------------------------------------------- properties

WORDS = st.sampled_from(
    [
        "alpha",
        "beta",
        "No.",
        "3.5",
        "CC6.1",
        "e.g.",
        "Mr.",
        "营收",
        "下降。",
        "why?",
        "yes!",
        "end.",
        "x" * 30,
        "§",
        "(a).",
        "\n",
        "  ",
    ]
)
LABELS = st.sampled_from(["PUBLIC", "INTERNAL", "PII", "RESTRICTED"])


@st.composite
def labelled_documents(draw: st.DrawFn) -> tuple[ExtractedDocument, list[str]]:
    count = draw(st.integers(0, 10))
    blocks: list[tuple[str, str]] = []
    for _ in range(count):
        kind = draw(st.sampled_from(["paragraph", "paragraph", "heading", "list"]))
        words = draw(st.lists(WORDS, max_size=25))
        padding = draw(st.sampled_from(["", " ", "\n"]))
        blocks.append((kind, padding + " ".join(words) + padding))
    separators = draw(
        st.lists(
            st.sampled_from(["\n\n", "\n", " \n\n "]),
            min_size=max(count - 1, 0),
            max_size=max(count - 1, 0),
        )
    )
    labels = draw(st.lists(LABELS, min_size=count, max_size=count))
    return make_doc(blocks, separators), labels


@st.composite
def chunk_settings(draw: st.DrawFn) -> ChunkingSettings:
    max_chars = draw(st.integers(1, 300))
    return ChunkingSettings(
        max_chars=max_chars,
        min_chars=draw(st.integers(0, max_chars)),
        overlap_chars=draw(st.sampled_from([0, 0, draw(st.integers(0, max_chars - 1))])),
    )


def overlapped_paragraphs(doc: ExtractedDocument, c: ChunkDraft) -> list[int]:
    return [i for i, p in enumerate(doc.paragraphs) if p.start < c.end and c.start < p.end]


@pytest.mark.invariant
@settings(max_examples=300, deadline=None)
@given(labelled_documents(), chunk_settings())
def test_invariant_one_label_per_chunk(
    case: tuple[ExtractedDocument, list[str]], config: ChunkingSettings
) -> None:
    doc, labels = case
    chunks = chunk_document(doc, segments_for(doc, labels), settings=config)
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        touched = overlapped_paragraphs(doc, c)
        assert touched, "a chunk lies inside some paragraph"
        assert {labels[i] for i in touched} == {c.label}


@settings(max_examples=300, deadline=None)
@given(labelled_documents(), chunk_settings())
def test_chunks_are_trimmed_ordered_bounded_and_cover_every_paragraph(
    case: tuple[ExtractedDocument, list[str]], config: ChunkingSettings
) -> None:
    doc, labels = case
    chunks = chunk_document(doc, segments_for(doc, labels), settings=config)
    assert chunks == chunk_document(doc, segments_for(doc, labels), settings=config)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text and c.text == c.text.strip()
        assert len(c.text) <= config.max_chars
    for left, right in itertools.pairwise(chunks):
        assert left.start < right.start and left.end < right.end
        if config.overlap_chars == 0:
            assert left.end <= right.start
        else:
            assert left.end - right.start <= config.overlap_chars
    covered = {i for c in chunks for i in range(c.start, c.end)}
    for p in doc.paragraphs:
        visible = {i for i in range(p.start, p.end) if not doc.text[i].isspace()}
        assert visible <= covered
