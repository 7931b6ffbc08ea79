"""Chunk ids survive edits (issue 14, spec 001 delta at chunk level), on both backends.

An edited document keeps the ids and vectors of its unchanged chunks and sends only the
changed ones to the embedder; the previous version's rows stay readable for replay under
their ids, and none of them is served: authorization and the head filter read the head
version's row of a shared id, with that version's ACL.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from affidavit.config.settings import AclSettings, ChunkingSettings, Settings, VectorSettings
from affidavit.engine.query import Engine
from affidavit.index import HashEmbeddingBackend, embed_missing, embed_query
from affidavit.index.vectors import Vectors
from affidavit.ingest.run import Ingestor
from affidavit.records import Chunk, DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore
from affidavit.store.protocol import Store
from affidavit.text.tokenize import Tokenizer

TENANT = "acme"
SETTINGS = Settings(tenant=TENANT, acl=AclSettings(default=("*",)),
                    vectors=VectorSettings(backend="hash", dimensions=32, compute="lazy"),
                    chunking=ChunkingSettings(max_chars=90, min_chars=10, overlap_chars=0))
SECTIONS = ["# Yard\n\nThe yard opens at six and closes at ten every weekday evening.\n",
            "# Quay\n\nContainers wait on the quay until the customs officer clears them.\n",
            "# Shed\n\nPallets in the shed are counted every Friday by the night shift.\n"]
# The middle section changes and grows: the last one moves without changing.
EDITED = [SECTIONS[0],
          "# Quay\n\nContainers wait on the long quay until the harbour master clears them.\n",
          SECTIONS[2]]


class CountingBackend(HashEmbeddingBackend):
    """The hash embedder, keeping every text it was asked to embed."""

    def __init__(self, dimensions: int = 32) -> None:
        super().__init__(dimensions)
        self.texts: list[str] = []

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return super().embed_texts(texts)


def port(sections: list[str], *, acl: tuple[str, ...] = ("*",),
         classification: str | None = None) -> SourceDocument:
    body = "\n".join(sections).encode()
    meta = DocumentMetadata(source_id="port", title="port", acl=acl,
                            classification=classification)
    return SourceDocument("memory", "port", sha256_hex(body), body, "port.md", meta)


def head_chunks(store: Store) -> list[Chunk]:
    (head,) = store.heads(TENANT)
    return store.version_chunks(TENANT, head.version_id)


def ingest(store: Store, document: SourceDocument) -> list[Chunk]:
    for principal in ("user:alice", "user:bob", "user:anyone"):
        store.grant(TENANT, principal, ["INTERNAL"], at="2026-01-01T00:00:00+00:00")
    summary = Ingestor(store, SETTINGS).run([StaticSource([document])])
    assert summary.count("ingested") == 1
    return head_chunks(store)


def vectors(store: Store, model_id: str) -> dict[str, bytes]:
    ids, blobs = store.head_vectors(TENANT, model_id)
    return dict(zip(ids, blobs, strict=True))


def lexical_ids(store: Store, principal: str, word: str) -> list[str]:
    authz = Engine(store, SETTINGS).authz_context(principal)
    lex = SETTINGS.lexical
    terms = Tokenizer(lex.language, lex.stem, lex.stop_words).tokenize(word)
    hits = store.lexical_search(authz, dict.fromkeys(terms, 1.0), k1=1.2, b=0.75,
                                avg_length=10.0, limit=10)
    return [h.chunk_id for h in hits]


def test_an_edited_document_keeps_its_unchanged_chunk_ids_and_embeds_only_the_changed(
        store: Store) -> None:
    backend = CountingBackend()
    before = ingest(store, port(SECTIONS))
    first = embed_missing(store, TENANT, backend)
    assert first.embedded == len(before) == 3
    vectors_before = vectors(store, backend.model_id)
    backend.texts.clear()

    after = ingest(store, port(EDITED))
    second = embed_missing(store, TENANT, backend)

    assert second.embedded == 1 and backend.texts == [after[1].text]
    assert [c.chunk_id for c in after][::2] == [c.chunk_id for c in before][::2]
    assert after[1].chunk_id != before[1].chunk_id
    assert after[2].start != before[2].start  # moved, unchanged: same id
    vectors_after = vectors(store, backend.model_id)
    assert set(vectors_after) == {c.chunk_id for c in after}
    for unchanged in (after[0], after[2]):
        assert vectors_after[unchanged.chunk_id] == vectors_before[unchanged.chunk_id]
    # The retired version's vector of its changed chunk is gone; one vector per head chunk.
    assert store.count_rows(TENANT, "vectors") == 3


def test_the_previous_version_keeps_its_rows_under_the_same_ids(store: Store) -> None:
    before = ingest(store, port(SECTIONS))
    (old_head,) = store.heads(TENANT)
    after = ingest(store, port(EDITED))
    old = store.version_chunks(TENANT, old_head.version_id)
    assert old == before  # text, offsets, locator and ids as they were written
    assert {c.version_id for c in old} == {old_head.version_id}
    assert {c.version_id for c in after} != {old_head.version_id}
    # Read by id for replay: the changed chunk's old row, the head row of a shared id.
    replayed = {c.chunk_id: c for c in store.chunks_with_label(
        TENANT, [c.chunk_id for c in before], before[0].label)}
    assert replayed[before[1].chunk_id] == before[1]
    assert replayed[before[0].chunk_id].version_id == after[0].version_id
    assert replayed[before[0].chunk_id].text == before[0].text


def test_no_chunk_of_the_previous_version_is_served_after_an_edit(store: Store) -> None:
    before = ingest(store, port(SECTIONS, acl=("user:alice", "user:bob")))
    backend = HashEmbeddingBackend(32)
    embed_missing(store, TENANT, backend)
    # The edit also takes alice off the document: the unchanged chunks she could read in
    # the previous version keep their ids, and are no longer hers.
    after = ingest(store, port(EDITED, acl=("user:bob",)))
    embed_missing(store, TENANT, backend)
    engine = Engine(store, SETTINGS)
    alice, bob = engine.authz_context("user:alice"), engine.authz_context("user:bob")
    every_id = sorted({c.chunk_id for c in before + after})

    assert store.get_chunks(alice, every_id) == []
    assert lexical_ids(store, "user:alice", "yard") == []
    query = embed_query(backend, "yard opens at six")
    assert store.vector_search(alice, backend.model_id, query.tolist(), limit=10) == []

    served = store.get_chunks(bob, every_id)
    assert sorted(r.chunk.chunk_id for r in served) == sorted(c.chunk_id for c in after)
    assert all(r.is_head and r.chunk.version_id == after[0].version_id for r in served)
    # A shared id is still found through the lexical plane (the retired version's
    # postings went, the head's stayed); the changed chunk's old words are found nowhere.
    assert lexical_ids(store, "user:bob", "yard") == [after[0].chunk_id]
    assert lexical_ids(store, "user:bob", "customs") == []
    assert lexical_ids(store, "user:bob", "harbour") == [after[1].chunk_id]
    hits = store.vector_search(bob, backend.model_id, query.tolist(), limit=10)
    assert sorted(h.chunk_id for h in hits) == sorted(c.chunk_id for c in after)


def test_a_relabelled_chunk_gets_a_new_id_and_loses_its_vector(store: Store) -> None:
    backend = CountingBackend()
    before = ingest(store, port(SECTIONS))
    embed_missing(store, TENANT, backend)
    after = ingest(store, port(SECTIONS, classification="RESTRICTED"))
    assert {c.label for c in after} == {"RESTRICTED"}
    assert not {c.chunk_id for c in before} & {c.chunk_id for c in after}
    # RESTRICTED is outside the default embedding egress: nothing is sent, nothing kept.
    backend.texts.clear()
    embed_missing(store, TENANT, backend, labels=SETTINGS.egress.embedding_labels,
                  label_epoch=Ingestor(store, SETTINGS).label_epoch)
    assert backend.texts == [] and store.count_rows(TENANT, "vectors") == 0


def test_a_database_written_before_migration_16_migrates_and_edits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.store.sqlite.migrations import SQLITE_MIGRATIONS as every

    # The store as it was before: the same code, every migration but 16 (the later ones
    # are what today's code writes through).
    path = tmp_path / "old.db"
    monkeypatch.setattr("affidavit.store.sqlite.store.SQLITE_MIGRATIONS",
                        tuple(m for m in every if m.version != 16))
    old_store = SQLiteStore(path)
    before = ingest(old_store, port(SECTIONS))
    (old_head,) = old_store.heads(TENANT)
    old_store.close()
    monkeypatch.setattr("affidavit.store.sqlite.store.SQLITE_MIGRATIONS", every)

    store = SQLiteStore(path)
    try:
        assert store.schema_version() >= 16
        assert store.version_chunks(TENANT, old_head.version_id) == before
        assert lexical_ids(store, "user:anyone", "yard") == [before[0].chunk_id]
        after = ingest(store, port(EDITED))
        assert after[0].chunk_id == before[0].chunk_id
        assert store.version_chunks(TENANT, old_head.version_id) == before
        assert lexical_ids(store, "user:anyone", "yard") == [after[0].chunk_id]
        assert lexical_ids(store, "user:anyone", "customs") == []
    finally:
        store.close()
