"""A small real corpus for reference tests: documents on disk, ingested into a real store,
SIRE approved, labels granted through the store."""

from __future__ import annotations

from pathlib import Path

from affidavit.config import Settings
from affidavit.ingest import Ingestor
from affidavit.query import Engine
from affidavit.records import AuthzContext
from affidavit.sources import LocalFolderSource
from affidavit.store.base import Store

NOW = "2026-01-01T00:00:00+00:00"
FINANCE_READER = "user:fiona"
PLAIN_READER = "user:alice"


def write_doc(root: Path, name: str, body: str, *, label: str = "PUBLIC",
              acl: str = "*") -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(f"---\nacl: [\"{acl}\"]\nclassification: {label}\n---\n"
                             f"# {name}\n\n{body}\n", encoding="utf-8")


def ingest(store: Store, root: Path, settings: Settings | None = None) -> None:
    settings = settings or Settings()
    Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    proposed = [r.sire_id for r in store.list_sire(settings.tenant, state="PROPOSED")]
    if proposed:
        store.activate_sire(settings.tenant, proposed, by="user:reviewer", at=NOW)
    store.grant(settings.tenant, FINANCE_READER, ["FINANCIAL", "INTERNAL"], at=NOW)
    store.grant(settings.tenant, PLAIN_READER, ["INTERNAL"], at=NOW)


def node_of(store: Store, alias: str, tenant: str = "default") -> str:
    for head in store.heads(tenant):
        if head.alias == alias:
            return head.node_id
    raise AssertionError(f"no document {alias}")


def context(engine: Engine, principal: str) -> AuthzContext:
    return engine.authz_context(principal)
