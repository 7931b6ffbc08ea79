"""Model egress is declared: only the labels in ``[egress] embedding_labels`` are ever sent
to the embedding backend, and only the labels in ``[egress] answer_labels`` to the answer
model and the rerank judge. RESTRICTED is never declarable. The endpoints here are real
HTTP servers on 127.0.0.1 that log every request body."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.e2e.test_policy_in_force import approve_all
from tests.model_egress_server import RecordingModelServer

from affidavit.config.loader import load
from affidavit.config.settings import (
    AclSettings,
    AuthzSettings,
    EgressSettings,
    ProviderSettings,
    RetrievalSettings,
    Settings,
    VectorSettings,
)
from affidavit.engine.query import Engine
from affidavit.errors import ConfigurationError
from affidavit.ingest.run import Ingestor
from affidavit.llm.openai import OpenAIProvider
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore

TENANT = "acme"
OPEN = "Staff book hotel rooms through the travel desk for every review trip."
SECRET = "The hotel cost ledger for the merger shows CNRYSECRET313 pounds of travel."
RESTRICTED = "Project Lighthouse hotel bookings are held under code CNRYLIGHT551 for travel."
STALE = "The harbour crane hire near the hotel costs CNRYSTALE727 pounds a day of travel."


def doc(source_id: str, text: str, label: str | None = None) -> SourceDocument:
    body = text.encode()
    meta = DocumentMetadata(source_id=source_id, title=source_id, classification=label)
    return SourceDocument("memory", source_id, sha256_hex(body), body, f"{source_id}.txt",
                          meta)


CORPUS = [doc("open", OPEN), doc("secret", SECRET, "SECRET"), doc("light", RESTRICTED),
          doc("crane", STALE)]


def settings_for(server: RecordingModelServer, **changes: object) -> Settings:
    base = Settings(
        tenant=TENANT, acl=AclSettings(default=("*",)),
        grants={"*": ("INTERNAL",), "user:board": ("SECRET", "RESTRICTED")},
        authz=AuthzSettings(),
        sensitivity=replace(Settings().sensitivity,
                            restricted_keywords=("Project Lighthouse",)),
        vectors=VectorSettings(backend="openai", endpoint=server.base_url, model="emb"),
        egress=EgressSettings(answer_labels=("PUBLIC", "INTERNAL"),
                              embedding_labels=("PUBLIC", "INTERNAL")),
        provider=ProviderSettings(base_url=server.base_url, model="m"),
        retrieval=RetrievalSettings(rerank=True),
    )
    return base.replace(**changes)


def test_the_embedding_endpoint_receives_only_declared_labels(tmp_path: Path) -> None:
    with RecordingModelServer().running() as server:
        settings = settings_for(server)
        store = SQLiteStore(tmp_path / "a.db")
        Ingestor(store, settings).run([StaticSource(CORPUS)])
        engine = Engine(store, settings)
        hits = engine.retriever.search(engine.authz_context("user:board"), "hotel travel",
                                       limit=10)
        sent = server.logged("/embeddings")
    assert OPEN in sent and STALE in sent  # the declared labels were embedded
    assert "CNRYSECRET313" not in sent and "CNRYLIGHT551" not in sent
    by_text = {h.chunk.text: h for h in hits}
    # Authorized readers still find undeclared labels, through the lexical channel only.
    assert by_text[SECRET].vector_rank is None and by_text[SECRET].lexical_rank
    restricted = by_text[RESTRICTED]
    assert restricted.vector_rank is None and restricted.chunk.label == "RESTRICTED"
    assert by_text[OPEN].vector_rank is not None


def test_lazy_embedding_never_sends_a_chunk_labelled_under_an_old_policy(
        tmp_path: Path) -> None:
    with RecordingModelServer().running() as server:
        before = settings_for(server, vectors=VectorSettings())  # no vectors at ingest
        store = SQLiteStore(tmp_path / "a.db")
        Ingestor(store, before).run([StaticSource(CORPUS)])
        # Afterwards vectors are switched on and "harbour crane" becomes RESTRICTED; the
        # crane chunk is still stored with its INTERNAL label of the old policy.
        after = settings_for(server, sensitivity=replace(
            before.sensitivity, restricted_keywords=("Project Lighthouse", "harbour crane")),
            vectors=VectorSettings(backend="openai", endpoint=server.base_url, model="emb",
                                   compute="lazy"))
        Engine(store, after).search("user:board", "hotel travel crane", limit=10)
        stale_sent = server.logged("/embeddings")
        Ingestor(store, after).run([])  # re-labelled from the blob: crane is RESTRICTED now
        Engine(store, after).search("user:board", "hotel travel crane", limit=10)
        sent = server.logged("/embeddings")
    assert "CNRYSTALE727" not in stale_sent
    assert OPEN in sent and "CNRYSTALE727" not in sent and "CNRYLIGHT551" not in sent


def test_the_answer_model_receives_only_declared_labels_and_the_ledger_says_so(
        tmp_path: Path) -> None:
    with RecordingModelServer().running() as server:
        settings = settings_for(server, answer=replace(Settings().answer, provider="openai"))
        store = SQLiteStore(tmp_path / "a.db")
        Ingestor(store, settings).run([StaticSource(CORPUS)])
        approve_all(store)
        provider = OpenAIProvider(settings.provider, api_key="k")
        engine = Engine(store, settings, provider=provider)
        result = engine.ask("user:board", "What does the hotel cost ledger for the merger "
                                          "show about hotel travel?")
        chat = server.logged("/chat/completions")
        assert server.count("/chat/completions") >= 1
    assert "CNRYSECRET313" not in chat and "CNRYLIGHT551" not in chat
    entry = store.get_ledger(TENANT, result.ledger_record_id)
    assert entry is not None
    record = json.loads(entry.payload)
    assert record["egress"]["answer_labels"] == ["INTERNAL", "PUBLIC"]
    assert record["egress"]["embedding_labels"] == ["INTERNAL", "PUBLIC"]
    dropped = record["egress"]["gate"]["dropped"]
    assert dropped and {d["reason"] for d in dropped} == {"OUTSIDE_MODEL_EGRESS"}


@pytest.mark.parametrize("body, key", [
    ('[egress]\nanswer_labels = ["INTERNAL", "RESTRICTED"]\n', "egress.answer_labels"),
    ('[egress]\nembedding_labels = ["RESTRICTED"]\n', "egress.embedding_labels"),
    ('[egress]\nembedding_labels = ["INTERNAL", "MADE_UP"]\n', "egress.embedding_labels"),
])
def test_restricted_in_a_declared_egress_is_a_configuration_error(
        tmp_path: Path, body: str, key: str) -> None:
    (tmp_path / "affidavit.toml").write_text(body, encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        load(cwd=tmp_path, environ={})
    assert key in str(caught.value)
