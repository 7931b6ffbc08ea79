"""The SQLite store holds each text once (migration 17): blobs deflated, a chunk that is a
span of its version's text stores no copy, and every reader still gets the exact text, and
only the text its authorization admits."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

from tests.store.layout_17 import downgrade_to_17

from affidavit.config.settings import AclSettings, ChunkingSettings, Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore

TENANT = "acme"
SETTINGS = Settings(tenant=TENANT, acl=AclSettings(default=("*",)),
                    chunking=ChunkingSettings(max_chars=120, min_chars=10, overlap_chars=0))
SECRET = "Lighthouse acquisition closes on the ninth at forty million"
PUBLIC_BODY = ("# Yard\n\nThe yard opens at six and closes at ten every weekday evening.\n\n"
               "# Quay\n\nContainers wait on the quay until the customs officer clears them.\n")
SECRET_BODY = f"# Deal\n\n{SECRET}.\n\n# Shed\n\nPallets in the shed are counted on Fridays.\n"


def document(source_id: str, body: str, acl: tuple[str, ...]) -> SourceDocument:
    content = body.encode()
    meta = DocumentMetadata(source_id=source_id, title=source_id, acl=acl)
    return SourceDocument("memory", source_id, sha256_hex(content), content,
                          f"{source_id}.md", meta)


def ingest(path: Path, *documents: SourceDocument) -> SQLiteStore:
    store = SQLiteStore(path)
    for principal in ("user:alice", "user:bob"):
        store.grant(TENANT, principal, ["INTERNAL"], at="2026-01-01T00:00:00+00:00")
    summary = Ingestor(store, SETTINGS).run([StaticSource(list(documents))])
    assert summary.count("ingested") == len(documents)
    return store


def stored_text_bytes(path: Path) -> tuple[int, int]:
    """(bytes of chunk text, bytes of blob content) as they sit in the file."""
    with sqlite3.connect(path) as conn:
        chunks = conn.execute("SELECT COALESCE(SUM(length(CAST(text AS BLOB))), 0) "
                              "FROM chunks").fetchone()[0]
        blobs = conn.execute("SELECT SUM(length(content)) FROM blobs").fetchone()[0]
    return int(chunks), int(blobs)


def test_each_text_is_stored_once_and_read_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    public = document("public", PUBLIC_BODY * 4, ("*",))
    store = ingest(path, public)
    try:
        engine = Engine(store, SETTINGS)
        (head,) = store.heads(TENANT)
        chunks = store.version_chunks(TENANT, head.version_id)
        text = public.content.decode()
        assert len(chunks) > 2
        assert all(c.text and text[c.start:c.end] == c.text for c in chunks)
        chunk_bytes, blob_bytes = stored_text_bytes(path)
        assert chunk_bytes == 0  # every chunk is a span of the blob's text
        assert blob_bytes < len(public.content)  # deflated
        blob = store.blob(TENANT, head.raw_digest)
        assert blob is not None and blob.content == public.content  # the authority, exact
        read = store.get_chunks(engine.authz_context("user:bob"), [c.chunk_id for c in chunks])
        assert [r.chunk.text for r in read] == [c.text for c in chunks]
        missing = dict(store.chunks_missing_vectors(TENANT, "m", 100))
        assert missing == {c.chunk_id: c.text for c in chunks}
        hits = engine.search("user:bob", "customs officer", limit=3)
        assert hits and "customs officer" in hits[0].text
    finally:
        store.close()


def test_a_span_never_serves_text_its_reader_may_not_read(tmp_path: Path) -> None:
    store = ingest(tmp_path / "store.db", document("public", PUBLIC_BODY, ("*",)),
                   document("deal", SECRET_BODY, ("user:alice",)))
    try:
        engine = Engine(store, SETTINGS)
        deal = store.source_chunk_ids(TENANT, "deal")
        # Alice reads the deal first: its text is now in the store's memory of version texts.
        alice = store.get_chunks(engine.authz_context("user:alice"), deal)
        assert any(SECRET in r.chunk.text for r in alice)
        bob = engine.authz_context("user:bob")
        assert store.get_chunks(bob, deal) == []
        every = deal + store.source_chunk_ids(TENANT, "public")
        assert all(SECRET not in r.chunk.text for r in store.get_chunks(bob, every))
        assert all(SECRET not in h.text for h in engine.search("user:bob", "lighthouse deal",
                                                               limit=10))
    finally:
        store.close()


def test_a_version_whose_text_is_not_its_blob_keeps_its_own_text_once(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    body = '---\ntitle: Yard\n---\n' + PUBLIC_BODY  # front matter is not in the text
    store = ingest(path, document("yard", body, ("*",)))
    try:
        (head,) = store.heads(TENANT)
        chunks = store.version_chunks(TENANT, head.version_id)
        with sqlite3.connect(path) as conn:
            (own,) = conn.execute("SELECT text FROM version_texts").fetchone()
            stored = [r[0] for r in conn.execute("SELECT text FROM chunks")]
        normalized = zlib.decompress(own).decode()
        assert normalized != body
        assert all(normalized[c.start:c.end] == c.text for c in chunks)
        assert stored == [""] * len(chunks)
        assert any("customs officer" in c.text for c in chunks)
    finally:
        store.close()


def test_a_database_written_before_migration_17_is_compacted_and_reads_the_same(
        tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    public = document("public", PUBLIC_BODY * 3, ("*",))
    store = ingest(path, public)
    (head,) = store.heads(TENANT)
    before = store.version_chunks(TENANT, head.version_id)
    store.close()
    # The layout before 17: raw blobs, every chunk its own text, no version texts.
    downgrade_to_17(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE version_texts")
        conn.execute("UPDATE blobs SET content = ?", (public.content,))
        conn.execute("ALTER TABLE blobs DROP COLUMN encoding")
        for c in before:
            conn.execute("UPDATE chunks SET text = ? WHERE chunk_id = ? AND version_id = ?",
                         (c.text, c.chunk_id, c.version_id))
        conn.execute("DELETE FROM schema_migrations WHERE version = 17")
    assert stored_text_bytes(path)[0] > 0

    store = SQLiteStore(path)
    try:
        assert store.schema_version() >= 17
        assert store.version_chunks(TENANT, head.version_id) == before
        blob = store.blob(TENANT, head.raw_digest)
        assert blob is not None and blob.content == public.content
        chunk_bytes, blob_bytes = stored_text_bytes(path)
        assert chunk_bytes == 0 and blob_bytes < len(public.content)
    finally:
        store.close()


def test_a_chunk_row_holds_no_copy_of_its_versions_witness_locator_or_sire_text(
        tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = ingest(path, document("public", PUBLIC_BODY, ("*",)))
    try:
        (head,) = store.heads(TENANT)
        chunks = store.version_chunks(TENANT, head.version_id)
        with sqlite3.connect(path) as conn:
            (witness,) = conn.execute("SELECT witness FROM versions").fetchone()
            rows = conn.execute("SELECT witness, locator FROM chunks").fetchall()
            (stored_tuple,) = conn.execute("SELECT tuple_json FROM sire").fetchone()
        assert rows == [("", "")] * len(chunks)
        assert {c.witness for c in chunks} == {witness}
        assert [c.locator for c in chunks] == [
            f"public.md | {' > '.join(c.heading_path)} | chars {c.start}-{c.end}"
            for c in chunks]
        assert isinstance(stored_tuple, bytes)  # deflated
        (record,) = store.list_sire(TENANT)
        assert record.sire.to_dict() == json.loads(zlib.decompress(stored_tuple))
    finally:
        store.close()
