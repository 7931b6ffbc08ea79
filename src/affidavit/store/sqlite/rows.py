"""Chunk rows of the SQLite store as readers get them: text, witness and locator filled in
from where they are stored once (migration 17, :mod:`affidavit.store.sqlite.texts`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache

from affidavit.policy.derived import derived_from_json, format_locator
from affidavit.records import AuthzContext, Chunk
from affidavit.store.protocol import ChunkRecord
from affidavit.store.views import chunk_record_for

# Every reader joins the chunk's version as ``v``: a chunk's witness is its version's, stored
# once there (a chunk row holds '' for it, migration 17).
CHUNK_COLUMNS = (
    "c.chunk_id, c.node_id, c.version_id, c.ordinal, c.start_offset, c.end_offset, c.text, "
    "c.label, c.heading_path_json, c.locator, "
    "CASE c.witness WHEN '' THEN v.witness ELSE c.witness END"
)


def row_chunk(row: Sequence[object], alias: object, derived_json: object, *,
              title: object = "") -> Chunk:
    """A chunk row (``CHUNK_COLUMNS``); its version's alias and the row's derived labels
    rebuild a locator stored as '' (see :func:`stored_locator`). ``title``, the version's,
    changes nothing here; given, the parse is the one the record's derived text reuses."""
    start, end = int(str(row[4])), int(str(row[5]))
    headings = heading_path(str(row[8]))
    locator = str(row[9])
    if not locator:
        page = derived_from_json(derived_json, title=str(title), alias=str(alias)).page
        locator = format_locator(str(alias), page, headings, start, end)
    return Chunk(
        chunk_id=str(row[0]), node_id=str(row[1]), version_id=str(row[2]), ordinal=int(str(row[3])),
        start=start, end=end, text=str(row[6]), label=str(row[7]), heading_path=headings,
        locator=locator, witness=str(row[10]),
    )


@lru_cache(maxsize=4_096)
def chunk_record(authz: AuthzContext, row: tuple[object, ...]) -> ChunkRecord:
    """The record of a row of :meth:`SQLiteStore.get_chunks` as ``authz`` may see it.

    A pure function of the context and the whole row (text, labels, head flag and all), kept
    for the hits that are read back again and again; the row was admitted by the query."""
    return chunk_record_for(authz, row_chunk(row, row[12], row[16], title=row[11]),
                            title=str(row[11]),
                            alias=str(row[12]), source_id=str(row[13]),
                            source_system=str(row[14]), is_head=bool(row[15]),
                            derived_json=row[16])


def stored_locator(chunk: Chunk, alias: str) -> str:
    """'' when the locator is the one its row rebuilds (path, page, headings, offsets), as
    ingest makes it; any other locator is stored as it is."""
    page = chunk.derived.page if chunk.derived is not None else None
    rebuilt = format_locator(alias, page, chunk.heading_path, chunk.start, chunk.end)
    return "" if chunk.locator == rebuilt else chunk.locator


@lru_cache(maxsize=65_536)
def heading_path(stored: str) -> tuple[str, ...]:
    # Decoded once per distinct stored path: the same headings are read back again and again.
    return tuple(json.loads(stored))
