"""A policy change is in force on the next request.

A chunk carries the label epoch of the sensitivity policy that labelled it, and every read
made for a caller or a model admits only chunks of the reader's epoch. Adding a RESTRICTED
keyword to the settings therefore hides the paragraph it now matches — from INTERNAL
readers, from every model, on every retrieval path — on the very next request, before any
re-ingest. The next ingestion run re-labels such documents from their stored bytes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from affidavit.authz import StaticAuthorizer, parse_tuple
from affidavit.config.settings import AuthzSettings, ProviderSettings, RetrievalSettings, Settings
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.run import Ingestor
from affidavit.llm.openai import OpenAIProvider
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from affidavit.store.protocol import Store
from tests.model_egress_server import RecordingModelServer

TENANT = "acme"
CANARY = "CNRYCRANE4400"
DOC = (
    "---\nacl: [\"group:staff#member\"]\n---\n# Yard operations\n\n"
    "Staff book hotel rooms through the travel desk for every review trip to the yard.\n\n"
    f"The harbour crane hire for the yard costs {CANARY} pounds a day, paid by the yard.\n"
)
SETTINGS = Settings(
    tenant=TENANT,
    authz=AuthzSettings(tuples=("group:staff#member@user:reader",
                                "group:staff#member@user:board")),
    grants={"group:staff#member": ("INTERNAL",), "user:board": ("RESTRICTED",)},
    retrieval=RetrievalSettings(rerank=True),
)
CHANGED = SETTINGS.replace(sensitivity=replace(SETTINGS.sensitivity,
                                               restricted_keywords=("harbour crane",)))


def ingest(store: Store, root: Path, settings: Settings) -> None:
    root.mkdir(exist_ok=True)
    (root / "yard.md").write_text(DOC, encoding="utf-8")
    source = LocalFolderSource(root, max_document_bytes=1 << 20)
    Ingestor(store, settings).run([source])
    approve_all(store)


def approve_all(store: Store) -> None:
    ids = [r.sire_id for r in store.list_sire(TENANT, state="PROPOSED")]
    approve_sires(store, TENANT, ids, by="user:curator",
                  at=datetime.now(UTC).isoformat())


def texts(engine: Engine, principal: str, query: str) -> list[tuple[str, str]]:
    return [(h.text, h.label) for h in engine.search(principal, query, limit=20)]


def check_policy_change_is_in_force(store: Store, root: Path) -> None:
    """The whole scenario, on any store backend."""
    ingest(store, root, SETTINGS)
    before = texts(Engine(store, SETTINGS), "user:reader", "harbour crane hire")
    assert any(CANARY in text for text, _ in before)  # readable while it is INTERNAL

    # The keyword is added; nothing is re-ingested. The next request is under it.
    for engine in (Engine(store, CHANGED), Engine(store, CHANGED, memory_index=True)):
        assert texts(engine, "user:reader", "harbour crane hire") == []
        assert texts(engine, "user:board", "harbour crane hire") == []
        assert texts(engine, "user:reader", "hotel rooms travel desk") == []

    # The next ingestion run re-labels the document from its stored bytes.
    summary = Ingestor(store, CHANGED).run([])
    assert summary.relabelled == ["yard.md"]
    assert Ingestor(store, CHANGED).run([]).relabelled == []  # once only
    approve_all(store)
    for engine in (Engine(store, CHANGED), Engine(store, CHANGED, memory_index=True)):
        reader = texts(engine, "user:reader", "harbour crane hire hotel rooms travel desk")
        assert reader and all(CANARY not in text for text, _ in reader)
        board = texts(engine, "user:board", "harbour crane hire")
        assert [label for text, label in board if CANARY in text] == ["RESTRICTED"]
        assert texts(engine, "user:outsider", "hotel rooms travel desk") == []  # ACL kept


def test_a_new_restricted_keyword_is_in_force_on_the_next_request(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    check_policy_change_is_in_force(store, tmp_path / "corpus")


def test_a_stale_label_never_reaches_a_model(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    ingest(store, tmp_path / "corpus", SETTINGS)
    with RecordingModelServer().running() as server:
        provider = OpenAIProvider(ProviderSettings(base_url=server.base_url, model="m"),
                                  api_key="k")
        engine = Engine(store, CHANGED, provider=provider)
        for principal in ("user:reader", "user:board"):
            result = engine.ask(principal, "What does the harbour crane hire cost?")
            assert CANARY not in result.answer
        Ingestor(store, CHANGED).run([])
        approve_all(store)
        for principal in ("user:reader", "user:board"):
            engine.ask(principal, "What does the harbour crane hire cost at the yard?")
            engine.ask(principal, "How do staff book hotel rooms for the yard?")
        assert server.count("/chat/completions") > 0  # the model was asked after re-labelling
        assert CANARY not in server.logged()


def test_an_external_authorizer_is_held_to_the_engines_label_epoch(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    ingest(store, tmp_path / "corpus", SETTINGS)
    external = StaticAuthorizer([parse_tuple("group:staff#member@user:reader")],
                                {"group:staff#member": ["INTERNAL"]}, tenants=[TENANT])
    assert texts(Engine(store, SETTINGS, authorizer=external), "user:reader", "harbour crane")
    assert texts(Engine(store, CHANGED, authorizer=external), "user:reader",
                 "harbour crane") == []


def test_the_ledger_view_withholds_evidence_labelled_under_an_old_policy(
        tmp_path: Path) -> None:
    from affidavit.authz import FailClosedAuthorizer, StoreAuthorizer
    from affidavit.engine.ledger_record import redact_for

    store = SQLiteStore(tmp_path / "a.db")
    ingest(store, tmp_path / "corpus", SETTINGS)
    result = Engine(store, SETTINGS).ask("user:reader", "What does the harbour crane cost?")
    entry = store.get_ledger(TENANT, result.ledger_record_id)
    assert entry is not None and CANARY in entry.payload
    authz = FailClosedAuthorizer(StoreAuthorizer(store, CHANGED)).context_for(TENANT,
                                                                               "user:reader")
    assert CANARY not in str(redact_for(entry, authz, store))


@pytest.mark.parametrize("memory_index", [False, True])
def test_chunks_written_before_label_epochs_are_not_served(tmp_path: Path,
                                                           memory_index: bool) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    ingest(store, tmp_path / "corpus", SETTINGS)
    with store._write() as conn:  # what a database migrated from before epochs holds
        conn.execute("UPDATE chunks SET label_epoch = '' WHERE tenant_id = ?", (TENANT,))
        conn.execute("UPDATE lexical_stats SET generation = generation + 1")
    engine = Engine(store, SETTINGS, memory_index=memory_index)
    assert texts(engine, "user:reader", "harbour crane hire") == []
    assert [h.node_id for h in store.label_stale_heads(TENANT, engine.label_epoch)] == [
        h.node_id for h in store.heads(TENANT)]
