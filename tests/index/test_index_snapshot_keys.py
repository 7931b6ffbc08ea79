"""The in-memory index's snapshot, read by integer keys, is the one the rows describe.

:class:`SQLiteSnapshotSource` reads postings as (term key, chunk key, tf) and maps them to
rows and terms in numpy. The reference is :func:`build_snapshot` over the ``postings`` view
(term and chunk id as text): same chunks, terms, postings, lengths and ACL tokens, with
edited documents (retired versions), another tenant's documents and an empty tenant.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tests.retrieval.governed_corpus import (
    document,
    governed_settings,
    ingest,
    synthetic_documents,
)

from affidavit.index.snapshot import IndexSnapshot, SQLiteSnapshotSource, build_snapshot
from affidavit.ingest.run import Ingestor
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore


def from_view(store: SQLiteStore, tenant: str, generation: int) -> IndexSnapshot:
    read = store._read
    chunks = read("SELECT chunk_id, version_id, label, n_tokens, label_epoch FROM chunks "
                  "WHERE tenant_id = ? AND is_head = 1", (tenant,))
    postings = read(
        "SELECT p.term, p.chunk_id, p.tf FROM postings p JOIN chunks c ON c.tenant_id = "
        "p.tenant_id AND c.chunk_id = p.chunk_id WHERE p.tenant_id = ? AND c.is_head = 1",
        (tenant,))
    acl = read("SELECT a.version_id, a.token FROM acl_tokens a WHERE a.tenant_id = ? AND "
               "a.version_id IN (SELECT version_id FROM chunks WHERE tenant_id = ? "
               "AND is_head = 1)", (tenant, tenant))
    return build_snapshot(
        tenant, generation,
        [(str(r[0]), str(r[1]), str(r[2]), int(str(r[3])), str(r[4])) for r in chunks],
        [(str(r[0]), str(r[1]), int(str(r[2]))) for r in postings],
        [(str(r[0]), str(r[1])) for r in acl])


def assert_same(got: IndexSnapshot, expected: IndexSnapshot) -> None:
    for name in ("tenant", "generation", "chunk_ids", "version_ids", "labels", "label_epochs",
                 "terms", "acl_tokens"):
        assert getattr(got, name) == getattr(expected, name), name
    for name in ("lengths", "term_starts", "posting_rows", "posting_tfs"):
        mine, theirs = getattr(got, name), getattr(expected, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), name


def test_the_keyed_snapshot_equals_the_rows_after_edits_and_beside_another_tenant(
        tmp_path: Path) -> None:
    settings = governed_settings()
    documents = synthetic_documents(30)
    store = ingest(tmp_path, documents, settings)
    kept = documents[2].content.decode("utf-8").split("\n\n")[0]
    # Edits: new versions of two documents retire their old chunk rows and postings; one
    # keeps its first paragraph, so that chunk id is held by a retired row and a head row.
    Ingestor(store, settings).run([StaticSource([
        document("doc-001", "Document travel hotel zeppelin.", acl=("group:staff#member",)),
        document("doc-002", f"{kept}\n\nA new vote on the zeppelin budget. " + "Vote. " * 60,
                 acl=("group:board#member",), classification="PUBLIC"),
    ])])
    shared = store._read("SELECT chunk_id FROM chunks WHERE tenant_id = ? GROUP BY chunk_id "
                         "HAVING COUNT(*) > 1", (settings.tenant,))
    assert shared, "a chunk id is held by a retired and a head row"
    other = settings.replace(tenant="other")
    Ingestor(store, other).run([StaticSource(synthetic_documents(5, seed=9))])
    source = SQLiteSnapshotSource(store)
    for tenant in (settings.tenant, "other"):
        snapshot = source.index_snapshot(tenant)
        assert snapshot.chunk_ids and snapshot.terms
        assert_same(snapshot, from_view(store, tenant, snapshot.generation))
    store.ensure_tenant("empty")
    empty = source.index_snapshot("empty")
    assert empty.chunk_ids == () and empty.terms == () and empty.posting_rows.size == 0
    assert_same(empty, from_view(store, "empty", empty.generation))
    store.close()
