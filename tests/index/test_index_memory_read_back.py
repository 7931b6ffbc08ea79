"""Hits read back from the in-memory index are exactly what the store would return.

The index keeps, per corpus generation, the records the store returned for readers granted
a set of labels. These tests fill that cache as one reader and read as another, and change
the policy between two searches: a reader whose membership or grant was revoked gets
nothing from the cache on the very next request, and a reader granted fewer labels never
gets the derived text (a title) shown to one granted more.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.retrieval.governed_corpus import (
    PRINCIPALS,
    context,
    governed_settings,
    ingest,
    synthetic_documents,
)

from affidavit.authz import parse_tuple
from affidavit.config.settings import SensitivitySettings, Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.policy.derived import TITLE_WITHHELD
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

NOW = "2026-01-01T00:00:00+00:00"
CANARY = "plumbagorite"
EVE = "user:eve"
MALLORY = "user:mallory"
MEMBERSHIP = "group:finance#member@user:eve"
SECRET = "Lighthouse"  # a RESTRICTED keyword (below)


@pytest.mark.parametrize("first", ["user:carol", "user:dave", "user:alice"])
def test_read_back_is_the_stores_whoever_filled_the_cache(tmp_path: Path, first: str) -> None:
    settings = governed_settings()
    store = ingest(tmp_path, synthetic_documents(40), settings)
    engine = Engine(store, settings, memory_index=True)
    memory = engine.retriever.memory
    assert memory is not None
    ids = list(memory.tenant_index(settings.tenant).snapshot.chunk_ids)
    ids.append("no-such-chunk")
    readers = [first, *sorted(set(PRINCIPALS) - {first})]
    for _ in range(2):  # the second round is served from the records kept
        for principal in readers:
            authz = context(store, settings, principal)
            assert memory.get_chunks(authz, ids) == store.get_chunks(authz, ids), principal
    store.close()


def finance_world(tmp: Path) -> tuple[SQLiteStore, Engine]:
    root = tmp / "corpus"
    (root / "finance").mkdir(parents=True)
    (root / "finance" / "review.md").write_text(
        "---\nacl: [\"group:finance#member\"]\nclassification: FINANCIAL\n---\n"
        f"# Ledger notes\n\nThe treasury review found the {CANARY} reconciliation complete.\n",
        encoding="utf-8")
    store = SQLiteStore(tmp / "read_back.db")
    settings = Settings()
    Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    store.grant("default", "group:finance#member", ["FINANCIAL"], at=NOW)
    store.add_tuple("default", parse_tuple(MEMBERSHIP), at=NOW)
    # Granted the label in her own name too, and a reader outside the group granted it
    # alike: their labels, and so the records kept for them, are the same as a member's.
    store.grant("default", EVE, ["FINANCIAL"], at=NOW)
    store.grant("default", MALLORY, ["FINANCIAL"], at=NOW)
    engine = Engine(store, settings, memory_index=True)
    assert seen_by_eve(engine), "eve reads the review before the change"
    assert seen_by_eve(engine), "and again, her hit read back from the records kept"
    return store, engine


def seen_by_eve(engine: Engine) -> bool:
    return any(CANARY in hit.text for hit in engine.search(EVE, f"treasury {CANARY}"))


def canary_ids(store: SQLiteStore) -> list[str]:
    return [str(r[0]) for r in store._read(
        "SELECT chunk_id FROM chunks WHERE tenant_id = 'default' AND is_head = 1")]


def test_a_removed_membership_hides_the_kept_hit_on_the_very_next_search(
        tmp_path: Path) -> None:
    store, engine = finance_world(tmp_path)
    assert store.remove_tuple("default", parse_tuple(MEMBERSHIP))
    assert not seen_by_eve(engine)
    memory = engine.retriever.memory
    assert memory is not None
    assert memory.get_chunks(engine.authz_context(EVE), canary_ids(store)) == []
    store.close()


def test_a_reader_outside_the_acl_gets_no_record_kept_for_one_inside(tmp_path: Path) -> None:
    store, engine = finance_world(tmp_path)
    memory = engine.retriever.memory
    assert memory is not None
    mallory = engine.authz_context(MALLORY)
    assert mallory.granted_labels == engine.authz_context(EVE).granted_labels
    assert memory.get_chunks(mallory, canary_ids(store)) == []
    assert not any(CANARY in h.text for h in engine.search(MALLORY, f"treasury {CANARY}"))
    store.close()


def test_a_revoked_grant_hides_the_kept_hit_on_the_very_next_search(tmp_path: Path) -> None:
    store, engine = finance_world(tmp_path)
    assert store.revoke("default", "group:finance#member", ["FINANCIAL"]) == 1
    assert store.revoke("default", EVE, ["FINANCIAL"]) == 1
    assert not seen_by_eve(engine)
    memory = engine.retriever.memory
    assert memory is not None
    assert memory.get_chunks(engine.authz_context(EVE), canary_ids(store)) == []
    store.close()


def test_a_reader_granted_less_never_gets_the_title_kept_for_one_granted_more(
        tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "plan.md").write_text(
        f"---\ntitle: {SECRET} plan\nacl: [\"group:staff#member\"]\n---\n\n"
        "The office printers on the third floor are replaced in spring.\n", encoding="utf-8")
    store = SQLiteStore(tmp_path / "titles.db")
    settings = Settings(sensitivity=SensitivitySettings(restricted_keywords=(SECRET,)))
    Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    for who in ("user:high", "user:low"):
        store.add_tuple("default", parse_tuple(f"group:staff#member@{who}"), at=NOW)
    store.grant("default", "user:high", ["INTERNAL", "RESTRICTED"], at=NOW)
    store.grant("default", "user:low", ["INTERNAL"], at=NOW)
    engine = Engine(store, settings, memory_index=True)
    high = engine.search("user:high", "office printers")
    assert high and SECRET in high[0].title, "the title is shown to a reader granted it"
    low = engine.search("user:low", "office printers")
    assert [h.chunk_id for h in low] == [h.chunk_id for h in high]
    # The stand-in for a withheld title is the readable path (else TITLE_WITHHELD).
    assert all(SECRET not in h.title and h.title in ("plan.md", TITLE_WITHHELD) for h in low)
    assert all(SECRET not in h.locator for h in low)
    assert SECRET in engine.search("user:high", "office printers")[0].title
    store.close()
