"""The policy-event table on every backend: a per-tenant hash chain, append-only."""

from __future__ import annotations

import json
import sqlite3

import pytest

from affidavit.audit import GRANT_ADD, GRANT_REVOKE, record_policy_event, verify_policy_chain
from affidavit.audit.chain import GENESIS_HASH
from affidavit.errors import InputRejected
from affidavit.store import Store

T, OTHER = "tenant-a", "tenant-b"


def test_policy_events_chain_per_tenant_with_actor_and_before_after(store: Store) -> None:
    assert store.policy_head(T) == (0, GENESIS_HASH)
    first = record_policy_event(store, T, GRANT_ADD, "user:admin", None,
                                {"subject": "user:bob", "labels": ["PII"]})
    second = record_policy_event(store, T, GRANT_REVOKE, "os:ops",
                                 {"subject": "user:bob", "labels": ["PII"]},
                                 {"subject": "user:bob", "labels": []})
    record_policy_event(store, OTHER, GRANT_ADD, "user:root", None, {"x": 1})
    events = list(store.iter_policy_events(T))
    assert [(e.seq, e.kind, e.actor) for e in events] == [
        (1, GRANT_ADD, "user:admin"), (2, GRANT_REVOKE, "os:ops")]
    assert events[1].prev_hash == first.event_hash
    assert json.loads(events[1].before_json) == {"subject": "user:bob", "labels": ["PII"]}
    assert store.policy_head(T) == (2, second.event_hash)
    assert [e.seq for e in store.iter_policy_events(T, after_seq=1)] == [2]
    assert verify_policy_chain(events, tenant=T).ok
    # Another tenant's chain is its own, and does not verify as this one's.
    assert [e.seq for e in store.iter_policy_events(OTHER)] == [1]
    assert not verify_policy_chain(store.iter_policy_events(OTHER), tenant=T).ok


def test_a_policy_event_needs_an_actor_and_a_known_kind(store: Store) -> None:
    with pytest.raises(InputRejected, match="actor"):
        record_policy_event(store, T, GRANT_ADD, "  ", None, {})
    with pytest.raises(InputRejected, match="kind"):
        record_policy_event(store, T, "grant.forget", "user:a", None, {})
    assert list(store.iter_policy_events(T)) == []


def test_sqlite_refuses_to_edit_or_delete_a_policy_event(store: Store) -> None:
    if store.backend != "sqlite":
        pytest.skip("the PostgreSQL grants and triggers are tested in tests/postgres")
    record_policy_event(store, T, GRANT_ADD, "user:a", None, {"labels": ["PII"]})
    with sqlite3.connect(str(store.path)) as conn:  # type: ignore[attr-defined]
        for statement in ("UPDATE policy_events SET actor = 'user:mallory'",
                          "DELETE FROM policy_events"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                conn.execute(statement)


def test_a_quarantine_release_is_an_event_naming_who_released(store: Store) -> None:
    from affidavit.audit import changes
    from affidavit.store import QuarantineRecord

    store.ensure_tenant(T)
    store.record_quarantine(T, QuarantineRecord("run-1", "a.md", "a", "TOO_LARGE", "big",
                                                "2026-01-01T00:00:00+00:00"))
    assert changes.release_quarantine(store, T, "run-1", "a.md", actor="user:rita")
    assert not changes.release_quarantine(store, T, "run-1", "a.md", actor="user:rita")
    (event,) = store.iter_policy_events(T)
    assert (event.kind, event.actor) == ("quarantine.release", "user:rita")
    assert json.loads(event.after_json) == {"run_id": "run-1", "alias": "a.md",
                                            "released": True}
