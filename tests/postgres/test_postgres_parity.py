"""Store methods the contract tests do not reach yet, run side by side on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from affidavit.errors import InputRejected
from affidavit.store import QuarantineRecord, SQLiteStore, Store
from affidavit.store.postgres.store import PostgresStore
from tests.pg_fixture import PgCluster
from tests.postgres.conftest import NOW, make_bundle

pytestmark = pytest.mark.postgres

T = "tenant-a"


@pytest.fixture
def stores(pg_cluster: PgCluster, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    lite = SQLiteStore(tmp_path / "parity.db")
    pg = PostgresStore(pg_cluster.new_database("parity"))
    try:
        yield lite, pg
    finally:
        lite.close()
        pg.close()


def exercise(store: Store) -> dict[str, object]:
    """The same operations on a store; everything they let one observe."""
    store.commit_version(make_bundle(T, "n1", "v1", 2))
    store.commit_version(make_bundle(T, "n2", "v2", 1))
    store.commit_version(make_bundle(T, "n1", "v3", 3))  # supersedes v1
    store.start_run(T, "run-1", at=NOW, params_json='{"epoch":"e"}')
    store.record_quarantine(T, QuarantineRecord("run-1", "b.md", "b", "EMPTY_DOCUMENT", "e",
                                                NOW))
    released = store.release_quarantine(T, "run-1", "b.md", by="rita", at=NOW)
    again = store.release_quarantine(T, "run-1", "b.md", by="rita", at=NOW)
    store.replace_listing(T, "local:/docs", ["n1", "n2"])
    store.replace_listing(T, "local:/docs", ["n2"])
    withdrawn = store.withdraw(T, "n2", run_id="run-1", at=NOW)
    return {
        "released": (released, again),
        "quarantine": store.list_quarantine(T, "run-1"),
        "listing": store.listed_nodes(T, "local:/docs"),
        "run": store.get_run(T, "run-1"),
        "source_chunks": store.source_chunk_ids(T, "n1"),
        "withdrawn_chunks": (withdrawn, store.source_chunk_ids(T, "n2")),
        "heads": store.heads(T),
        "counts": {t: store.count_rows(T, t) for t in ("chunks", "postings", "head_history",
                                                       "source_listings", "versions")},
        "stats": store.lexical_stats(T),
        "sire": [(r.version_id, r.is_head) for r in store.list_sire(T, head_only=False)],
    }


def test_both_backends_observe_the_same_results(stores: tuple[Store, Store]) -> None:
    lite, pg = stores
    expected, found = exercise(lite), exercise(pg)
    for key, value in expected.items():
        assert found[key] == value, key
    assert len(found["source_chunks"]) == 3  # type: ignore[arg-type]


def test_an_empty_tenant_id_is_rejected(stores: tuple[Store, Store]) -> None:
    _, pg = stores
    with pytest.raises(InputRejected) as caught:
        pg.lexical_stats("")
    assert caught.value.reason_code == "EMPTY_TENANT"
