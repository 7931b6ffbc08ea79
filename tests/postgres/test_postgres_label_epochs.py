"""On PostgreSQL too: a policy change is in force on the next request, and only declared
labels are read for the embedding backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.config.settings import (
    AclSettings,
    EgressSettings,
    SensitivitySettings,
    VectorSettings,
)
from affidavit.index import HashEmbeddingBackend
from affidavit.ingest.run import Ingestor
from affidavit.sources.memory import StaticSource
from affidavit.store.postgres.store import PostgresStore
from tests.e2e.test_policy_in_force import SETTINGS, check_policy_change_is_in_force
from tests.index.test_index_embedding_egress import CORPUS

pytestmark = pytest.mark.postgres


def test_a_new_restricted_keyword_is_in_force_on_the_next_request_on_postgres(
        pg_store: PostgresStore, tmp_path: Path) -> None:
    check_policy_change_is_in_force(pg_store, tmp_path / "corpus")


def test_only_declared_labels_are_read_for_embedding_on_postgres(
        pg_store: PostgresStore) -> None:
    settings = SETTINGS.replace(
        acl=AclSettings(default=("*",)),
        sensitivity=SensitivitySettings(restricted_keywords=("Project Lighthouse",)),
        vectors=VectorSettings(backend="hash", dimensions=32),
        egress=EgressSettings(embedding_labels=("PUBLIC", "INTERNAL")))
    Ingestor(pg_store, settings).run([StaticSource(CORPUS)])
    model = HashEmbeddingBackend(32).model_id
    embedded = set(pg_store.head_vectors(settings.tenant, model)[0])
    labels: dict[str, str] = dict(pg_store._rows(
        settings.tenant, "SELECT chunk_id, label FROM chunks WHERE tenant_id = %s AND is_head",
        (settings.tenant,)))
    assert embedded and embedded == {c for c, label in labels.items()
                                     if label in ("PUBLIC", "INTERNAL")}
    assert set(labels.values()) >= {"SECRET", "RESTRICTED"}


def test_a_queued_run_relabels_documents_of_an_old_policy_on_postgres(
        owner_dsn: str, tmp_path: Path) -> None:
    from affidavit.engine.query import Engine
    from affidavit.ingest.worker import Worker, WorkerOptions, enqueue_local_folder
    from tests.e2e.test_policy_in_force import CANARY, CHANGED, approve_all, ingest, texts

    store = PostgresStore(owner_dsn)
    try:
        ingest(store, tmp_path / "corpus", SETTINGS)
        empty = tmp_path / "empty"
        empty.mkdir()
        assert texts(Engine(store, CHANGED), "user:reader", "hotel rooms travel desk") == []
        enqueue_local_folder(store, CHANGED, empty, "files")
        Worker(store, CHANGED, options=WorkerOptions(once=True)).run()
        assert store.label_stale_heads(SETTINGS.tenant, Engine(store, CHANGED).label_epoch) == []
        approve_all(store)
        reader = texts(Engine(store, CHANGED), "user:reader", "hotel rooms travel desk")
        assert reader and all(CANARY not in text for text, _ in reader)
    finally:
        store.close()
