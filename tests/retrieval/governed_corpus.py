"""A small governed corpus ingested through the normal path, shared by the index and
retrieval tests: documents with different ACLs and labels, and principals who see
different parts of it."""

from __future__ import annotations

import random
from pathlib import Path

from affidavit.authz import StoreAuthorizer
from affidavit.config.settings import (
    AuthzSettings,
    ChunkingSettings,
    LexicalSettings,
    Settings,
    VectorSettings,
)
from affidavit.ingest.run import Ingestor
from affidavit.records import AuthzContext, DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore

GROUPS = ("staff", "finance", "board", "legal")
LABELS = ("PUBLIC", "INTERNAL", "FINANCIAL", "RESTRICTED")
PRINCIPALS = {
    "user:alice": (("staff",), ("INTERNAL",)),
    "user:bob": (("staff", "finance"), ("INTERNAL", "FINANCIAL")),
    "user:carol": (GROUPS, LABELS),
    "user:dave": ((), ()),
}
WORDS = (
    "travel", "policy", "economy", "flight", "hotel", "reimbursement", "cap", "receipt",
    "manager", "approval", "revenue", "income", "quarter", "profit", "earnings", "forecast",
    "budget", "merger", "board", "minutes", "vote", "contract", "clause", "liability",
    "breach", "notice", "termination", "privacy", "data", "retention", "audit", "security",
    "incident", "access", "review", "vendor", "payment", "invoice",
)


def document(source_id: str, text: str, *, acl: tuple[str, ...],
             classification: str | None = None) -> SourceDocument:
    """A text document as a transport yields it."""
    body = text.encode("utf-8")
    meta = DocumentMetadata(source_id=source_id, title=source_id, acl=acl,
                            classification=classification)
    return SourceDocument("memory", source_id, sha256_hex(body), body, f"{source_id}.txt", meta)


def synthetic_documents(n: int, seed: int = 5) -> list[SourceDocument]:
    """``n`` documents of 1-3 paragraphs with seeded words, groups and labels."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        paragraphs = ["Document " + " ".join(rng.choices(WORDS, k=rng.randint(5, 40))) + "."
                      for _ in range(rng.randint(1, 3))]
        group = GROUPS[i % len(GROUPS)]
        label = LABELS[(i // len(GROUPS)) % len(LABELS)]
        docs.append(document(f"doc-{i:03d}", "\n\n".join(paragraphs),
                             acl=(f"group:{group}#member",), classification=label))
    return docs


def governed_settings(*, vectors: VectorSettings | None = None,
                      glossary: dict[str, tuple[str, ...]] | None = None) -> Settings:
    """Settings with the tuples and grants of :data:`PRINCIPALS`."""
    tuples = tuple(f"group:{g}#member@{p}" for p, (groups, _) in PRINCIPALS.items()
                   for g in groups)
    grants = {p: labels for p, (_, labels) in PRINCIPALS.items() if labels}
    settings = Settings(authz=AuthzSettings(tuples=tuples), grants=grants,
                        chunking=ChunkingSettings(max_chars=300, min_chars=0),
                        lexical=LexicalSettings(k1=1.2, b=0.75, stop_words=("@english",)),
                        vectors=vectors or VectorSettings())
    if glossary:
        settings = settings.replace(retrieval=settings.retrieval.__class__(glossary=glossary))
    return settings


def ingest(tmp_path: Path, documents: list[SourceDocument], settings: Settings) -> SQLiteStore:
    """A fresh store under ``tmp_path`` holding ``documents``."""
    store = SQLiteStore(tmp_path / "governed.db")
    summary = Ingestor(store, settings).run([StaticSource(documents)])
    assert summary.count("quarantined") == 0, summary.to_dict()
    return store


def context(store: SQLiteStore, settings: Settings, principal: str) -> AuthzContext:
    """The authz context of ``principal`` in the default tenant."""
    return StoreAuthorizer(store, settings).context_for(settings.tenant, principal)
