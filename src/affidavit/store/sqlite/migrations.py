"""Named, numbered schema migrations for the SQLite backend.

A migration is applied once, inside a transaction, and recorded in ``schema_migrations``.
New migrations are appended; an applied one is never edited.
"""

from __future__ import annotations

from affidavit.store.rows import Migration
from affidavit.store.sqlite.initial_schema import INITIAL_SCHEMA

SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial_schema", INITIAL_SCHEMA),
    Migration(2, "vectors_and_generation", """
-- Vector plane: one float32 vector per (chunk, embedding model); derived and disposable.
CREATE TABLE vectors (
    tenant_id TEXT NOT NULL,
    model_id  TEXT NOT NULL,
    chunk_id  TEXT NOT NULL,
    dim       INTEGER NOT NULL,
    vector    BLOB NOT NULL,
    PRIMARY KEY (tenant_id, model_id, chunk_id)
) WITHOUT ROWID;
ALTER TABLE lexical_stats ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
"""),
    Migration(3, "listings_and_quarantine_review", """
-- Which nodes the last full listing of a source location contained: a node missing from
-- the next full listing is withdrawn.
CREATE TABLE source_listings (
    tenant_id TEXT NOT NULL,
    listing   TEXT NOT NULL,
    node_id   TEXT NOT NULL,
    PRIMARY KEY (tenant_id, listing, node_id)
) WITHOUT ROWID;
ALTER TABLE quarantine ADD COLUMN released_by TEXT;
ALTER TABLE quarantine ADD COLUMN released_at TEXT;
"""),
    Migration(4, "lookup_indexes", """
-- Every commit counts a node's aliases, and SIRE lookups find head versions by id.
CREATE INDEX aliases_node ON aliases (tenant_id, node_id);
CREATE INDEX head_map_version ON head_map (tenant_id, version_id);
CREATE INDEX nodes_source ON nodes (tenant_id, source_id);
"""),
    Migration(5, "acl_by_token", """
-- The authz filter starts from the caller's tokens.
CREATE INDEX acl_by_token ON acl_tokens (tenant_id, token, version_id);
"""),
    Migration(6, "ledger_link_format", """
-- How each ledger record's hash binds its columns (affidavit.ledger.chain). Records written
-- before carry 1 (payload and prev_hash only) and still verify; new ones are written as 2
-- (every column bound). Adding a column is not an UPDATE: the append-only triggers hold.
ALTER TABLE ledger ADD COLUMN link_format INTEGER NOT NULL DEFAULT 1;
"""),
    Migration(7, "identity_claims", """
-- Which source path owns each node's identity. Another path claiming the same source id is
-- an identity collision: refused (quarantined) until an operator resolves it. A node with
-- no row here (ingested before) is owned by the path of its newest version.
CREATE TABLE identity_claims (
    tenant_id  TEXT NOT NULL,
    node_id    TEXT NOT NULL,
    alias      TEXT NOT NULL,
    claimed_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, node_id)
);
-- Operators' recorded resolutions, append-only.
CREATE TABLE identity_resolutions (
    tenant_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    node_id     TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    claimant    TEXT NOT NULL,
    owner       TEXT NOT NULL,
    decision    TEXT NOT NULL,
    resolved_by TEXT NOT NULL,
    resolved_at TEXT NOT NULL,
    note        TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE TRIGGER identity_resolutions_no_update BEFORE UPDATE ON identity_resolutions
BEGIN SELECT RAISE(ABORT, 'identity resolutions are append-only'); END;
CREATE TRIGGER identity_resolutions_no_delete BEFORE DELETE ON identity_resolutions
BEGIN SELECT RAISE(ABORT, 'identity resolutions are append-only'); END;
"""),
    Migration(8, "label_epochs", """
-- The sensitivity policy each chunk was labelled under. Rows written before carry '', which
-- matches no reader's epoch: they are not served until re-labelled from their blob.
ALTER TABLE chunks ADD COLUMN label_epoch TEXT NOT NULL DEFAULT '';
"""),
    Migration(10, "compact_lexical_plane", """
-- A posting repeated the tenant id, the term and a 32-hex chunk id (about 55 bytes for one
-- term frequency): now a term has a per-tenant integer key, a chunk an integer key, and a
-- posting is three integers, ordered by term (affidavit.store.sqlite.lexical).
CREATE TABLE lexical_terms (
    term_key  INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    term      TEXT NOT NULL
);
CREATE UNIQUE INDEX lexical_terms_by_term ON lexical_terms (tenant_id, term);
ALTER TABLE chunks ADD COLUMN chunk_key INTEGER;
UPDATE chunks SET chunk_key = rowid;
CREATE UNIQUE INDEX chunks_by_key ON chunks (chunk_key);
CREATE TABLE lexical_postings (
    term_key  INTEGER NOT NULL,
    chunk_key INTEGER NOT NULL,
    tf        INTEGER NOT NULL,
    PRIMARY KEY (term_key, chunk_key)
) WITHOUT ROWID;
INSERT INTO lexical_terms (tenant_id, term)
    SELECT DISTINCT tenant_id, term FROM postings ORDER BY tenant_id, term;
INSERT INTO lexical_postings (term_key, chunk_key, tf)
    SELECT t.term_key, c.chunk_key, p.tf FROM postings p
    JOIN lexical_terms t ON t.tenant_id = p.tenant_id AND t.term = p.term
    JOIN chunks c ON c.tenant_id = p.tenant_id AND c.chunk_id = p.chunk_id
    ORDER BY t.term_key, c.chunk_key;
DROP TABLE postings;
-- The old shape, for readers of whole postings (snapshots, checks).
CREATE VIEW postings (tenant_id, term, chunk_id, tf) AS
    SELECT t.tenant_id, t.term, c.chunk_id, p.tf FROM lexical_postings p
    JOIN lexical_terms t ON t.term_key = p.term_key
    JOIN chunks c ON c.chunk_key = p.chunk_key;
-- The normalized text was a third copy of every document's text, never read back: it is
-- derived from the blob (the authority) and the chunks hold what is served.
ALTER TABLE versions DROP COLUMN normalized_text;
"""),
    Migration(11, "api_keys", """
-- Service API keys: a salted hash of each secret, never the secret. The tenant is part of
-- the key's lookup, so a key only ever resolves inside its own tenant.
CREATE TABLE api_keys (
    tenant_id   TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    principal   TEXT NOT NULL,
    role        TEXT NOT NULL,
    salt        TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT,
    revoked_at  TEXT,
    PRIMARY KEY (tenant_id, key_id)
);
"""),
    Migration(12, "derived_text_labels", """
-- The labels of the strings shown beside a chunk's body: its document's title, its source
-- path and each heading of its path (JSON). NULL for rows written before: unknown labels,
-- so those strings are withheld from every reader until the document is derived again.
ALTER TABLE chunks ADD COLUMN derived_json TEXT;
"""),
    Migration(13, "policy_events", """
-- The audit trail of every change to a tenant's policy (tuples, grants, API keys, SIRE
-- state, quarantine releases, identity resolutions, label overrides, settings): who, when,
-- before and after, hash-chained (affidavit.audit). A revocation is an event here, never a
-- deletion: the triggers refuse every change to a written event.
CREATE TABLE policy_events (
    tenant_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    actor       TEXT NOT NULL,
    at          TEXT NOT NULL,
    before_json TEXT NOT NULL,
    after_json  TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    event_hash  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE TRIGGER policy_events_no_update BEFORE UPDATE ON policy_events
BEGIN SELECT RAISE(ABORT, 'policy events are append-only'); END;
CREATE TRIGGER policy_events_no_delete BEFORE DELETE ON policy_events
BEGIN SELECT RAISE(ABORT, 'policy events are append-only'); END;
"""),
    Migration(14, "references", """
-- References (spec 004): a citation of an answer (source: its ledger record) or a soft link
-- between two documents. classification is the most severe label of everything the row's
-- strings came from; every read filters on it, and on both ends being readable.
CREATE TABLE refs (
    tenant_id       TEXT NOT NULL,
    ref_id          TEXT NOT NULL,
    kind            TEXT NOT NULL,
    source_type     TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    target_id       TEXT NOT NULL,
    target_chunk_id TEXT,
    location_type   TEXT,
    location_detail TEXT NOT NULL,
    label           TEXT NOT NULL,
    reason          TEXT NOT NULL,
    classification  TEXT NOT NULL,
    created_by      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, ref_id)
);
CREATE INDEX refs_by_source ON refs (tenant_id, source_id);
CREATE INDEX refs_by_target ON refs (tenant_id, target_id);
"""),
    Migration(15, "policy_generation", """
-- A counter of the tenant's stored policy, bumped by triggers in the transaction of every
-- change to its tuples or grants, whatever path wrote it: a cached authorization context is
-- keyed by it, so the very next request after a change reads the new policy.
CREATE TABLE policy_generations (
    tenant_id  TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
);
""" + "".join(f"""
CREATE TRIGGER {table}_{event.lower()}_policy_generation AFTER {event} ON {table}
BEGIN INSERT INTO policy_generations VALUES ({row}.tenant_id, 1)
      ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1; END;
""" for table in ("relation_tuples", "label_grants")
    for event, row in (("INSERT", "NEW"), ("DELETE", "OLD"), ("UPDATE", "NEW")))),
    Migration(16, "chunk_rows_by_version", """
-- A chunk id no longer names a version (affidavit.chunking.ids): the unchanged chunks of an
-- edited document keep their ids, so several versions of a node may hold one id and a chunk
-- row is keyed by id and version. Rows written before keep their ids (old ledger records
-- cite them) and their lexical keys. SQLite cannot change a primary key in place: the table
-- is copied, and the postings view over it is made again.
DROP VIEW postings;
CREATE TABLE chunks_by_version (
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
);
INSERT INTO chunks_by_version (tenant_id, chunk_id, version_id, node_id, ordinal,
    start_offset, end_offset, text, label, heading_path_json, locator, witness, n_tokens,
    is_head, label_epoch, chunk_key, derived_json)
    SELECT tenant_id, chunk_id, version_id, node_id, ordinal, start_offset, end_offset, text,
    label, heading_path_json, locator, witness, n_tokens, is_head, label_epoch, chunk_key,
    derived_json FROM chunks ORDER BY rowid;
DROP TABLE chunks;
ALTER TABLE chunks_by_version RENAME TO chunks;
CREATE INDEX chunks_version ON chunks (tenant_id, version_id);
CREATE UNIQUE INDEX chunks_by_key ON chunks (chunk_key);
CREATE VIEW postings (tenant_id, term, chunk_id, tf) AS
    SELECT t.tenant_id, t.term, c.chunk_id, p.tf FROM lexical_postings p
    JOIN lexical_terms t ON t.term_key = p.term_key
    JOIN chunks c ON c.chunk_key = p.chunk_key;
"""),
    Migration(17, "text_stored_once", """
-- A document's text was stored twice, its raw bytes in blobs and each chunk's text in chunks
-- (affidavit.store.sqlite.texts). A blob may now be stored deflated (zlib) when that is
-- smaller, and says so; existing blobs are deflated here (affidavit_deflate is a function of
-- the store's connection).
ALTER TABLE blobs ADD COLUMN encoding TEXT NOT NULL DEFAULT 'raw';
UPDATE blobs SET content = affidavit_deflate(content), encoding = 'zlib'
    WHERE length(affidavit_deflate(content)) < length(content);
-- A version's normalised text when it is not its blob's UTF-8 text, deflated, once.
CREATE TABLE version_texts (
    tenant_id  TEXT NOT NULL,
    version_id TEXT NOT NULL,
    text       BLOB NOT NULL,
    PRIMARY KEY (tenant_id, version_id)
);
-- A chunk that is the span [start_offset, end_offset) of its version's text stores ''; for
-- the rows written before, that text is the blob's (no version_texts row exists for them).
UPDATE chunks SET text = '' WHERE text <> '' AND text = (
    SELECT affidavit_blob_span(b.content, b.encoding, chunks.start_offset, chunks.end_offset)
    FROM versions v JOIN blobs b ON b.tenant_id = v.tenant_id AND b.raw_digest = v.raw_digest
    WHERE v.tenant_id = chunks.tenant_id AND v.version_id = chunks.version_id);
-- Paragraph labels keyed without a rowid: the key's index was a second copy of every row.
CREATE TABLE paragraph_labels_keyed (
    tenant_id    TEXT NOT NULL,
    version_id   TEXT NOT NULL,
    idx          INTEGER NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset   INTEGER NOT NULL,
    label        TEXT NOT NULL,
    reasons_json TEXT NOT NULL,
    PRIMARY KEY (tenant_id, version_id, idx)
) WITHOUT ROWID;
INSERT INTO paragraph_labels_keyed (tenant_id, version_id, idx, start_offset, end_offset,
    label, reasons_json) SELECT tenant_id, version_id, idx, start_offset, end_offset, label,
    reasons_json FROM paragraph_labels;
DROP TABLE paragraph_labels;
ALTER TABLE paragraph_labels_keyed RENAME TO paragraph_labels;
"""),
    Migration(18, "chunk_rows_keyed_by_integer", """
-- A chunk row's lexical key is its rowid (affidavit.store.sqlite.chunks): a posting reaches its
-- chunk without an index, and the key is given as the row is inserted, not by an update
-- that rewrote it. Two narrow indexes instead of three wide ones: (tenant, version) and
-- (tenant, chunk id), neither holding both ids; a version's chunk ids stay unique because
-- each one is given its own key (a second row with the same id would take the same rowid
-- and be refused). Derived labels are stored as a JSON array [title, alias,
-- headings(, page)], not an object naming each field in every row. SQLite cannot change a
-- primary key in place: the table is copied in key order, the postings view made again.
DROP VIEW postings;
CREATE TABLE chunks_keyed (
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
    chunk_key         INTEGER PRIMARY KEY,
    derived_json      TEXT
);
INSERT INTO chunks_keyed (tenant_id, chunk_id, version_id, node_id, ordinal, start_offset,
    end_offset, text, label, heading_path_json, locator, witness, n_tokens, is_head,
    label_epoch, chunk_key, derived_json)
    SELECT tenant_id, chunk_id, version_id, node_id, ordinal, start_offset, end_offset, text,
    label, heading_path_json, locator, witness, n_tokens, is_head, label_epoch, chunk_key,
    affidavit_compact_derived(derived_json) FROM chunks ORDER BY chunk_key NULLS LAST;
DROP TABLE chunks;
ALTER TABLE chunks_keyed RENAME TO chunks;
CREATE INDEX chunk_rows_by_version ON chunks (tenant_id, version_id);
CREATE INDEX chunk_rows_by_id ON chunks (tenant_id, chunk_id);
CREATE VIEW postings (tenant_id, term, chunk_id, tf) AS
    SELECT t.tenant_id, t.term, c.chunk_id, p.tf FROM lexical_postings p
    JOIN lexical_terms t ON t.term_key = p.term_key
    JOIN chunks c ON c.chunk_key = p.chunk_key;
-- A version's paragraph labels are one row, a JSON array of [index, start, end, label,
-- reasons], in index order: the version id and the row's key were most of each paragraph's
-- row. The view keeps the old shape for readers of whole rows.
CREATE TABLE paragraph_label_sets (
    tenant_id   TEXT NOT NULL,
    version_id  TEXT NOT NULL,
    labels_json TEXT NOT NULL,
    PRIMARY KEY (tenant_id, version_id)
) WITHOUT ROWID;
INSERT INTO paragraph_label_sets (tenant_id, version_id, labels_json)
    SELECT tenant_id, version_id, json_group_array(json_array(idx, start_offset, end_offset,
    label, json(reasons_json))) FROM (SELECT * FROM paragraph_labels
    ORDER BY tenant_id, version_id, idx) GROUP BY tenant_id, version_id;
DROP TABLE paragraph_labels;
CREATE VIEW paragraph_labels (tenant_id, version_id, idx, start_offset, end_offset, label,
    reasons_json) AS
    SELECT s.tenant_id, s.version_id, json_extract(p.value, '$[0]'),
    json_extract(p.value, '$[1]'), json_extract(p.value, '$[2]'),
    json_extract(p.value, '$[3]'), json_extract(p.value, '$[4]')
    FROM paragraph_label_sets s, json_each(s.labels_json) p;
"""),
    Migration(19, "sire_policy_generation", """
-- A SIRE's state decides whether its document may ground an answer: it is policy too. Every
-- change to the sire table bumps the tenant's policy generation, so what is remembered of
-- SIRE states (affidavit.identity.active) is keyed by it like an authorization context.
""" + "".join(f"""
CREATE TRIGGER sire_{event.lower()}_policy_generation AFTER {event} ON sire
BEGIN INSERT INTO policy_generations VALUES ({row}.tenant_id, 1)
      ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1; END;
""" for event, row in (("INSERT", "NEW"), ("DELETE", "OLD"), ("UPDATE", "NEW")))),
    Migration(23, "reference_text_labels", """
-- The text written with a reference (its reason, label and location detail) gets a label of
-- its own, found by the detectors: a reader not granted it sees the reference with that text
-- withheld. A row stored before took that text's label into its classification, so the
-- classification is a safe label for its text.
ALTER TABLE refs ADD COLUMN text_label TEXT;
UPDATE refs SET text_label = classification;
"""),
    Migration(22, "document_submitters", """
-- The principal that submitted a node's first version over the service: its owner, who
-- (with an administrator) alone may supersede it (affidavit.ingest.supersession). NULL for a node
-- an operator ingested, or one claimed before submitters were kept.
ALTER TABLE identity_claims ADD COLUMN submitted_by TEXT;
"""),
)
