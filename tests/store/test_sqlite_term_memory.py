"""An ingest batch remembers the lexical term keys it has read, and forgets them when a
document rolls back: a rolled-back document's new terms leave neither rows nor keys behind,
and the documents after it get the postings and keys they get without it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from affidavit.config.settings import Settings
from affidavit.errors import StoreError
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore
from affidavit.store.sqlite.store import SQLiteStore as StoreClass

BODIES = {
    "a": "# Harbour\n\nThe harbour master clears containers on the quay.\n",
    # Its new terms are written, then its commit fails and rolls back.
    "b": "# Fauna\n\nA zebra and a quokka wait by the okapi enclosure.\n",
    # Shares a new term with b and brings others: keys are given again, in term order.
    "c": "# Zoo\n\nThe quokka, the wombat and the aardvark sleep at noon.\n",
}


def document(source_id: str) -> SourceDocument:
    content = BODIES[source_id].encode()
    meta = DocumentMetadata(source_id=source_id, title=source_id, acl=("group:all#member",))
    return SourceDocument("memory", source_id, sha256_hex(content), content,
                          f"{source_id}.md", meta)


def lexical_rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return [*conn.execute("SELECT term_key, tenant_id, term FROM lexical_terms "
                              "ORDER BY term_key"),
                *conn.execute("SELECT tenant_id, term, chunk_id, tf FROM postings "
                              "ORDER BY tenant_id, term, chunk_id")]


def test_a_rolled_back_document_leaves_no_term_key_behind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = tmp_path / "without-b.db"
    store = SQLiteStore(reference)
    Ingestor(store, Settings()).run([StaticSource([document("a"), document("c")])])
    store.close()

    move_head = StoreClass._move_head

    def failing_move_head(self: StoreClass, conn: sqlite3.Connection, tenant: str,
                          node_id: str, *args: object, **kwargs: object) -> str | None:
        if conn.execute("SELECT 1 FROM nodes WHERE node_id = ? AND source_id = 'b'",
                        (node_id,)).fetchone():
            raise StoreError("the disk filled up while b was written")
        return move_head(self, conn, tenant, node_id, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(StoreClass, "_move_head", failing_move_head)
    path = tmp_path / "with-b.db"
    store = SQLiteStore(path)
    summary = Ingestor(store, Settings()).run(
        [StaticSource([document("a"), document("b"), document("c")])])
    store.close()
    assert summary.count("ingested") == 2 and summary.count("quarantined") == 1

    rows = lexical_rows(path)
    assert rows == lexical_rows(reference)
    terms = {row[2] for row in rows if isinstance(row[0], int)}
    assert "quokka" in terms and not {"zebra", "okapi"} & terms


def test_a_full_term_memory_starts_again_without_losing_a_documents_known_terms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the batch's term memory passes its bound it is emptied; a document holding
    both remembered and new terms still gets every posting, the keys read afresh."""
    shared = SourceDocument  # the harbour words of "a" again, and new ones
    content = b"# Quay\n\nThe harbour master sleeps on the quay at noon.\n"
    meta = DocumentMetadata(source_id="d", title="d", acl=("group:all#member",))
    d = shared("memory", "d", sha256_hex(content), content, "d.md", meta)
    reference = tmp_path / "unbounded.db"
    store = SQLiteStore(reference)
    Ingestor(store, Settings()).run([StaticSource([document("a"), document("c"), d])])
    store.close()

    monkeypatch.setattr("affidavit.store.sqlite.lexical.TERM_KEYS_KEPT", 3)
    path = tmp_path / "bounded.db"
    store = SQLiteStore(path)
    summary = Ingestor(store, Settings()).run([StaticSource([document("a"), document("c"), d])])
    store.close()
    assert summary.count("ingested") == 3
    assert lexical_rows(path) == lexical_rows(reference)
