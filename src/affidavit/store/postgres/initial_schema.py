"""The PostgreSQL backend's first migration: the schema as it was created, kept verbatim (an
applied migration is never edited; :mod:`affidavit.store.postgres.migrations` appends the rest).
``_T`` is the text type every key column uses: byte-ordered, so keys sort as SQLite's do."""

_T = 'TEXT COLLATE "C"'

_INITIAL_SCHEMA = f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE tenants (
    tenant_id   {_T} PRIMARY KEY,
    created_at  {_T} NOT NULL
);
CREATE TABLE blobs (
    tenant_id     {_T} NOT NULL,
    raw_digest    {_T} NOT NULL,
    content       BYTEA NOT NULL,
    size          BIGINT NOT NULL,
    source_system {_T} NOT NULL,
    source_id     {_T} NOT NULL,
    source_rev    {_T} NOT NULL,
    fetched_at    {_T} NOT NULL,
    PRIMARY KEY (tenant_id, raw_digest)
);
CREATE TABLE nodes (
    tenant_id     {_T} NOT NULL,
    node_id       {_T} NOT NULL,
    source_system {_T} NOT NULL,
    source_id     {_T} NOT NULL,
    created_at    {_T} NOT NULL,
    PRIMARY KEY (tenant_id, node_id)
);
CREATE INDEX nodes_source ON nodes (tenant_id, source_id);
CREATE TABLE aliases (
    tenant_id   {_T} NOT NULL,
    node_id     {_T} NOT NULL,
    alias_type  {_T} NOT NULL,
    alias_value {_T} NOT NULL,
    epoch       INTEGER NOT NULL,
    created_at  {_T} NOT NULL,
    PRIMARY KEY (tenant_id, alias_type, alias_value, node_id)
);
-- Every commit counts its node's aliases (the alias epoch).
CREATE INDEX aliases_node ON aliases (tenant_id, node_id);
CREATE TABLE versions (
    tenant_id       {_T} NOT NULL,
    version_id      {_T} NOT NULL,
    node_id         {_T} NOT NULL,
    raw_digest      {_T} NOT NULL,
    fingerprint     {_T} NOT NULL,
    title           {_T} NOT NULL,
    alias           {_T} NOT NULL,
    metadata_json   {_T} NOT NULL,
    declared_label  {_T},
    normalized_text {_T} NOT NULL,
    witness         {_T} NOT NULL,
    run_id          {_T} NOT NULL,
    created_at      {_T} NOT NULL,
    PRIMARY KEY (tenant_id, version_id)
);
CREATE INDEX versions_node ON versions (tenant_id, node_id);
CREATE TABLE head_map (
    tenant_id   {_T} NOT NULL,
    node_id     {_T} NOT NULL,
    version_id  {_T},
    raw_digest  {_T},
    updated_at  {_T} NOT NULL,
    PRIMARY KEY (tenant_id, node_id)
);
CREATE INDEX head_map_version ON head_map (tenant_id, version_id);
CREATE TABLE head_history (
    tenant_id           {_T} NOT NULL,
    seq                 BIGINT NOT NULL,
    node_id             {_T} NOT NULL,
    version_id          {_T},
    previous_version_id {_T},
    event               {_T} NOT NULL,
    run_id              {_T} NOT NULL,
    at                  {_T} NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE TABLE paragraph_labels (
    tenant_id    {_T} NOT NULL,
    version_id   {_T} NOT NULL,
    idx          INTEGER NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset   INTEGER NOT NULL,
    label        {_T} NOT NULL,
    reasons_json {_T} NOT NULL,
    PRIMARY KEY (tenant_id, version_id, idx)
);
CREATE TABLE chunks (
    tenant_id         {_T} NOT NULL,
    chunk_id          {_T} NOT NULL,
    version_id        {_T} NOT NULL,
    node_id           {_T} NOT NULL,
    ordinal           INTEGER NOT NULL,
    start_offset      INTEGER NOT NULL,
    end_offset        INTEGER NOT NULL,
    text              {_T} NOT NULL,
    label             {_T} NOT NULL,
    heading_path_json {_T} NOT NULL,
    locator           {_T} NOT NULL,
    witness           {_T} NOT NULL,
    n_tokens          INTEGER NOT NULL,
    is_head           BOOLEAN NOT NULL,
    PRIMARY KEY (tenant_id, chunk_id)
);
CREATE INDEX chunks_version ON chunks (tenant_id, version_id);
-- Lexical plane: postings of head chunks only; the second index retires a version fast.
CREATE TABLE postings (
    tenant_id {_T} NOT NULL,
    term      {_T} NOT NULL,
    chunk_id  {_T} NOT NULL,
    tf        INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, term, chunk_id)
);
CREATE INDEX postings_chunk ON postings (tenant_id, chunk_id);
CREATE TABLE lexical_stats (
    tenant_id    {_T} PRIMARY KEY,
    n_chunks     BIGINT NOT NULL,
    total_length BIGINT NOT NULL,
    generation   BIGINT NOT NULL DEFAULT 0
);
-- ACL plane; the token index finds the few versions a narrow principal may read.
CREATE TABLE acl_tokens (
    tenant_id  {_T} NOT NULL,
    version_id {_T} NOT NULL,
    token      {_T} NOT NULL,
    PRIMARY KEY (tenant_id, version_id, token)
);
CREATE INDEX acl_tokens_token ON acl_tokens (tenant_id, token, version_id);
CREATE TABLE relation_tuples (
    tenant_id  {_T} NOT NULL,
    object     {_T} NOT NULL,
    relation   {_T} NOT NULL,
    subject    {_T} NOT NULL,
    source     {_T} NOT NULL,
    created_at {_T} NOT NULL,
    PRIMARY KEY (tenant_id, object, relation, subject)
);
CREATE TABLE label_grants (
    tenant_id  {_T} NOT NULL,
    subject    {_T} NOT NULL,
    label      {_T} NOT NULL,
    created_at {_T} NOT NULL,
    PRIMARY KEY (tenant_id, subject, label)
);
CREATE TABLE sire (
    tenant_id   {_T} NOT NULL,
    sire_id     {_T} NOT NULL,
    version_id  {_T} NOT NULL,
    node_id     {_T} NOT NULL,
    tuple_json  {_T} NOT NULL,
    state       {_T} NOT NULL,
    proposed_at {_T} NOT NULL,
    approved_by {_T},
    approved_at {_T},
    PRIMARY KEY (tenant_id, sire_id)
);
CREATE UNIQUE INDEX sire_version ON sire (tenant_id, version_id);
CREATE TABLE ledger (
    tenant_id   {_T} NOT NULL,
    seq         BIGINT NOT NULL,
    record_id   {_T} NOT NULL,
    request_id  {_T} NOT NULL,
    created_at  {_T} NOT NULL,
    payload     {_T} NOT NULL,
    prev_hash   {_T} NOT NULL,
    record_hash {_T} NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE UNIQUE INDEX ledger_record ON ledger (tenant_id, record_id);
CREATE INDEX ledger_request ON ledger (tenant_id, request_id);
CREATE TABLE runs (
    tenant_id    {_T} NOT NULL,
    run_id       {_T} NOT NULL,
    status       {_T} NOT NULL,
    started_at   {_T} NOT NULL,
    finished_at  {_T},
    params_json  {_T} NOT NULL,
    summary_json {_T} NOT NULL,
    PRIMARY KEY (tenant_id, run_id)
);
CREATE TABLE quarantine (
    tenant_id   {_T} NOT NULL,
    run_id      {_T} NOT NULL,
    alias       {_T} NOT NULL,
    source_id   {_T} NOT NULL,
    reason_code {_T} NOT NULL,
    message     {_T} NOT NULL,
    at          {_T} NOT NULL,
    released_by {_T},
    released_at {_T},
    PRIMARY KEY (tenant_id, run_id, alias)
);
-- Which nodes the last full listing of a source location contained: a node missing from
-- the next full listing is withdrawn.
CREATE TABLE source_listings (
    tenant_id {_T} NOT NULL,
    listing   {_T} NOT NULL,
    node_id   {_T} NOT NULL,
    PRIMARY KEY (tenant_id, listing, node_id)
);
-- Vector plane: one row per (chunk, model). The column has no fixed dimension because
-- models differ; each (model, dimension) gets its own partial HNSW index on a cast
-- expression, and vector_models pins one dimension per model.
CREATE TABLE vectors (
    tenant_id {_T} NOT NULL,
    model_id  {_T} NOT NULL,
    chunk_id  {_T} NOT NULL,
    dim       INTEGER NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (tenant_id, model_id, chunk_id)
);
CREATE INDEX vectors_chunk ON vectors (tenant_id, chunk_id);
CREATE TABLE vector_models (
    tenant_id {_T} NOT NULL,
    model_id  {_T} NOT NULL,
    dim       INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, model_id)
);
-- The ledger is append-only: the database itself refuses edits, deletions and truncation.
CREATE FUNCTION affidavit_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger records are append-only';
END;
$$;
CREATE TRIGGER ledger_no_update BEFORE UPDATE OR DELETE ON ledger
    FOR EACH ROW EXECUTE FUNCTION affidavit_ledger_append_only();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger
    FOR EACH STATEMENT EXECUTE FUNCTION affidavit_ledger_append_only();
"""
