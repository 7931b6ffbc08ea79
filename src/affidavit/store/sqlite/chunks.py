"""Chunk rows and paragraph labels of a version as the SQLite store writes them (migration 18).

A chunk row's lexical key is its rowid: the keys of a version's chunks are the next free
keys, given in chunk id order (as :func:`chunk_keys` says), and each row is inserted with its
key, in key order, so that rows are appended and never rewritten. A posting names its chunk
by that key (:mod:`affidavit.store.sqlite.lexical`).

A version's paragraph labels are one row of ``paragraph_label_sets``: a JSON array of
``[index, start, end, label, reasons]`` in index order. The view ``paragraph_labels`` gives
the old row per paragraph.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from affidavit.policy.derived import derived_to_row
from affidavit.records import ParagraphLabel
from affidavit.store.protocol import CHUNK_INSERT_COLUMNS, VersionBundle
from affidavit.store.sqlite.rows import stored_locator
from affidavit.store.sqlite.texts import stored_chunk_text

Read = Callable[[str, Sequence[object]], list[tuple[object, ...]]]


def chunk_keys(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, int]:
    """The keys of a version's new chunk rows: the next free ones, in chunk id order."""
    first = int(conn.execute("SELECT COALESCE(MAX(chunk_key), 0) + 1 FROM chunks").fetchone()[0])
    return {chunk_id: first + i for i, chunk_id in enumerate(sorted(chunk_ids))}


def write_chunk_rows(conn: sqlite3.Connection, b: VersionBundle) -> dict[str, int]:
    """Insert the version's chunk rows, each with its key; returns the keys by chunk id.

    A chunk id is unique within its version: a second row with the same id would get the
    same key, which the table refuses (no index holds the pair)."""
    keys = chunk_keys(conn, [c.chunk_id for c in b.chunks])
    rows = sorted(
        (keys[c.chunk_id], b.tenant, c.chunk_id, c.version_id, c.node_id, c.ordinal, c.start,
         c.end, stored_chunk_text(b.normalized_text, c.start, c.end, c.text), c.label,
         json.dumps(list(c.heading_path), ensure_ascii=False), stored_locator(c, b.alias),
         "" if c.witness == b.witness else c.witness, b.chunk_lengths[c.chunk_id],
         b.label_epoch, derived_to_row(c.derived))
        for c in b.chunks)
    # With the labels of each chunk's title, path and headings (migration 12), in the row as
    # it is inserted: a row that grows after its insert splits its page.
    conn.executemany(
        f"INSERT INTO chunks (chunk_key, {CHUNK_INSERT_COLUMNS}, derived_json) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)", rows)
    return keys


def paragraph_labels_json(labels: Sequence[tuple[ParagraphLabel, int, int]]) -> str:
    """The ``labels_json`` of a version's paragraph labels (with their spans)."""
    return json.dumps([[pl.index, start, end, pl.label, list(pl.reasons)]
                       for pl, start, end in sorted(labels, key=lambda x: x[0].index)],
                      ensure_ascii=False, separators=(",", ":"))


def write_paragraph_labels(conn: sqlite3.Connection, tenant: str, version_id: str,
                           labels: Sequence[tuple[ParagraphLabel, int, int]]) -> None:
    if labels:  # the view has no row for a version without paragraphs, as before
        conn.execute("INSERT INTO paragraph_label_sets VALUES (?, ?, ?)",
                     (tenant, version_id, paragraph_labels_json(labels)))


def read_paragraph_labels(read: Read, tenant: str, version_id: str) -> list[ParagraphLabel]:
    rows = read("SELECT labels_json FROM paragraph_label_sets WHERE tenant_id = ? "
                "AND version_id = ?", (tenant, version_id))
    if not rows:
        return []
    stored = json.loads(str(rows[0][0]))
    return sorted((ParagraphLabel(int(idx), str(label), tuple(str(r) for r in reasons))
                   for idx, _start, _end, label, reasons in stored), key=lambda p: p.index)

