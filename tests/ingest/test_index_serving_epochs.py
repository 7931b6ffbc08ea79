"""Every derived artifact is served only under the epochs it was derived under.

One key (:func:`affidavit.index.epochs.serving_epoch`: policy, schema, resolver, classifier
model and prompt) is stamped on every chunk and pinned by every read, in the same SQL
predicate as the label and ACL filters; vectors are keyed by their embedding model. For
each kind of epoch: changing it without requalifying withholds what was derived before
(and the answer's record says why); requalifying serves it again, approvals included.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from affidavit.config.settings import (
    AclSettings,
    ChunkingSettings,
    ModelClassifierSettings,
    Settings,
    VectorSettings,
)
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sires
from affidavit.index import HashEmbeddingBackend
from affidavit.index.epochs import serving_epoch
from affidavit.ingest.requalify import Requalifier
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store.protocol import Store

TENANT = "acme"
TEXTS = {
    "crane": "# Crane\n\nThe harbour crane lifts containers onto the quay every morning.\n",
    "travel": "# Travel\n\nStaff book hotel rooms through the travel desk for every trip.\n",
}
SETTINGS = Settings(tenant=TENANT, acl=AclSettings(default=("*",)),
                    grants={"user:reader": ("INTERNAL",)},
                    vectors=VectorSettings(backend="hash", dimensions=32))
QUERY = "harbour crane containers quay"
BOTH = [("crane", True), ("travel", True)]  # lexical and vector hits, SIRE ACTIVE


def doc(source_id: str) -> SourceDocument:
    body = TEXTS[source_id].encode()
    return SourceDocument("memory", source_id, sha256_hex(body), body, f"{source_id}.md",
                          DocumentMetadata(source_id=source_id, title=source_id))


def corpus(store: Store) -> None:
    Ingestor(store, SETTINGS).run([StaticSource([doc("crane"), doc("travel")])])
    approve_sires(store, TENANT, [r.sire_id for r in store.list_sire(TENANT)],
                  by="user:curator", at=datetime.now(UTC).isoformat())


def served(store: Store, settings: Settings) -> list[tuple[str, bool]]:
    """(document, SIRE ACTIVE) of what a reader finds about the crane."""
    hits = Engine(store, settings).search("user:reader", QUERY, limit=5)
    return sorted({(h.source_id, h.sire_active) for h in hits})


def asked_epochs(store: Store, settings: Settings) -> dict[str, object]:
    engine = Engine(store, settings)
    engine.ask("user:reader", "What lifts containers onto the quay?")
    last = list(store.iter_ledger(TENANT))[-1]
    epochs: dict[str, object] = json.loads(last.payload)["epochs"]
    return epochs


def check_withheld_then_served(store: Store, settings: Settings,
                               change: Callable[[], None] = lambda: None) -> None:
    assert served(store, SETTINGS) == BOTH
    change()
    assert served(store, settings) == []  # derived under other epochs: not served
    record = asked_epochs(store, settings)
    assert record["stale_documents"] == 2
    assert record["serving"] == serving_epoch(settings, TENANT)
    report = Requalifier(store, settings).roll()
    assert report["failed"] == []
    assert served(store, settings) == BOTH  # the approvals followed
    assert asked_epochs(store, settings)["stale_documents"] == 0


def test_a_policy_change_withholds_what_was_derived_before_until_requalified(
        store: Store) -> None:
    corpus(store)
    # Chunking is policy, but moves no label: the label epoch alone would keep serving.
    changed = SETTINGS.replace(chunking=ChunkingSettings(max_chars=700, min_chars=150))
    check_withheld_then_served(store, changed)


def test_a_schema_change_withholds_what_was_derived_before_until_requalified(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus(store)

    def upgrade() -> None:
        monkeypatch.setattr("affidavit.index.epochs.SCHEMA_VERSION", "999")
        monkeypatch.setattr("affidavit.ingest.document.SCHEMA_VERSION", "999")

    check_withheld_then_served(store, SETTINGS, upgrade)


def test_a_resolver_change_withholds_documents_and_their_sire_until_requalified(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus(store)
    # No chunk of a version derived by the old resolver is a candidate, so its ACTIVE
    # record never admits anything; after requalification it serves, approval kept.
    def upgrade() -> None:
        monkeypatch.setattr("affidavit.index.epochs.RESOLVER_VERSION", "resolver-next")
        monkeypatch.setattr("affidavit.ingest.document.RESOLVER_VERSION", "resolver-next")

    check_withheld_then_served(store, SETTINGS, upgrade)


def test_a_classifier_prompt_change_changes_the_serving_key() -> None:
    def with_prompt(prompt: str) -> Settings:
        model = ModelClassifierSettings(enabled=True, base_url="http://127.0.0.1:9",
                                        model="labeller", prompt=prompt)
        return SETTINGS.replace(sensitivity=replace(SETTINGS.sensitivity, model=model))

    keys = {serving_epoch(s, TENANT) for s in
            (SETTINGS, with_prompt("Label: {labels}"), with_prompt("Classify: {labels}"))}
    assert len(keys) == 3


def test_vectors_of_another_embedding_model_are_never_searched(store: Store) -> None:
    corpus(store)
    other = SETTINGS.replace(vectors=VectorSettings(backend="hash", dimensions=16))
    old_model = HashEmbeddingBackend(32).model_id
    new_model = HashEmbeddingBackend(16).model_id
    engine = Engine(store, other)
    authz = engine.authz_context("user:reader")
    query = [float(x) for x in HashEmbeddingBackend(16).embed_texts([QUERY])[0]]
    assert store.vector_search(authz, new_model, query, limit=5) == []
    # Lexical serving is untouched (the embedding model is not part of a chunk's key); the
    # vector channel, which found the travel document too, finds nothing until requalified.
    assert served(store, other) == [("crane", True)]
    assert asked_epochs(store, other)["embedding_model"] == new_model
    report = Requalifier(store, other).roll()
    assert report["vectors"]["embedded"] >= 2
    assert store.vector_search(authz, new_model, query, limit=5) != []
    assert served(store, other) == BOTH
    assert len(store.head_vectors(TENANT, old_model)[0]) >= 2  # kept, never searched


def test_chunks_stamped_with_the_label_epoch_alone_are_marked_current_in_place(
        store: Store) -> None:
    from affidavit.classify.epoch import label_epoch

    corpus(store)
    heads = {h.alias: h.version_id for h in store.heads(TENANT)}
    # As stored before the serving key: the label epoch, the rest of the witness current.
    legacy = label_epoch(SETTINGS.sensitivity)
    for version_id in heads.values():
        store.restamp_version(TENANT, version_id, label_epoch=legacy,
                              witness=store.version_chunks(TENANT, version_id)[0].witness,
                              fingerprint=next(h.fingerprint for h in store.heads(TENANT)
                                               if h.version_id == version_id))
    assert served(store, SETTINGS) == []
    plan = Requalifier(store, SETTINGS).plan()
    assert (plan["restamp"], plan["affected"]) == (["crane.md", "travel.md"], [])
    assert sorted(Requalifier(store, SETTINGS).roll()["restamped"]) == ["crane.md",
                                                                         "travel.md"]
    assert {h.alias: h.version_id for h in store.heads(TENANT)} == heads
    assert served(store, SETTINGS) == BOTH
