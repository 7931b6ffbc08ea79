"""Every backend returns a chunk's title, path and headings as the reader may see them."""

from __future__ import annotations

from dataclasses import replace

from tests.store.test_store_contract import T, bundle, ctx

from affidavit.policy.derived import HEADING_WITHHELD, SOURCE_WITHHELD, TITLE_WITHHELD
from affidavit.records import DerivedText
from affidavit.store import Store

TOKENS = {"user:x", "group:staff#member"}


def _commit_with_labels(store: Store, derived: DerivedText | None) -> str:
    version = bundle("n1", "v1", [("INTERNAL", "alpha beta", {"alpha": 1, "beta": 1})])
    chunk = replace(version.chunks[0], heading_path=("Overview", "Lighthouse deal"),
                    derived=derived)
    store.commit_version(replace(version, chunks=(chunk,)))
    return chunk.chunk_id


def test_store_withholds_each_derived_string_whose_label_is_not_granted(store: Store) -> None:
    chunk_id = _commit_with_labels(store, DerivedText(
        title="Title n1", title_label="FINANCIAL", alias="n1.md", alias_label="INTERNAL",
        heading_labels=("INTERNAL", "RESTRICTED"), page=3))
    [full] = store.get_chunks(ctx(TOKENS, {"PUBLIC", "INTERNAL", "FINANCIAL", "RESTRICTED"}),
                              [chunk_id])
    assert full.title == "Title n1" and full.alias == "n1.md"
    assert full.chunk.heading_path == ("Overview", "Lighthouse deal")
    assert full.chunk.locator == "n1.md | p. 3 | Overview > Lighthouse deal | chars 0-10"
    [part] = store.get_chunks(ctx(TOKENS, {"PUBLIC", "INTERNAL"}), [chunk_id])
    assert part.chunk.text == "alpha beta"  # the body is the authz filter's business
    assert part.title == "n1.md"  # the path stands in for the title
    assert part.chunk.heading_path == ("Overview", HEADING_WITHHELD)
    assert part.chunk.locator == f"n1.md | p. 3 | Overview > {HEADING_WITHHELD} | chars 0-10"
    assert "Lighthouse" not in repr(part) and "Title n1" not in repr(part)
    assert part.chunk.derived is not None
    assert part.chunk.derived.withheld == {"title", "headings"}


def test_store_shows_no_derived_string_of_unknown_label(store: Store) -> None:
    chunk_id = _commit_with_labels(store, None)
    [record] = store.get_chunks(ctx(TOKENS, {"PUBLIC", "INTERNAL", "RESTRICTED"}), [chunk_id])
    assert (record.title, record.alias, record.source_id) == (
        TITLE_WITHHELD, SOURCE_WITHHELD, SOURCE_WITHHELD)
    assert record.chunk.heading_path == (HEADING_WITHHELD, HEADING_WITHHELD)
    assert "Lighthouse" not in record.chunk.locator and "n1" not in record.chunk.locator
    # Audit reads (ledger replay) get the stored strings and their labels unchanged.
    [audit] = store.chunks_with_label(T, [chunk_id], "INTERNAL")
    assert audit.heading_path == ("Overview", "Lighthouse deal")
    assert audit.derived is not None and audit.derived.title == "Title n1"
