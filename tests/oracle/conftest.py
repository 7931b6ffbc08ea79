"""The oracle's universe: two generated tenants ingested into one real SQLite store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from affidavit.authz import may_view_record
from affidavit.config.settings import DEFAULT_LABELS, SensitivitySettings, Settings
from affidavit.engine.ledger_record import redact_for
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest, ProviderResponse
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore, Store
from tests.conftest import BACKENDS
from tests.oracle.oracle_world import AT, DERIVED_MARKER, KEYWORDS, World, generate_world
from tests.pg_fixture import PgCluster

SHARED_USERS = [f"user:shared-{i:02d}" for i in range(10)]


class RecordingProvider:
    """Answers like the extractive provider and keeps every request it was sent."""

    name = "recording"
    model_id = "recording-1"

    def __init__(self) -> None:
        self.requests: list[ProviderRequest] = []
        self.inner = ExtractiveProvider()

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        self.requests.append(request)
        return self.inner.generate(request)


@dataclass
class Universe:
    store: Store
    settings: Settings
    worlds: dict[str, World]
    engines: dict[str, Engine]
    providers: dict[str, RecordingProvider]
    chunk_marker: dict[tuple[str, str], str]
    chunk_label: dict[tuple[str, str], str]

    def ledger_show(self, tenant: str, principal: str, record_id: str) -> dict[str, Any] | None:
        """What ``ledger show`` gives: the caller's own record, redacted, or nothing."""
        authz = self.engines[tenant].authz_context(principal)
        entry = self.store.get_ledger(tenant, record_id)
        if entry is None or not may_view_record(json.loads(entry.payload), authz):
            return None
        return redact_for(entry, authz, self.store)


def build_universe(root: Path, *, seeds: tuple[int, int] = (1, 2),
                   store: Store | None = None) -> Universe:
    # Titles and headings with a keyword are more sensitive than the paragraphs under them.
    settings = Settings(sensitivity=SensitivitySettings(
        restricted_keywords=(KEYWORDS["RESTRICTED"],),
        keywords={label: (word,) for label, word in KEYWORDS.items() if label != "RESTRICTED"}))
    store = store if store is not None else SQLiteStore(root / "oracle.db")
    worlds = {
        "acme": generate_world("acme", "a", seed=seeds[0], shared_users=SHARED_USERS),
        "globex": generate_world("globex", "b", seed=seeds[1], shared_users=SHARED_USERS),
    }
    for tenant, world in worlds.items():
        world.write_corpus(root / tenant)
        source = LocalFolderSource(root / tenant, max_document_bytes=1 << 20)
        summary = Ingestor(store, settings, tenant=tenant).run([source])
        assert summary.count("ingested") == len(world.docs), summary.to_dict()
        world.write_policy(store)
        for record in store.list_sire(tenant, state="PROPOSED"):
            approve_sire(store, tenant, record.sire_id, by="user:curator", at=AT)
    providers = {t: RecordingProvider() for t in worlds}
    engines = {t: Engine(store, settings, tenant=t, provider=providers[t]) for t in worlds}
    markers, labels = {}, {}
    # Read back through the store's own API so that every backend is checked the same way.
    for tenant, world in worlds.items():
        for doc in world.docs:
            ids = store.source_chunk_ids(tenant, doc.alias)
            for label in DEFAULT_LABELS:
                for chunk in store.chunks_with_label(tenant, ids, label):
                    # A heading's own chunk carries its heading's marker, not the document's.
                    found = {f"mk{m[1]}{m[2]}x" for m in DERIVED_MARKER.findall(chunk.text)}
                    assert found == {doc.marker}, "every chunk carries its document's markers"
                    markers[(tenant, chunk.chunk_id)] = doc.marker
                    labels[(tenant, chunk.chunk_id)] = chunk.label
    return Universe(store, settings, worlds, engines, providers, markers, labels)


@pytest.fixture(scope="module", params=BACKENDS)
def universe(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Universe]:
    """The same generated universe on every store backend."""
    store: Store | None = None
    if request.param == "postgres":
        cluster: PgCluster = request.getfixturevalue("pg_cluster")  # skips if no server
        from affidavit.store.postgres.store import PostgresStore

        store = PostgresStore(cluster.new_database("oracle"))
    built = build_universe(tmp_path_factory.mktemp("oracle"), store=store)
    yield built
    built.store.close()
