"""The "new enemy" case: revoke, then ingest new content, then query as the revoked
principal. Nothing of the new content, and nothing of the old, leaks on the first request,
even through an engine that served that principal a moment before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.authz import may_view_record, parse_tuple
from affidavit.config.settings import Settings
from affidavit.engine.ledger_record import redact_for
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.records import node_id_for
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

NOW = "2026-01-01T00:00:00+00:00"
OLD_CANARY = "zorblaxian"
NEW_CANARY = "quintavorous"
BOB = "user:bob"


def write(root: Path, alias: str, canary: str, version: str = "") -> None:
    path = root / alias
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nacl: [\"group:finance#member\"]\nclassification: FINANCIAL\n---\n"
        f"# Ledger notes {version}\n\nThe treasury ledger review found the {canary} "
        f"reconciliation complete {version}. The treasury ledger review is signed.\n",
        encoding="utf-8")


# What is revoked: a tuple (membership, folder or doc viewer), or FINANCIAL from a grant.
REVOCATIONS = {
    "membership": "group:finance#member@user:bob",
    "grant": "group:finance#member",
    "folder viewer": "folder:finance#viewer@user:bob",
    "doc viewer": "doc:{node}#viewer@user:bob",
}


def setup_world(tmp: Path, kind: str) -> tuple[SQLiteStore, Settings, Path, str]:
    root = tmp / "corpus"
    write(root, "finance/review.md", OLD_CANARY)
    store = SQLiteStore(tmp / "enemy.db")
    settings = Settings()
    ingest(store, settings, root)
    store.grant("default", "group:finance#member", ["FINANCIAL"], at=NOW)
    store.add_tuple("default", parse_tuple("group:finance#member@user:carol"), at=NOW)
    store.grant("default", "user:carol", ["FINANCIAL"], at=NOW)  # untouched by the revocation
    access = REVOCATIONS[kind].format(node=node_id_for("files", "finance/review.md"))
    if kind != "grant":
        store.add_tuple("default", parse_tuple(access), at=NOW)
    if kind.endswith("viewer"):
        store.grant("default", BOB, ["FINANCIAL"], at=NOW)  # the label, but not the ACL
    if kind in ("grant", "membership"):
        store.add_tuple("default", parse_tuple("group:finance#member@user:bob"), at=NOW)
    return store, settings, root, access


def ingest(store: SQLiteStore, settings: Settings, root: Path) -> None:
    Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    for record in store.list_sire("default", state="PROPOSED"):
        approve_sire(store, "default", record.sire_id, by="user:curator", at=NOW)


def revoke(store: SQLiteStore, kind: str, access: str) -> None:
    if kind == "grant":
        assert store.revoke("default", access, ["FINANCIAL"]) == 1
    else:
        assert store.remove_tuple("default", parse_tuple(access))


def everything_bob_receives(store: SQLiteStore, engine: Engine, old_record: str) -> str:
    hits = engine.search(BOB, f"treasury ledger {OLD_CANARY} {NEW_CANARY}", limit=100)
    answer = engine.ask(BOB, "What did the treasury ledger review find?")
    authz = engine.authz_context(BOB)
    views = []
    for record_id in (old_record, answer.ledger_record_id):
        entry = store.get_ledger("default", record_id)
        assert entry is not None and may_view_record(json.loads(entry.payload), authz)
        views.append(redact_for(entry, authz, store))
    return json.dumps([[h.to_dict() for h in hits], answer.to_dict(), views])


@pytest.mark.parametrize("kind", sorted(REVOCATIONS))
def test_revoke_then_ingest_then_query_leaks_nothing(tmp_path: Path, kind: str) -> None:
    store, settings, root, access = setup_world(tmp_path, kind)
    engine = Engine(store, settings)
    before = engine.ask(BOB, "What did the treasury ledger review find?")
    assert OLD_CANARY in before.answer, "bob could read the review before the revocation"
    revoke(store, kind, access)
    write(root, "finance/review.md", OLD_CANARY, version="v2")  # a new version of the same
    write(root, "finance/forecast.md", NEW_CANARY)  # and a new document beside it
    ingest(store, settings, root)
    received = everything_bob_receives(store, engine, before.ledger_record_id)
    assert OLD_CANARY not in received and NEW_CANARY not in received
    carol = Engine(store, settings).search("user:carol", f"{NEW_CANARY} treasury", limit=10)
    assert any(NEW_CANARY in h.text for h in carol), "the content exists for others"
    store.close()
