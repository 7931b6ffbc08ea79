"""DESIGN.md invariants, each pinned by a test named after it, on the real pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.config.loader import load
from affidavit.engine.query import Engine
from affidavit.errors import AuthorizationError, LedgerError
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest, ProviderResponse
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from tests.e2e.conftest import EXAMPLES

NOW = "2026-01-01T00:00:00+00:00"


def ingest_examples(db: Path) -> tuple[SQLiteStore, object]:
    settings = load(EXAMPLES / "affidavit.toml")
    store = SQLiteStore(db)
    source = LocalFolderSource(EXAMPLES / "corpus", source_system="examples",
                               max_document_bytes=settings.ingest.max_document_bytes)
    Ingestor(store, settings).run([source])
    for record in store.list_sire(settings.tenant, state="PROPOSED"):
        approve_sire(store, settings.tenant, record.sire_id, by="tester", at=NOW)
    return store, settings


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


@pytest.fixture
def examples(tmp_path: Path) -> tuple[SQLiteStore, object]:
    store, settings = ingest_examples(tmp_path / "a.db")
    yield store, settings
    store.close()


@pytest.mark.invariant
def test_invariant_restricted_never_reaches_a_provider_end_to_end(examples: tuple) -> None:
    store, settings = examples
    provider = RecordingProvider()
    engine = Engine(store, settings, provider=provider)
    board_text = [h.text for h in engine.search("user:grace.liu", "Project Lighthouse Calder Vale")
                  if h.label == "RESTRICTED"]
    assert board_text, "the board member can find the RESTRICTED minutes by search"
    for question in ("What did the Board decide about Project Lighthouse?",
                     "Calder Vale acquisition offer price", "board minutes October 2024"):
        engine.ask("user:grace.liu", question)
    assert provider.requests
    for request in provider.requests:
        assert all("Lighthouse" not in e.text for e in request.prompt.evidence)
        assert all(e.label != "RESTRICTED" for e in request.prompt.evidence)
        for text in board_text:
            assert text[:60] not in request.prompt.text


@pytest.mark.invariant
def test_invariant_authz_prefilter_in_lexical_retrieval(examples: tuple) -> None:
    store, settings = examples
    engine = Engine(store, settings)
    authz = engine.authz_context("user:sam.reed")
    # Ask the store for far more than exists: nothing unreadable may come back at any depth.
    hits = engine.retriever.search(authz, "revenue board salary grievance Lighthouse policy",
                                   limit=10_000)
    assert hits
    for hit in hits:
        assert hit.chunk.label in authz.granted_labels
    readable = {r.chunk.chunk_id for r in store.get_chunks(authz, [h.chunk.chunk_id
                                                                   for h in hits])}
    assert readable == {h.chunk.chunk_id for h in hits}
    with pytest.raises(AuthorizationError):
        engine.retriever.search(None, "revenue", limit=10)


@pytest.mark.invariant
def test_invariant_no_response_without_ledger_record(examples: tuple) -> None:
    store, settings = examples

    def broken(*args: object, **kwargs: object) -> object:
        raise LedgerError("disk full")

    store.append_ledger = broken  # type: ignore[method-assign]
    engine = Engine(store, settings)
    with pytest.raises(LedgerError):
        engine.ask("user:sam.reed", "What is the nightly hotel limit?")


@pytest.mark.invariant
def test_invariant_fail_closed_when_the_authorizer_fails(examples: tuple) -> None:
    store, settings = examples

    class FailingAuthorizer:
        def context_for(self, tenant: str, principal: str | None) -> object:
            raise AuthorizationError("authorization backend unavailable")

    provider = RecordingProvider()
    engine = Engine(store, settings, authorizer=FailingAuthorizer(),  # type: ignore[arg-type]
                    provider=provider)
    result = engine.ask("user:sam.reed", "What is the nightly hotel limit?")
    assert result.output_state == "BLOCKED" and result.citations == []
    assert provider.requests == []
    assert result.ledger_record_hash
    with pytest.raises(AuthorizationError):
        engine.search("user:sam.reed", "hotel")


@pytest.mark.invariant
def test_invariant_deterministic_ingestion(tmp_path: Path) -> None:
    first, _ = ingest_examples(tmp_path / "one.db")
    second, _ = ingest_examples(tmp_path / "two.db")
    query = ("SELECT chunk_id, version_id, start_offset, end_offset, text, label, witness "
             "FROM chunks ORDER BY chunk_id")
    one, two = first._read(query), second._read(query)
    labels = "SELECT version_id, idx, label, reasons_json FROM paragraph_labels ORDER BY 1, 2"
    assert one == two and len(one) > 50
    assert first._read(labels) == second._read(labels)
    sire = "SELECT version_id, tuple_json FROM sire ORDER BY 1"
    assert first._read(sire) == second._read(sire)
    first.close()
    second.close()


@pytest.mark.invariant
def test_invariant_sire_and_authorization_are_two_gates(examples: tuple) -> None:
    store, settings = examples
    engine = Engine(store, settings)
    # The SOC 2 access-control policy excludes "pci dss": a readable chunk naming it is
    # found by search (authorization admits it) but purged from answers (SIRE excludes it).
    hits = [h for h in engine.search("user:sam.reed", "PCI DSS cardholder data", limit=20)
            if "PCI" in h.text and "Access" in h.title]
    assert hits, "the chunk is readable, so search shows it"
    result = engine.ask("user:sam.reed", "What does the access control policy say about PCI DSS?")
    assert all(c["chunk_id"] not in {h.chunk_id for h in hits} for c in result.citations)
    entry = store.get_ledger(settings.tenant, result.ledger_record_id)
    assert entry is not None and "SIRE_EXCLUDED:pci dss" in entry.payload
