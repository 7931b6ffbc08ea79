"""Attacks on ledger replay (``POST /v1/ledger/{id}/verify`` and the console's replay of
any record for an auditor): a replay's first difference quotes what it compared, the
record's candidates and gate decisions among them, which are the asker's to see."""

from __future__ import annotations

import json
from pathlib import Path

from affidavit.engine.query import Engine
from affidavit.service.api.auth import Credential
from affidavit.service.console.views import answer_view, replay_record
from affidavit.store import SQLiteStore
from tests.canary.conftest import RESTRICTED_DOC
from tests.service.conftest import NOW, build_deployment

QUESTION = "What did the quarterly review of travel and hotel bookings find?"


def test_a_replay_names_to_its_viewer_only_chunks_the_viewer_may_read(tmp_path: Path) -> None:
    deployment = build_deployment(tmp_path)
    tenant = deployment.settings.tenant
    store = SQLiteStore(deployment.db)
    try:
        # The board minutes' identity is not yet approved when grace (board) asks: the
        # SIRE gate drops their chunks, and the record logs that.
        (board,) = [r for r in store.list_sire(tenant) if r.alias == RESTRICTED_DOC]
        store.set_sire_state(tenant, board.sire_id, state="PROPOSED", by="user:curator",
                             at=NOW)
        engine = Engine(store, deployment.settings, tenant=tenant)
        asked = engine.ask("user:grace", QUESTION)
        record = json.loads(store.get_ledger(tenant, asked.request_id).payload)  # type: ignore[union-attr]
        hidden = {r["chunk_id"] for r in record["retrieved"]
                  if r["label"] == "RESTRICTED"}
        assert hidden, record["retrieved"]
        # Approved afterwards: a replay's SIRE gate now keeps them, and so differs.
        store.set_sire_state(tenant, board.sire_id, state="ACTIVE", by="user:curator",
                             at=NOW)
        auditor = Credential("user:sam", tenant, "admin", "api_key", "key:attack")
        seen = answer_view(engine, auditor, asked.request_id)
        assert seen.withheld == 0, "the auditor may read every piece of evidence"
        replayed = replay_record(engine, auditor, asked.request_id)
        asker = replay_record(engine, Credential("user:grace", tenant, "admin", "api_key",
                                                 "key:attack-grace"), asked.request_id)
    finally:
        store.close()
    assert not replayed["passed"] and str(replayed["first_difference"]).startswith("gates")
    shown = json.dumps(replayed)
    assert not [c for c in hidden if c in shown], replayed
    # The asker may read those chunks: its own replay names them.
    assert any(c in json.dumps(asker) for c in hidden), asker
