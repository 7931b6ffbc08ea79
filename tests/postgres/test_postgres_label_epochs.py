"""On PostgreSQL too: a policy change is in force on the next request, and only declared
labels are read for the embedding backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.config import AclSettings, EgressSettings, SensitivitySettings, VectorSettings
from affidavit.index import HashEmbeddingBackend
from affidavit.ingest import Ingestor
from affidavit.sources.memory import StaticSource
from affidavit.store.postgres import PostgresStore
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
    labels = dict(pg_store._rows(
        settings.tenant, "SELECT chunk_id, label FROM chunks WHERE tenant_id = %s AND is_head",
        (settings.tenant,)))
    assert embedded and embedded == {c for c, label in labels.items()
                                     if label in ("PUBLIC", "INTERNAL")}
    assert set(labels.values()) >= {"SECRET", "RESTRICTED"}
