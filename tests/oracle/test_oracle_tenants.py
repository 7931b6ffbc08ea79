"""Tenant isolation of scores: tenant A's results are identical to the bit whether or not
tenant B's corpus (same vocabulary, more documents) sits in the same store file."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from affidavit.config.settings import DEFAULT_LABELS, Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from affidavit.store.protocol import RelationTuple
from tests.oracle.oracle_world import AT, World, generate_world, vocabulary

AUDITOR = "user:auditor"


def load(store: SQLiteStore, world: World, root: Path) -> None:
    world.write_corpus(root / world.tenant)
    Ingestor(store, Settings(), tenant=world.tenant).run(
        [LocalFolderSource(root / world.tenant, max_document_bytes=1 << 20)])
    world.write_policy(store)
    for doc in world.docs:  # one principal who reads everything
        store.add_tuple(world.tenant, RelationTuple(f"doc:{doc.node_id}", "viewer", AUDITOR,
                                                    "test"), at=AT)
    store.grant(world.tenant, AUDITOR, list(DEFAULT_LABELS), at=AT)


Scores = list[list[tuple[str, float, str]]]


def results(store: SQLiteStore, world: World, queries: list[str]) -> Scores:
    engine = Engine(store, Settings(), tenant=world.tenant)
    out: Scores = []
    for principal in (AUDITOR, world.users[0], world.users[1]):
        for query in queries:
            hits = engine.search(principal, query, limit=25)
            out.append([(h.chunk_id, h.score, h.text) for h in hits])
    return out


@pytest.mark.slow
def test_tenant_scores_are_bit_identical_with_and_without_another_tenant(tmp_path: Path) -> None:
    a = generate_world("acme", "a", seed=11, n_docs=40)
    b = generate_world("globex", "b", seed=12, n_docs=60)
    rng = random.Random(5)
    vocab = vocabulary(random.Random(7))
    queries = [" ".join(rng.sample(vocab, rng.randint(1, 3))) for _ in range(40)]

    shared = SQLiteStore(tmp_path / "shared.db")
    load(shared, a, tmp_path / "first")
    alone = results(shared, a, queries)
    assert sum(len(r) for r in alone) > 300, "the queries must actually score documents"
    load(shared, b, tmp_path / "first")
    beside_b = results(shared, a, queries)
    assert beside_b == alone  # tuples of floats compared with ==

    b_first = SQLiteStore(tmp_path / "b_first.db")
    load(b_first, b, tmp_path / "second")
    load(b_first, a, tmp_path / "second")
    assert results(b_first, a, queries) == alone
    assert results(b_first, b, queries) == results(shared, b, queries)
    shared.close()
    b_first.close()
