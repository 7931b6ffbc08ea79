"""The SQLite backend's first migration: the schema as it was created, kept verbatim (an applied
migration is never edited; :mod:`affidavit.store.sqlite.migrations` appends the rest)."""

INITIAL_SCHEMA = """
CREATE TABLE tenants (
    tenant_id   TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL
);
-- Blob plane: the only authority. Content-addressed raw bytes.
CREATE TABLE blobs (
    tenant_id     TEXT NOT NULL,
    raw_digest    TEXT NOT NULL,
    content       BLOB NOT NULL,
    size          INTEGER NOT NULL,
    source_system TEXT NOT NULL,
    source_id     TEXT NOT NULL,
    source_rev    TEXT NOT NULL,
    fetched_at    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, raw_digest)
);
CREATE TABLE nodes (
    tenant_id     TEXT NOT NULL,
    node_id       TEXT NOT NULL,
    source_system TEXT NOT NULL,
    source_id     TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, node_id)
);
-- Resolution plane: titles and paths are aliases of a node, never its identity.
CREATE TABLE aliases (
    tenant_id   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    alias_type  TEXT NOT NULL,
    alias_value TEXT NOT NULL,
    epoch       INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, alias_type, alias_value, node_id)
);
CREATE TABLE versions (
    tenant_id       TEXT NOT NULL,
    version_id      TEXT NOT NULL,
    node_id         TEXT NOT NULL,
    raw_digest      TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    title           TEXT NOT NULL,
    alias           TEXT NOT NULL,
    metadata_json   TEXT NOT NULL,
    declared_label  TEXT,
    normalized_text TEXT NOT NULL,
    witness         TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, version_id)
);
CREATE INDEX versions_node ON versions (tenant_id, node_id);
-- Head map: node -> current version (NULL when withdrawn), with append-only history.
CREATE TABLE head_map (
    tenant_id   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    version_id  TEXT,
    raw_digest  TEXT,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, node_id)
);
CREATE TABLE head_history (
    tenant_id           TEXT NOT NULL,
    seq                 INTEGER NOT NULL,
    node_id             TEXT NOT NULL,
    version_id          TEXT,
    previous_version_id TEXT,
    event               TEXT NOT NULL,
    run_id              TEXT NOT NULL,
    at                  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE TABLE paragraph_labels (
    tenant_id    TEXT NOT NULL,
    version_id   TEXT NOT NULL,
    idx          INTEGER NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset   INTEGER NOT NULL,
    label        TEXT NOT NULL,
    reasons_json TEXT NOT NULL,
    PRIMARY KEY (tenant_id, version_id, idx)
);
CREATE TABLE chunks (
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
    PRIMARY KEY (tenant_id, chunk_id)
);
CREATE INDEX chunks_version ON chunks (tenant_id, version_id);
-- Lexical plane: postings of head chunks only (derived; superseded postings are dropped).
CREATE TABLE postings (
    tenant_id TEXT NOT NULL,
    term      TEXT NOT NULL,
    chunk_id  TEXT NOT NULL,
    tf        INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, term, chunk_id)
) WITHOUT ROWID;
CREATE TABLE lexical_stats (
    tenant_id    TEXT PRIMARY KEY,
    n_chunks     INTEGER NOT NULL,
    total_length INTEGER NOT NULL
);
-- ACL plane: the tokens (principals, groups) that may read a document version.
CREATE TABLE acl_tokens (
    tenant_id  TEXT NOT NULL,
    version_id TEXT NOT NULL,
    token      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, version_id, token)
) WITHOUT ROWID;
CREATE TABLE relation_tuples (
    tenant_id  TEXT NOT NULL,
    object     TEXT NOT NULL,
    relation   TEXT NOT NULL,
    subject    TEXT NOT NULL,
    source     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, object, relation, subject)
);
CREATE TABLE label_grants (
    tenant_id  TEXT NOT NULL,
    subject    TEXT NOT NULL,
    label      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, subject, label)
);
CREATE TABLE sire (
    tenant_id   TEXT NOT NULL,
    sire_id     TEXT NOT NULL,
    version_id  TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    tuple_json  TEXT NOT NULL,
    state       TEXT NOT NULL,
    proposed_at TEXT NOT NULL,
    approved_by TEXT,
    approved_at TEXT,
    PRIMARY KEY (tenant_id, sire_id)
);
CREATE UNIQUE INDEX sire_version ON sire (tenant_id, version_id);
CREATE TABLE ledger (
    tenant_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    record_id   TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    payload     TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    record_hash TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE UNIQUE INDEX ledger_record ON ledger (tenant_id, record_id);
CREATE TABLE runs (
    tenant_id    TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    status       TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT,
    params_json  TEXT NOT NULL,
    summary_json TEXT NOT NULL,
    PRIMARY KEY (tenant_id, run_id)
);
CREATE TABLE quarantine (
    tenant_id   TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    alias       TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    reason_code TEXT NOT NULL,
    message     TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (tenant_id, run_id, alias)
);
-- The ledger is append-only: the database itself refuses edits and deletions.
CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
BEGIN SELECT RAISE(ABORT, 'ledger records are append-only'); END;
CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
BEGIN SELECT RAISE(ABORT, 'ledger records are append-only'); END;
"""
