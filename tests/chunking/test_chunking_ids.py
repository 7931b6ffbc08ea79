"""Chunk ids name what a chunk is (node, heading path, label, text), never its version or
its offsets: the unchanged chunks of an edited document keep their ids."""

from __future__ import annotations

from affidavit.chunking.ids import chunk_ids
from affidavit.records import ChunkDraft


def draft(text: str, *, start: int = 0, label: str = "INTERNAL",
          heading_path: tuple[str, ...] = ("Yard",), ordinal: int = 0) -> ChunkDraft:
    return ChunkDraft(ordinal=ordinal, start=start, end=start + len(text), text=text,
                      label=label, heading_path=heading_path)


def test_a_moved_but_unchanged_chunk_keeps_its_id() -> None:
    before = chunk_ids("acme", "node-1", [draft("The yard opens at six.", start=10)])
    after = chunk_ids("acme", "node-1", [draft("The yard opens at six.", start=250,
                                               ordinal=4)])
    assert before == after and len(before[0]) == 32


def test_text_heading_path_label_node_and_tenant_each_change_the_id() -> None:
    base = chunk_ids("acme", "node-1", [draft("The yard opens at six.")])[0]
    variants = [
        chunk_ids("acme", "node-1", [draft("The yard opens at seven.")])[0],
        chunk_ids("acme", "node-1", [draft("The yard opens at six.", heading_path=("Quay",))])[0],
        chunk_ids("acme", "node-1", [draft("The yard opens at six.", label="RESTRICTED")])[0],
        chunk_ids("acme", "node-2", [draft("The yard opens at six.")])[0],
        chunk_ids("other", "node-1", [draft("The yard opens at six.")])[0],
    ]
    assert base not in variants and len(set(variants)) == len(variants)


def test_identical_spans_of_one_document_get_distinct_ids_in_order() -> None:
    repeated = [draft("Sign the visitor book.", start=0, ordinal=0),
                draft("Sign the visitor book.", start=40, ordinal=1)]
    ids = chunk_ids("acme", "node-1", repeated)
    assert len(set(ids)) == 2
    # A chunk inserted before them shifts nothing: the first occurrence keeps the first id.
    longer = chunk_ids("acme", "node-1", [draft("New rule.", ordinal=0), *repeated])
    assert longer[1:] == ids
