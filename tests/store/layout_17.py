"""A SQLite database as schema version 17 left it, made from one written at 18: the chunk
table keyed by (tenant, chunk id, version) with its rowid, a key column and two indexes,
derived labels as JSON objects, and one row per paragraph label. Tests of migrations 17 and
18 start from it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from affidavit.policy.derived import derived_from_json, derived_to_json

CHUNKS_17 = """
CREATE TABLE chunks_17 (
    tenant_id         TEXT NOT NULL,
    chunk_id          TEXT NOT NULL,
    version_id        TEXT NOT NULL,
    node_id           TEXT NOT NULL,
    ordinal           INTEGER NOT NULL,
    start_offset      INTEGER NOT NULL,
    end_offset        INTEGER NOT NULL,
    text              TEXT NOT NULL,
    label             TEXT NOT NULL,
    heading_path_json TEXT NOT NULL,
    locator           TEXT NOT NULL,
    witness           TEXT NOT NULL,
    n_tokens          INTEGER NOT NULL,
    is_head           INTEGER NOT NULL,
    label_epoch       TEXT NOT NULL DEFAULT '',
    chunk_key         INTEGER,
    derived_json      TEXT,
    PRIMARY KEY (tenant_id, chunk_id, version_id)
)"""
PARAGRAPHS_17 = """
CREATE TABLE paragraph_labels_17 (
    tenant_id    TEXT NOT NULL,
    version_id   TEXT NOT NULL,
    idx          INTEGER NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset   INTEGER NOT NULL,
    label        TEXT NOT NULL,
    reasons_json TEXT NOT NULL,
    PRIMARY KEY (tenant_id, version_id, idx)
) WITHOUT ROWID"""
POSTINGS_VIEW = """
CREATE VIEW postings (tenant_id, term, chunk_id, tf) AS
    SELECT t.tenant_id, t.term, c.chunk_id, p.tf FROM lexical_postings p
    JOIN lexical_terms t ON t.term_key = p.term_key
    JOIN chunks c ON c.chunk_key = p.chunk_key"""


def object_form(stored: object) -> str | None:
    """A stored derived-labels row as versions before 18 wrote it."""
    if stored is None:
        return None
    return derived_to_json(derived_from_json(stored, title="", alias=""))


def downgrade_to_17(path: Path) -> None:
    """Rewrite the 18 (and 19, 22, 23) layout of ``path`` as 17 had it (in one transaction)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.create_function("object_form", 1, object_form)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DROP VIEW postings")
        conn.execute(CHUNKS_17)
        conn.execute(
            "INSERT INTO chunks_17 SELECT tenant_id, chunk_id, version_id, node_id, ordinal, "
            "start_offset, end_offset, text, label, heading_path_json, locator, witness, "
            "n_tokens, is_head, label_epoch, chunk_key, object_form(derived_json) FROM chunks "
            "ORDER BY chunk_key")
        conn.execute("DROP TABLE chunks")
        conn.execute("ALTER TABLE chunks_17 RENAME TO chunks")
        conn.execute("CREATE INDEX chunks_version ON chunks (tenant_id, version_id)")
        conn.execute("CREATE UNIQUE INDEX chunks_by_key ON chunks (chunk_key)")
        conn.execute(POSTINGS_VIEW)
        conn.execute(PARAGRAPHS_17)
        conn.executemany(
            "INSERT INTO paragraph_labels_17 VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(tenant, version, idx, start, end, label, json.dumps(reasons))
             for tenant, version, stored in conn.execute(
                 "SELECT tenant_id, version_id, labels_json FROM paragraph_label_sets").fetchall()
             for idx, start, end, label, reasons in json.loads(stored)])
        conn.execute("DROP VIEW paragraph_labels")
        conn.execute("DROP TABLE paragraph_label_sets")
        conn.execute("ALTER TABLE paragraph_labels_17 RENAME TO paragraph_labels")
        for event in ("insert", "update", "delete"):  # migration 19's, over the 18 layout
            conn.execute(f"DROP TRIGGER IF EXISTS sire_{event}_policy_generation")
        if "text_label" in {str(r[1]) for r in conn.execute("PRAGMA table_info(refs)")}:
            conn.execute("ALTER TABLE refs DROP COLUMN text_label")  # migration 23's
        if "submitted_by" in {str(r[1]) for r in
                              conn.execute("PRAGMA table_info(identity_claims)")}:
            conn.execute("ALTER TABLE identity_claims DROP COLUMN submitted_by")  # 22's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 18")
        conn.execute("COMMIT")
    finally:
        conn.close()
