"""What a reader gets back of a stored chunk: the one place every backend shapes it.

Authorization has already admitted the chunk's body (inside the query); what remains is the
text derived from its document (title, source path, source id, heading path, locator), each
part shown only if its own label is granted (:func:`affidavit.policy.derived.shown_to`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from affidavit.policy.derived import SOURCE_WITHHELD, derived_from_json, shown_to
from affidavit.records import AuthzContext, Chunk
from affidavit.store.protocol import ChunkRecord


def chunk_record_for(authz: AuthzContext, chunk: Chunk, *, title: str, alias: str,
                     source_id: str, source_system: str, is_head: bool,
                     derived_json: object) -> ChunkRecord:
    """The record of a readable chunk as ``authz`` may see it."""
    shown = shown_to(chunk, authz.granted_labels,
                     derived=derived_from_json(derived_json, title=title, alias=alias))
    assert shown.derived is not None  # shown_to always sets it
    # A source id is most often the path itself: it is withheld with the path.
    shown_source = source_id if shown.derived.alias == alias else SOURCE_WITHHELD
    return ChunkRecord(shown, shown.derived.title, shown.derived.alias, shown_source,
                       source_system, is_head)


Row = TypeVar("Row", bound=Sequence[object])


def first_row_per_chunk(rows: Iterable[Row]) -> list[Row]:
    """The first row of each chunk id (rows ordered by chunk id, preferred row first).

    Several versions of one node may hold a chunk id (an unchanged chunk keeps its id across
    an edit): they hold the same text under the same label and heading path, so a lookup by
    id that is not limited to the head takes one of them, the head's when there is one."""
    kept: list[Row] = []
    for row in rows:
        if not kept or kept[-1][0] != row[0]:
            kept.append(row)
    return kept
