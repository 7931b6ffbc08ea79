"""Named, numbered schema migrations of the PostgreSQL backend, and its security setup.

Migrations run as the schema owner, one transaction each, recorded in
``schema_migrations``; an applied one is never edited. The security setup
(:func:`security_statements`) is idempotent and runs after them: it turns on row-level
security on every tenant table (forced, so that even the owner is filtered), installs the
one ``tenant_isolation`` policy per table and grants the application role exactly the
privileges it needs. The ledger and the head history are insert-only for that role, and a
trigger refuses edits of the ledger by anyone.

Text columns use the ``"C"`` collation so that every ``ORDER BY`` sorts by code point, as
SQLite does, whatever locale the cluster was initialised with.
"""

from __future__ import annotations

from affidavit.store.postgres.initial_schema import _INITIAL_SCHEMA, _T
from affidavit.store.rows import Migration

TENANT_SETTING = "affidavit.tenant"
"""The transaction-local setting that names the tenant of the current transaction."""

POLICY_NAME = "tenant_isolation"

_INGEST_QUEUE = f"""
-- One row per document of a queued ingestion run. Workers claim rows with
-- FOR UPDATE SKIP LOCKED; claim_token fences a claim that was taken over after its
-- heartbeat went stale.
CREATE TABLE ingest_queue (
    tenant_id     {_T} NOT NULL,
    run_id        {_T} NOT NULL,
    seq           INTEGER NOT NULL,
    source_system {_T} NOT NULL,
    source_id     {_T} NOT NULL,
    source_rev    {_T} NOT NULL,
    alias         {_T} NOT NULL,
    content       BYTEA NOT NULL,
    metadata_json {_T} NOT NULL,
    rejection_json {_T},
    status        {_T} NOT NULL DEFAULT 'queued',
    claimed_by    {_T},
    claim_token   {_T},
    claimed_at    TIMESTAMPTZ,
    heartbeat     TIMESTAMPTZ,
    attempts      INTEGER NOT NULL DEFAULT 0,
    outcome       {_T},
    reason_code   {_T},
    message       {_T},
    chunks        INTEGER NOT NULL DEFAULT 0,
    warnings_json {_T} NOT NULL DEFAULT '[]',
    enqueued_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at   TIMESTAMPTZ,
    CHECK (status IN ('queued', 'claimed', 'done')),
    PRIMARY KEY (tenant_id, run_id, seq)
);
CREATE INDEX ingest_queue_pending ON ingest_queue (tenant_id, enqueued_at, run_id, seq)
    WHERE status <> 'done';
"""

_COVERING_KEYS = """
-- Lexical search probes a chunk for every posting of the query terms: with what scoring and
-- the authz filter read of a chunk (and a posting's tf) in the keys, each probe reads index
-- pages only, not a heap page scattered anywhere in the table.
ALTER TABLE chunks DROP CONSTRAINT chunks_pkey,
    ADD PRIMARY KEY (tenant_id, chunk_id) INCLUDE (version_id, label, is_head, n_tokens);
ALTER TABLE postings DROP CONSTRAINT postings_pkey,
    ADD PRIMARY KEY (tenant_id, term, chunk_id) INCLUDE (tf);
"""

_LABEL_EPOCHS = f"""
-- The sensitivity policy each chunk was labelled under. Rows written before carry '', which
-- matches no reader's epoch: they are not served until re-labelled from their blob.
ALTER TABLE chunks ADD COLUMN label_epoch {_T} NOT NULL DEFAULT '';
-- The authz filter now reads the epoch too: keep the lexical probe index-only.
ALTER TABLE chunks DROP CONSTRAINT chunks_pkey,
    ADD PRIMARY KEY (tenant_id, chunk_id) INCLUDE (version_id, label, is_head, n_tokens,
                                                   label_epoch);
"""

_LEDGER_LINK_FORMAT = """
-- How each ledger record's hash binds its columns (affidavit.ledger.chain). Records written
-- before carry 1 (payload and prev_hash only) and still verify; new ones are written as 2
-- (every column bound). A constant default rewrites no row and fires no row trigger.
ALTER TABLE ledger ADD COLUMN link_format INTEGER NOT NULL DEFAULT 1;
"""

_DERIVED_TEXT_LABELS = """
-- The labels of the strings shown beside a chunk's body: its document's title, its source
-- path and each heading of its path (JSON). NULL for rows written before: unknown labels,
-- so those strings are withheld from every reader until the document is derived again.
ALTER TABLE chunks ADD COLUMN derived_json TEXT;
"""

