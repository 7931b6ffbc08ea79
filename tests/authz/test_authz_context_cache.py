"""A policy change takes effect on the very next request, cache or no cache.

The store authorizer keeps each principal's expanded context while the tenant's policy
generation is unchanged. These tests warm that cache, change the policy in every way a
policy can change (a revoked grant, a removed tuple, a row deleted by another connection
that never went through the store's methods) and search again through the same engine:
the chunk is gone on the first request after the change.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from affidavit.authz import parse_tuple
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

NOW = "2026-01-01T00:00:00+00:00"
CANARY = "plumbagorite"
BOB = "user:bob"
MEMBERSHIP = "group:finance#member@user:bob"


def world(tmp: Path) -> tuple[SQLiteStore, Engine]:
    root = tmp / "corpus"
    (root / "finance").mkdir(parents=True)
    (root / "finance" / "review.md").write_text(
        "---\nacl: [\"group:finance#member\"]\nclassification: FINANCIAL\n---\n"
        f"# Ledger notes\n\nThe treasury review found the {CANARY} reconciliation complete.\n",
        encoding="utf-8")
    store = SQLiteStore(tmp / "cache.db")
    settings = Settings()
    Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    store.grant("default", "group:finance#member", ["FINANCIAL"], at=NOW)
    store.add_tuple("default", parse_tuple(MEMBERSHIP), at=NOW)
    engine = Engine(store, settings)
    assert seen_by_bob(engine), "bob reads the review before the change (cache warmed)"
    assert seen_by_bob(engine), "and again from the cached context"
    return store, engine


def seen_by_bob(engine: Engine) -> bool:
    return any(CANARY in hit.text for hit in engine.search(BOB, f"treasury {CANARY}"))


def test_a_revoked_grant_hides_the_chunk_on_the_very_next_search(tmp_path: Path) -> None:
    store, engine = world(tmp_path)
    assert store.revoke("default", "group:finance#member", ["FINANCIAL"]) == 1
    assert not seen_by_bob(engine)
    store.close()


def test_a_removed_tuple_hides_the_chunk_on_the_very_next_search(tmp_path: Path) -> None:
    store, engine = world(tmp_path)
    assert store.remove_tuple("default", parse_tuple(MEMBERSHIP))
    assert not seen_by_bob(engine)
    store.close()


def test_a_grant_deleted_by_another_connection_hides_the_chunk_on_the_next_search(
        tmp_path: Path) -> None:
    store, engine = world(tmp_path)
    other = sqlite3.connect(tmp_path / "cache.db")
    with other:
        other.execute("DELETE FROM label_grants WHERE subject = 'group:finance#member'")
    other.close()
    assert not seen_by_bob(engine)
    store.close()


def test_a_new_grant_shows_the_chunk_on_the_very_next_search(tmp_path: Path) -> None:
    store, engine = world(tmp_path)
    store.revoke("default", "group:finance#member", ["FINANCIAL"])
    assert not seen_by_bob(engine)
    store.grant("default", BOB, ["FINANCIAL"], at=NOW)
    assert seen_by_bob(engine)
    store.close()


def test_an_unchanged_policy_serves_the_expanded_context_again(tmp_path: Path) -> None:
    store, engine = world(tmp_path)
    first = engine.authorizer.context_for("default", BOB)
    assert engine.authorizer.context_for("default", BOB) is first
    store.grant("default", "user:carol", ["PII"], at=NOW)  # any change: expanded afresh
    assert engine.authorizer.context_for("default", BOB) is not first
    store.close()
