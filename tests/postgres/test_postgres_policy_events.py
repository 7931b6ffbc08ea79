"""Policy events on PostgreSQL: insert-only for the application role, under row-level
security, refused to everyone by triggers; and migration 11 is applied and counted ready."""

from __future__ import annotations

import psycopg
import pytest

from affidavit.audit import GRANT_ADD, record_policy_event, verify_policy_chain
from affidavit.store.postgres.base import TENANT_SETTING
from affidavit.store.postgres.setup import DEFAULT_APP_ROLE, app_dsn_for
from affidavit.store.postgres.store import PostgresStore

A, B = "tenant-a", "tenant-b"


def test_policy_events_are_insert_only_and_tenant_scoped(owner_dsn: str) -> None:
    store = PostgresStore(owner_dsn)
    try:
        record_policy_event(store, A, GRANT_ADD, "user:admin", None, {"labels": ["PII"]})
        record_policy_event(store, B, GRANT_ADD, "user:root", None, {"labels": ["SECRET"]})
        assert verify_policy_chain(store.iter_policy_events(A), tenant=A).ok
    finally:
        store.close()
    app_dsn = app_dsn_for(owner_dsn, DEFAULT_APP_ROLE)
    # The application DSN alone opens the database: migration 11 counts as the newest.
    reopened = PostgresStore(app_dsn)
    try:
        assert [e.actor for e in reopened.iter_policy_events(A)] == ["user:admin"]
    finally:
        reopened.close()
    with psycopg.connect(app_dsn) as conn:
        conn.execute("SELECT set_config(%s, %s, false)", (TENANT_SETTING, A))
        seen = {r[0] for r in conn.execute("SELECT tenant_id FROM policy_events")}
        assert seen == {A}
        for statement in ("UPDATE policy_events SET actor = 'user:mallory'",
                          "DELETE FROM policy_events"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
            conn.execute("SELECT set_config(%s, %s, false)", (TENANT_SETTING, A))
    with psycopg.connect(owner_dsn) as conn:
        for statement in ("UPDATE policy_events SET actor = 'x'", "DELETE FROM policy_events",
                          "TRUNCATE policy_events"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(statement)
            conn.rollback()