_API_KEYS = f"""
-- Service API keys: a salted hash of each secret, never the secret. The tenant is part of
-- the key's lookup, so a key only ever resolves inside its own tenant (and its RLS scope).
CREATE TABLE api_keys (
    tenant_id   {_T} NOT NULL,
    key_id      {_T} NOT NULL,
    principal   {_T} NOT NULL,
    role        {_T} NOT NULL,
    salt        {_T} NOT NULL,
    secret_hash {_T} NOT NULL,
    created_at  {_T} NOT NULL,
    expires_at  {_T},
    revoked_at  {_T},
    PRIMARY KEY (tenant_id, key_id)
);
"""

_POLICY_EVENTS = f"""
-- The audit trail of every change to a tenant's policy (affidavit.audit): insert-only for
-- the application role, under the tenant's row-level security.
CREATE TABLE policy_events (
    tenant_id   {_T} NOT NULL,
    seq         BIGINT NOT NULL,
    kind        {_T} NOT NULL,
    actor       {_T} NOT NULL,
    at          {_T} NOT NULL,
    before_json TEXT NOT NULL,
    after_json  TEXT NOT NULL,
    prev_hash   {_T} NOT NULL,
    event_hash  {_T} NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
-- The owner too: the database itself refuses edits, deletions and truncation.
CREATE FUNCTION affidavit_policy_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'policy events are append-only';
END $$;
CREATE TRIGGER policy_events_no_update BEFORE UPDATE OR DELETE ON policy_events
    FOR EACH ROW EXECUTE FUNCTION affidavit_policy_events_append_only();
CREATE TRIGGER policy_events_no_truncate BEFORE TRUNCATE ON policy_events
    FOR EACH STATEMENT EXECUTE FUNCTION affidavit_policy_events_append_only();
"""

_IDENTITY_CLAIMS = f"""
-- Which source path owns each node's identity. Another path claiming the same source id is
-- an identity collision: refused (quarantined) until an operator resolves it. A node with
-- no row here (ingested before) is owned by the path of its newest version.
CREATE TABLE identity_claims (
    tenant_id  {_T} NOT NULL,
    node_id    {_T} NOT NULL,
    alias      {_T} NOT NULL,
    claimed_at {_T} NOT NULL,
    PRIMARY KEY (tenant_id, node_id)
);
-- Operators' recorded resolutions: insert-only for the application role.
CREATE TABLE identity_resolutions (
    tenant_id   {_T} NOT NULL,
    seq         BIGINT NOT NULL,
    node_id     {_T} NOT NULL,
    source_id   {_T} NOT NULL,
    claimant    {_T} NOT NULL,
    owner       {_T} NOT NULL,
    decision    {_T} NOT NULL,
    resolved_by {_T} NOT NULL,
    resolved_at {_T} NOT NULL,
    note        {_T} NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
"""

_REFERENCES = f"""
-- References (spec 004): see the SQLite migration "references" for what each column means.
CREATE TABLE refs (
    tenant_id       {_T} NOT NULL,
    ref_id          {_T} NOT NULL,
    kind            {_T} NOT NULL,
    source_type     {_T} NOT NULL,
    source_id       {_T} NOT NULL,
    target_id       {_T} NOT NULL,
    target_chunk_id {_T},
    location_type   {_T},
    location_detail TEXT NOT NULL,
    label           TEXT NOT NULL,
    reason          TEXT NOT NULL,
    classification  {_T} NOT NULL,
    created_by      {_T} NOT NULL,
    created_at      {_T} NOT NULL,
    PRIMARY KEY (tenant_id, ref_id)
);
CREATE INDEX refs_by_source ON refs (tenant_id, source_id);
CREATE INDEX refs_by_target ON refs (tenant_id, target_id);
"""

# Bumped in the transaction of every change to a tenant's tuples or grants, whatever path
# wrote it: a cached authorization context is keyed by it (affidavit.authz.context). The
# trigger runs as the writer, under the tenant's row-level security, on its own tenant row.
_POLICY_GENERATION = f"""
CREATE TABLE policy_generations (
    tenant_id  {_T} PRIMARY KEY,
    generation BIGINT NOT NULL
);
CREATE FUNCTION affidavit_bump_policy_generation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    tenant TEXT := CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END;
BEGIN
    INSERT INTO policy_generations VALUES (tenant, 1)
    ON CONFLICT (tenant_id) DO UPDATE SET generation = policy_generations.generation + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER relation_tuples_policy_generation
    AFTER INSERT OR UPDATE OR DELETE ON relation_tuples
    FOR EACH ROW EXECUTE FUNCTION affidavit_bump_policy_generation();
CREATE TRIGGER label_grants_policy_generation
    AFTER INSERT OR UPDATE OR DELETE ON label_grants
    FOR EACH ROW EXECUTE FUNCTION affidavit_bump_policy_generation();
"""

