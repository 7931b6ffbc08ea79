"""Requalification on both backends: a stale version whose derivation changes nothing
served is marked current in place (same version, chunk ids, vectors and approval); an
affected one is derived again from its stored blob; nothing is ever fetched."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from affidavit.config.settings import AclSettings, ChunkingSettings, Settings, VectorSettings
from affidavit.identity.lifecycle import approve_sires
from affidavit.index import HashEmbeddingBackend
from affidavit.ingest.requalify import Requalifier
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store.protocol import Store

TENANT = "acme"
TEXTS = {
    "crane": "The harbour crane lifts containers onto the quay every morning.",
    "travel": "Staff book hotel rooms through the travel desk for every trip.",
}
SETTINGS = Settings(tenant=TENANT, acl=AclSettings(default=("*",)),
                    vectors=VectorSettings(backend="hash", dimensions=32))
CHANGED = SETTINGS.replace(sensitivity=replace(SETTINGS.sensitivity,
                                               restricted_keywords=("harbour crane",)))


def doc(source_id: str) -> SourceDocument:
    body = TEXTS[source_id].encode()
    return SourceDocument("memory", source_id, sha256_hex(body), body, f"{source_id}.txt",
                          DocumentMetadata(source_id=source_id, title=source_id))


def test_requalification_restamps_unaffected_versions_and_rederives_affected_ones(
        store: Store) -> None:
    Ingestor(store, SETTINGS).run([StaticSource([doc("crane"), doc("travel")])])
    approve_sires(store, TENANT, [r.sire_id for r in store.list_sire(TENANT)],
                  by="user:curator", at=datetime.now(UTC).isoformat())
    heads = {h.alias: h for h in store.heads(TENANT)}
    model = HashEmbeddingBackend(32).model_id
    vectors_before = set(store.head_vectors(TENANT, model)[0])
    travel_chunks = [c.chunk_id for c in store.version_chunks(TENANT,
                                                              heads["travel.txt"].version_id)]

    plan = Requalifier(store, CHANGED).plan()
    assert (plan["affected"], plan["restamp"]) == (["crane.txt"], ["travel.txt"])
    report = Requalifier(store, CHANGED).roll()
    assert (report["derived"], report["restamped"]) == (["crane.txt"], ["travel.txt"])

    after = {h.alias: h for h in store.heads(TENANT)}
    assert after["travel.txt"].version_id == heads["travel.txt"].version_id
    assert after["crane.txt"].version_id != heads["crane.txt"].version_id
    assert [c.chunk_id for c in store.version_chunks(
        TENANT, after["travel.txt"].version_id)] == travel_chunks
    assert set(travel_chunks) <= set(store.head_vectors(TENANT, model)[0]) | vectors_before
    assert store.label_stale_heads(TENANT, Requalifier(store, CHANGED).epochs.serving) == []
    states = {r.alias: r.state for r in store.list_sire(TENANT)}
    assert states == {"crane.txt": "ACTIVE", "travel.txt": "ACTIVE"}
    # Current now: a plain run of the same listing derives nothing again.
    summary = Ingestor(store, CHANGED).run([StaticSource([doc("crane"), doc("travel")])])
    assert (summary.count("unchanged"), summary.relabelled) == (2, [])


SECTIONS = ["# Yard\n\nThe yard opens at six and closes at ten every weekday evening.\n",
            "# Quay\n\nContainers wait on the quay until the customs officer clears them.\n",
            "# Shed\n\nPallets in the shed are counted every Friday by the night shift.\n"]


def section_doc(sections: list[str]) -> SourceDocument:
    body = "\n".join(sections).encode()
    return SourceDocument("memory", "port", sha256_hex(body), body, "port.md",
                          DocumentMetadata(source_id="port", title="port"))


SMALL_CHUNKS = SETTINGS.replace(chunking=ChunkingSettings(max_chars=90, min_chars=10,
                                                         overlap_chars=0))


def test_an_edited_document_re_embeds_only_its_changed_chunks(store: Store) -> None:
    first = Ingestor(store, SMALL_CHUNKS).run([StaticSource([section_doc(SECTIONS)])])
    assert first.vectors["embedded"] == 3
    edited = [SECTIONS[0], SECTIONS[1].replace("customs officer", "harbour master"),
              SECTIONS[2]]
    second = Ingestor(store, SMALL_CHUNKS).run([StaticSource([section_doc(edited)])])
    assert second.count("ingested") == 1 and second.vectors["embedded"] == 1
    model = HashEmbeddingBackend(32).model_id
    head = store.heads(TENANT)[0]
    chunk_ids = {c.chunk_id for c in store.version_chunks(TENANT, head.version_id)}
    assert len(chunk_ids) == 3 and chunk_ids == set(store.head_vectors(TENANT, model)[0])


def test_a_queued_requalification_takes_only_the_documents_a_change_affects(
        store: Store) -> None:
    from affidavit.ingest.relabel import stale_documents

    Ingestor(store, SETTINGS).run([StaticSource([doc("crane"), doc("travel")])])
    changed = Ingestor(store, CHANGED)
    queued = stale_documents(changed)
    assert [(head.alias, document is not None) for head, document in queued] == [
        ("crane.txt", True)]
    assert [h.alias for h in store.label_stale_heads(TENANT, changed.label_epoch)] == [
        "crane.txt"]
