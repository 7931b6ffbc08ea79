"""A ledger record replays what it cited after the document was edited, on both backends:
the unchanged chunks it cited kept their ids (the head holds them now), and the changed
ones are read from the previous version's rows, which an edit never removes."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.store.test_store_chunk_ids_across_edits import EDITED, SECTIONS, SETTINGS, ingest, port

from affidavit.engine.query import Engine
from affidavit.engine.replay import replay
from affidavit.identity.lifecycle import approve_sires
from affidavit.ledger.contents import evidence_chunk_ids
from affidavit.store.protocol import Store

TENANT = SETTINGS.tenant


def test_records_of_the_previous_version_replay_after_an_edit(store: Store) -> None:
    before = ingest(store, port(SECTIONS))
    approve_sires(store, TENANT, [r.sire_id for r in store.list_sire(TENANT)],
                  by="user:curator", at=datetime.now(UTC).isoformat())
    engine = Engine(store, SETTINGS)
    unchanged = engine.ask("user:alice", "When does the yard open and close?")
    changed = engine.ask("user:alice", "Who clears the containers waiting on the quay?")
    moved = engine.ask("user:alice", "When are the pallets in the shed counted?")
    cited = {name: evidence_chunk_ids(_payload(store, result.ledger_record_id))
             for name, result in (("unchanged", unchanged), ("changed", changed),
                                  ("moved", moved))}
    assert before[0].chunk_id in cited["unchanged"]
    assert before[1].chunk_id in cited["changed"]
    assert before[2].chunk_id in cited["moved"]

    after = ingest(store, port(EDITED))
    assert after[0].chunk_id == before[0].chunk_id != after[1].chunk_id
    # The shed section moved (its locator names new offsets) under the same id.
    assert after[2].chunk_id == before[2].chunk_id and after[2].locator != before[2].locator

    for result in (unchanged, changed, moved):
        report = replay(store, SETTINGS, result.ledger_record_id, tenant=TENANT)
        assert report.matches, report.first_difference
        assert "prompt_hash" in report.checked


def _payload(store: Store, record_id: str) -> dict[str, object]:
    import json

    entry = store.get_ledger(TENANT, record_id)
    assert entry is not None
    payload: dict[str, object] = json.loads(entry.payload)
    return payload