# A chunk id no longer names a version (affidavit.chunking.ids): the unchanged chunks of an
# edited document keep their ids, so several versions of a node may hold one id and a chunk
# row is keyed by id and version. The id stays first in the key: lexical search still
# probes a posting's chunk by (tenant, id), the head row admitted by the filter. Rows
# written before keep their ids, which old ledger records cite.
_CHUNK_ROWS_BY_VERSION = """
ALTER TABLE chunks DROP CONSTRAINT chunks_pkey,
    ADD PRIMARY KEY (tenant_id, chunk_id, version_id) INCLUDE (label, is_head, n_tokens,
                                                               label_epoch);
"""

# The chunks a caller may read, found from its ACL tokens' versions, in the index alone:
# vector search counts and scans them, lexical search hashes them when they are fewer than
# the postings of the query. Without the chunk id and the filter's columns in the index,
# the planner read every chunk row instead (a sequential scan of the table's text) once a
# caller could read a tenth of a large corpus. It replaces the plain version index.
_READABLE_CHUNKS_INDEX = """
CREATE INDEX chunks_readable ON chunks (tenant_id, version_id)
    INCLUDE (chunk_id, is_head, label, label_epoch, n_tokens);
DROP INDEX chunks_version;
"""

# A SIRE's state decides whether its document may ground an answer: it is policy too, and
# every change to the sire table bumps the tenant's policy generation (what is remembered of
# SIRE states, affidavit.identity.active, is keyed by it). Once per statement over the
# tenants it touched, not once per row: approving a million SIREs is one bump.
_SIRE_POLICY_GENERATION = """
CREATE FUNCTION affidavit_bump_policy_generation_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO policy_generations SELECT DISTINCT tenant_id, 1 FROM changed_rows
    ON CONFLICT (tenant_id) DO UPDATE SET generation = policy_generations.generation + 1;
    RETURN NULL;
END $$;
""" + "".join(f"""
CREATE TRIGGER sire_{event.lower()}_policy_generation AFTER {event} ON sire
    REFERENCING {table} TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION affidavit_bump_policy_generation_rows();
""" for event, table in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")))

# Each posting names the version of its chunk, so lexical search can drop the postings of
# versions the caller may not read (a hash of its ACL tokens' versions) before it probes a
# single chunk row (affidavit.store.postgres.lexical). Postings exist for head chunks only
# and are rewritten with every version that holds their chunk, so the column names the
# head version; the probe still requires that very (chunk, version) row to be head and
# readable, so a posting naming another version admits nothing. The data is moved by the
# owner with row-level security lifted for the migration's transaction (secure_tables
# forces it again at its end); the indexes are rebuilt once, after the update. A plain
# (tenant, term) index is added for counting document frequencies: PostgreSQL stores each
# term of it once with the list of its rows, so it is a sixteenth of the primary key's size
# and a count reads that much less (1,000,000 chunks: 3.7 -> 1.2 ms a query).
_POSTINGS_VERSION = f"""
ALTER TABLE postings NO FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks NO FORCE ROW LEVEL SECURITY;
ALTER TABLE postings DROP CONSTRAINT postings_pkey;
DROP INDEX postings_chunk;
ALTER TABLE postings ADD COLUMN version_id {_T};
UPDATE postings p SET version_id = c.version_id FROM chunks c
    WHERE c.tenant_id = p.tenant_id AND c.chunk_id = p.chunk_id AND c.is_head;
DELETE FROM postings WHERE version_id IS NULL;
ALTER TABLE postings ALTER COLUMN version_id SET NOT NULL;
ALTER TABLE postings ADD PRIMARY KEY (tenant_id, term, chunk_id) INCLUDE (tf, version_id);
CREATE INDEX postings_chunk ON postings (tenant_id, chunk_id);
CREATE INDEX postings_term ON postings (tenant_id, term);
"""

# Each vector names its chunk's head version, so the exact scan reads the vectors of the
# caller's readable versions by index (a sorted array of version ids walks the index and
# the heap in order) instead of probing the primary key once per readable chunk: at
# 1,000,000 chunks a caller reading a tenth was answered in about 450 ms, now in about 100
# (affidavit.store.postgres.vectors). As for postings, the column is a way in, never the
# check: the chunk row of that very (chunk, version) must still be head, of a granted
# label and of the pinned label epoch. The table is rewritten in version order (CLUSTER),
# so a version's vectors share pages; the HNSW indexes are dropped before the update (a
# row update would insert every vector into every graph again) and built once after it,
# from their own definitions.
_VECTORS_VERSION = f"""
ALTER TABLE vectors NO FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks NO FORCE ROW LEVEL SECURITY;
CREATE TEMPORARY TABLE affidavit_vector_graphs ON COMMIT DROP AS
    SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
    FROM pg_index i JOIN pg_am a ON a.oid = (SELECT relam FROM pg_class
                                             WHERE oid = i.indexrelid)
    WHERE i.indrelid = 'vectors'::regclass AND a.amname = 'hnsw';
DO $$
DECLARE graph record;
BEGIN
    FOR graph IN SELECT name FROM affidavit_vector_graphs ORDER BY name LOOP
        EXECUTE 'DROP INDEX ' || graph.name;
    END LOOP;
END $$;
ALTER TABLE vectors ADD COLUMN version_id {_T};
UPDATE vectors v SET version_id = c.version_id FROM chunks c
    WHERE c.tenant_id = v.tenant_id AND c.chunk_id = v.chunk_id AND c.is_head;
CREATE INDEX vectors_version ON vectors (tenant_id, model_id, version_id);
CLUSTER vectors USING vectors_version;
DO $$
DECLARE graph record;
BEGIN
    FOR graph IN SELECT definition FROM affidavit_vector_graphs ORDER BY name LOOP
        EXECUTE graph.definition;
    END LOOP;
END $$;
"""

# See the SQLite migration "reference_text_labels". The owner fills the column for every
# tenant with row-level security lifted for the migration's transaction (secure_tables
# forces it again at its end).
_REFERENCE_TEXT_LABELS = f"""
ALTER TABLE refs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE refs ADD COLUMN text_label {_T};
UPDATE refs SET text_label = classification;
"""

# See the SQLite migration "document_submitters".
_DOCUMENT_SUBMITTERS = f"""
ALTER TABLE identity_claims ADD COLUMN submitted_by {_T};
"""

POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial_schema", _INITIAL_SCHEMA),
    Migration(2, "ingest_queue", _INGEST_QUEUE),
    Migration(3, "covering_keys", _COVERING_KEYS),
    Migration(4, "ledger_link_format", _LEDGER_LINK_FORMAT),
    Migration(5, "identity_claims", _IDENTITY_CLAIMS),
    Migration(6, "label_epochs", _LABEL_EPOCHS),
    Migration(9, "api_keys", _API_KEYS),
    Migration(10, "derived_text_labels", _DERIVED_TEXT_LABELS),
    Migration(11, "policy_events", _POLICY_EVENTS),
    Migration(12, "references", _REFERENCES),
    Migration(13, "policy_generation", _POLICY_GENERATION),
    Migration(14, "chunk_rows_by_version", _CHUNK_ROWS_BY_VERSION),
    Migration(15, "readable_chunks_index", _READABLE_CHUNKS_INDEX),
    Migration(16, "sire_policy_generation", _SIRE_POLICY_GENERATION),
    Migration(17, "postings_version", _POSTINGS_VERSION),
    Migration(18, "vectors_version", _VECTORS_VERSION),
    Migration(22, "reference_text_labels", _REFERENCE_TEXT_LABELS),
    Migration(21, "document_submitters", _DOCUMENT_SUBMITTERS),
)

TENANT_TABLES: tuple[str, ...] = (
    "tenants", "blobs", "nodes", "aliases", "versions", "head_map", "head_history",
    "paragraph_labels", "chunks", "postings", "lexical_stats", "acl_tokens", "relation_tuples",
    "label_grants", "sire", "ledger", "runs", "quarantine", "source_listings", "vectors",
    "vector_models", "ingest_queue", "api_keys", "identity_claims",
    "identity_resolutions", "policy_events", "refs", "policy_generations",
)
"""Every table that holds tenant rows: each one is under the tenant_isolation policy."""

INSERT_ONLY_TABLES = frozenset({"ledger", "head_history", "identity_resolutions",
                                "policy_events"})
"""Tables the application role may read and append to, never change."""


def privileges_for(table: str) -> str:
    """What the application role may do on ``table``."""
    return "SELECT, INSERT" if table in INSERT_ONLY_TABLES else "SELECT, INSERT, UPDATE, DELETE"


def policy_predicate() -> str:
    """Rows of the transaction's tenant only; an unset or empty setting matches nothing."""
    return f"tenant_id = NULLIF(current_setting('{TENANT_SETTING}', true), '')"
