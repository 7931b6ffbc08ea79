"""Migration 18: a chunk row's lexical key is its rowid, derived labels are stored as arrays
and a version's paragraph labels as one row. A database written at 17 is upgraded in place,
in one transaction, to the rows a fresh ingest writes, and every reader gets what it got
before, no more: a reader still gets no chunk and no derived string it may not read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from tests.store.layout_17 import downgrade_to_17
from tests.store.test_store_contract import STAFF, T, bundle

from affidavit.config.settings import DEFAULT_LABELS, SensitivitySettings, Settings
from affidavit.engine.query import Engine
from affidavit.index.snapshot import SQLiteSnapshotSource
from affidavit.ingest.run import Ingestor
from affidavit.policy.derived import HEADING_WITHHELD, TITLE_WITHHELD
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore
from affidavit.store.protocol import COUNTABLE_TABLES, RelationTuple

NOW = "2026-01-01T00:00:00+00:00"
SECRET = "Lighthouse"  # a RESTRICTED keyword
TENANTS = ("acme", "globex")
QUERIES = ("customs officer quay", "lighthouse acquisition", "printers", "pallets shed")
BODY = "The office printers on the third floor are replaced in spring by the facilities team."


def settings(tenant: str) -> Settings:
    return Settings(tenant=tenant,
                    sensitivity=SensitivitySettings(restricted_keywords=(SECRET,)))


def document(source_id: str, body: str, acl: tuple[str, ...]) -> SourceDocument:
    content = body.encode()
    meta = DocumentMetadata(source_id=source_id, title=source_id, acl=acl)
    return SourceDocument("memory", source_id, sha256_hex(content), content,
                          f"{source_id}.md", meta)


def corpus(round_: int) -> list[SourceDocument]:
    """Staff documents (one with a RESTRICTED heading, one with front matter, so its text is
    not its blob's), a private one; round 1 edits one paragraph of two documents."""
    edit = f"\n\nAddendum {round_}: pallets in the shed are counted on Fridays.\n" if round_ else ""
    staff = ("group:staff#member",)
    return [
        document("yard", f"# Yard\n\n{BODY}\n\n## Quay\n\nContainers wait on the quay until "
                         f"the customs officer clears them.\n{edit}", staff),
        document("plan", f"# Plan\n\nPrinters overview. {BODY}\n\n## {SECRET} timeline\n\n"
                         f"{BODY} The quay is repainted.\n", staff),
        document("memo", f"---\ntitle: Harbour memo\n---\n\nPrinters memo. {BODY}\n{edit}",
                 staff),
        document("private", f"# {SECRET} acquisition\n\nThe customs officer signs the "
                            "lighthouse deal.\n", ("user:bo",)),
    ]


def build(path: Path) -> None:
    store = SQLiteStore(path)
    try:
        for tenant in TENANTS:
            store.ensure_tenant(tenant)
            for user in ("user:ann", "user:bo"):
                store.add_tuple(tenant, RelationTuple("group:staff", "member", user, "test"),
                                at=NOW)
            store.grant(tenant, "user:ann", ["INTERNAL"], at=NOW)
            store.grant(tenant, "user:bo", ["INTERNAL", "RESTRICTED"], at=NOW)
            for round_ in (0, 1):
                summary = Ingestor(store, settings(tenant)).run([StaticSource(corpus(round_))])
                assert not summary.count("failed"), summary.to_dict()
    finally:
        store.close()


def reads(path: Path) -> dict[str, object]:
    """What every reader of the chunk and paragraph rows gets, per tenant."""
    store = SQLiteStore(path)
    out: dict[str, object] = {}
    try:
        for tenant in TENANTS:
            engine = Engine(store, settings(tenant))
            versions = [str(r[0]) for r in store._read(
                "SELECT version_id FROM versions WHERE tenant_id = ? ORDER BY version_id",
                (tenant,))]
            ids = sorted({str(r[0]) for r in store._read(
                "SELECT chunk_id FROM chunks WHERE tenant_id = ?", (tenant,))})
            out[tenant] = {
                "versions": {v: (store.version_chunks(tenant, v),
                                 store.paragraph_labels(tenant, v)) for v in versions},
                "heads": store.heads(tenant),
                "by_label": {label: store.chunks_with_label(tenant, ids, label)
                             for label in DEFAULT_LABELS},
                "sources": {s: store.source_chunk_ids(tenant, s)
                            for s in ("yard", "plan", "memo", "private")},
                "get": {user: store.get_chunks(engine.authz_context(user), ids)
                        for user in ("user:ann", "user:bo", "user:eve")},
                "search": {(user, q): engine.search(user, q, limit=10)
                           for user in ("user:ann", "user:bo", "user:eve") for q in QUERIES},
                "snapshot": repr(SQLiteSnapshotSource(store).index_snapshot(tenant)),
                "counts": {t: store.count_rows(tenant, t) for t in COUNTABLE_TABLES},
                "stats": store.lexical_stats(tenant),
            }
    finally:
        store.close()
    return out


def physical(path: Path) -> Iterator[tuple[object, ...]]:
    """The stored rows of the tables migration 18 writes, in key order."""
    with sqlite3.connect(path) as conn:
        yield from conn.execute("SELECT * FROM chunks ORDER BY chunk_key")
        yield from conn.execute("SELECT * FROM paragraph_label_sets "
                                "ORDER BY tenant_id, version_id")
        yield from conn.execute("SELECT * FROM lexical_postings ORDER BY term_key, chunk_key")
        yield from conn.execute("SELECT * FROM postings ORDER BY tenant_id, term, chunk_id")
        yield from conn.execute("SELECT * FROM paragraph_labels "
                                "ORDER BY tenant_id, version_id, idx")


def schema(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_schema")}


@pytest.fixture
def written(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    build(path)
    return path


def test_a_database_written_at_17_is_upgraded_to_the_rows_a_fresh_ingest_writes(
        written: Path) -> None:
    before, rows = reads(written), list(physical(written))
    downgrade_to_17(written)
    assert {"chunks_version", "chunks_by_key"} <= schema(written)
    with sqlite3.connect(written) as conn:
        stored = [r[0] for r in conn.execute("SELECT derived_json FROM chunks")]
    assert all(str(s).startswith("{") for s in stored)  # the 17 layout, objects

    assert reads(written) == before  # the store reads 17's rows as they are, once migrated
    assert "chunks_version" not in schema(written)
    assert {"chunk_rows_by_version", "chunk_rows_by_id", "paragraph_label_sets"} <= schema(written)
    assert list(physical(written)) == rows


def test_readers_get_what_they_got_and_no_string_they_may_not_read(written: Path) -> None:
    downgrade_to_17(written)
    store = SQLiteStore(written)
    try:
        assert store.schema_version() >= 18
        engine = Engine(store, settings("acme"))
        private = store.source_chunk_ids("acme", "private")
        plan = store.source_chunk_ids("acme", "plan")
        assert private and plan
        ann, bo = engine.authz_context("user:ann"), engine.authz_context("user:bo")
        assert store.get_chunks(ann, private) == []
        assert store.get_chunks(engine.authz_context("user:eve"), plan) == []
        for hit in engine.search("user:ann", "lighthouse timeline quay printers", limit=20):
            assert SECRET not in hit.text + hit.title + hit.locator
        shown = store.get_chunks(ann, plan)
        assert any(HEADING_WITHHELD in r.chunk.heading_path for r in shown)
        assert all(SECRET not in r.chunk.locator for r in shown)
        assert any(f"{SECRET} timeline" in r.chunk.heading_path
                   for r in store.get_chunks(bo, plan))
        own = store.get_chunks(bo, private)
        assert own and all(r.chunk.text and TITLE_WITHHELD not in r.title for r in own)
    finally:
        store.close()


def test_an_upgrade_that_fails_leaves_the_database_at_17(written: Path) -> None:
    downgrade_to_17(written)
    with sqlite3.connect(written) as conn:
        conn.execute("UPDATE chunks SET derived_json = 'not json' WHERE rowid = "
                     "(SELECT MAX(rowid) FROM chunks)")
    with pytest.raises(Exception):  # noqa: B017 - the upgrade's own error, whatever its type
        SQLiteStore(written)
    assert {"chunks_version", "chunks_by_key", "paragraph_labels"} <= schema(written)
    with sqlite3.connect(written) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 17
        assert conn.execute("SELECT type FROM sqlite_schema WHERE name = 'paragraph_labels'"
                            ).fetchone()[0] == "table"
        assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] > 0


def test_a_version_holding_one_chunk_id_twice_is_refused_whole(tmp_path: Path) -> None:
    # No index holds (version, chunk id) any more: each row's own key refuses the second.
    first = bundle("n1", "v1", [("INTERNAL", "alpha beta", {"alpha": 1, "beta": 1}),
                                ("RESTRICTED", "alpha secret", {"alpha": 1, "secret": 1})])
    twice = replace(first.chunks[1], chunk_id=first.chunks[0].chunk_id)
    store = SQLiteStore(tmp_path / "store.db")
    try:
        with pytest.raises(sqlite3.IntegrityError):
            store.commit_version(replace(first, chunks=(first.chunks[0], twice)))
        for table in ("versions", "chunks", "postings", "paragraph_labels", "blobs"):
            assert store.count_rows(T, table) == 0, table
        assert store.lexical_search(STAFF, {"alpha": 1.0, "secret": 1.0}, k1=1.2, b=0.75,
                                    avg_length=2.0, limit=10) == []
    finally:
        store.close()
