"""The COPY fast path leaves the database as commit_version would; opening by URL."""

from __future__ import annotations

import sys

import psycopg
import pytest

from affidavit.errors import ConfigurationError, StoreError
from affidavit.records import AuthzContext
from affidavit.store import display_location, open_store
from affidavit.store.postgres.bulk import bulk_commit, bulk_put_vectors
from affidavit.store.postgres.store import PostgresStore
from tests.pg_fixture import PgCluster
from tests.postgres.conftest import make_bundle

pytestmark = pytest.mark.postgres

T = "tenant-a"
TABLES = ("blobs", "nodes", "aliases", "versions", "head_map", "head_history",
          "paragraph_labels", "chunks", "postings", "acl_tokens", "sire")
READER = AuthzContext(T, "u", frozenset({"group:staff#member"}), frozenset({"INTERNAL"}), "pv")


def bundles() -> list:
    return [make_bundle(T, f"n{i}", f"v{i}", 3, terms=("alpha", f"t{i}")) for i in range(5)]


def dump(dsn: str) -> dict[str, list[tuple]]:
    with psycopg.connect(dsn) as conn:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3").fetchall()
                for t in TABLES}


def test_bulk_commit_writes_what_commit_version_writes(
        pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    one_by_one, bulk = pg_cluster.new_database("single"), pg_cluster.new_database("bulk")
    first, second = PostgresStore(one_by_one), PostgresStore(bulk)
    try:
        for bundle in bundles():
            first.commit_version(bundle)
        assert bulk_commit(second, bundles()) == 15
        assert dump(bulk) == dump(one_by_one)
        assert second.lexical_stats(T) == first.lexical_stats(T)
        hits = second.lexical_search(READER, {"alpha": 1.0}, k1=1.5, b=0.75, avg_length=2.0,
                                     limit=20)
        assert len(hits) == 15
        # The copied postings name their versions: the readable-version plan finds them too.
        monkeypatch.setattr("affidavit.store.postgres.lexical.SMALL_POSTINGS", 0)
        assert second.lexical_search(READER, {"alpha": 1.0}, k1=1.5, b=0.75, avg_length=2.0,
                                     limit=20) == hits
        assert second.explain_lexical(READER, {"alpha": 1.0}, k1=1.5, b=0.75,
                                      avg_length=2.0, limit=20)[0].startswith(
            "plan by readable version")
        with pytest.raises(StoreError, match="already has a head"):
            bulk_commit(second, bundles()[:1])
        ids = [c.chunk_id for c in bundles()[0].chunks]
        assert bulk_put_vectors(second, T, "m", ids, [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]) == 3
        assert [h.chunk_id for h in second.vector_search(READER, "m", [1.0, 0.0], limit=1)] == [
            ids[0]]
    finally:
        first.close()
        second.close()


def test_open_store_opens_postgres_urls(pg_cluster: PgCluster) -> None:
    store = open_store(pg_cluster.new_database("url"))
    try:
        assert store.backend == "postgres" and store.schema_version() >= 1
    finally:
        store.close()


def test_a_displayed_location_never_shows_a_password() -> None:
    shown = display_location("postgresql://owner:s3cret@db:5432/aff?password=x2&sslmode=require")
    assert "s3cret" not in shown and "x2" not in shown and "sslmode=require" in shown
    assert display_location(".affidavit/affidavit.db") == ".affidavit/affidavit.db"


def test_without_psycopg_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "affidavit.store.postgres.store", None)  # import fails
    with pytest.raises(ConfigurationError, match="'postgres' extra"):
        open_store("postgresql://nobody@localhost/none")
