"""The trail is the policy: a tuple or grant written straight into its table, with no
policy event behind it, grants nothing, on both backends; and the policy, reference and key
tables are under PostgreSQL's forced row-level security.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import psycopg
import pytest
from tests.postgres.test_postgres_rls import A, B, populate

from affidavit.authz.context import StoreAuthorizer
from affidavit.authz.tuples import parse_tuple
from affidavit.config.settings import Settings
from affidavit.errors import AuthenticationError
from affidavit.store.postgres.migrations import TENANT_SETTING
from affidavit.store.protocol import Store
from affidavit.store.sqlite.store import SQLiteStore

T = "default"
MALLORY = "user:mallory"
NOW = "2026-01-01T00:00:00+00:00"


def insert_directly(store: Store, sql: str, params: tuple[object, ...]) -> None:
    """Write a row the way someone holding the database would: past the store's methods."""
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        with conn:
            conn.execute(sql, params)
        conn.close()
        return
    with store.transaction(T) as pg:  # type: ignore[attr-defined]
        pg.execute(sql.replace("?", "%s"), params)


def test_grant_inserted_without_event_grants_nothing(store: Store) -> None:
    store.ensure_tenant(T)
    authorizer = StoreAuthorizer(store, Settings())
    store.grant(T, "user:alice", ["PII"], at=NOW)  # through the store: an event behind it
    store.grant(T, MALLORY, ["FINANCIAL"], at=NOW)
    store.revoke(T, MALLORY, ["FINANCIAL"])
    for sql, params in (
            ("INSERT INTO label_grants VALUES (?, ?, ?, ?)", (T, MALLORY, "SECRET", NOW)),
            # a revoked grant put back: its old grant event is still in the trail
            ("INSERT INTO label_grants VALUES (?, ?, ?, ?)", (T, MALLORY, "FINANCIAL", NOW)),
            ("INSERT INTO relation_tuples VALUES (?, ?, ?, ?, ?, ?)",
             (T, "group:hr", "member", MALLORY, "cli", NOW))):
        insert_directly(store, sql, params)
    assert {"SECRET", "FINANCIAL"} <= set(store.list_grants(T)[MALLORY])
    mallory = authorizer.context_for(T, MALLORY)
    assert "SECRET" not in mallory.granted_labels
    assert "FINANCIAL" not in mallory.granted_labels
    assert "group:hr#member" not in mallory.tokens
    assert "PII" in authorizer.context_for(T, "user:alice").granted_labels
    # The same rows made through the store (each with its event) do take effect.
    store.add_tuple(T, parse_tuple("group:hr#member@user:bob"), at=NOW, actor="user:admin")
    store.grant(T, "group:hr#member", ["PII"], at=NOW, actor="user:admin")
    bob = authorizer.context_for(T, "user:bob")
    assert "group:hr#member" in bob.tokens and "PII" in bob.granted_labels
    assert [e.actor for e in store.iter_policy_events(T)][-2:] == ["user:admin"] * 2


def test_api_key_inserted_without_event_authenticates_nobody(store: Store) -> None:
    from affidavit.authz.keys import issue_key, resolve_key

    issued = issue_key(store, T, "user:alice", role="reader")
    assert resolve_key(store, issued.key)[1].principal == "user:alice"
    # Alice's row copied under a new key id and made an admin's: the same secret matches it.
    insert_directly(store, "INSERT INTO api_keys SELECT tenant_id, 'forged', 'user:mallory', "
                    "'admin', salt, secret_hash, created_at, expires_at, revoked_at "
                    "FROM api_keys WHERE key_id = ?", (issued.record.key_id,))
    prefix, tenant, _, secret = issued.key.split(".")
    with pytest.raises(AuthenticationError):
        resolve_key(store, ".".join((prefix, tenant, "forged", secret)))
    # A revoked key switched back on in its row stays revoked.
    assert store.revoke_api_key(T, issued.record.key_id, at=NOW, actor="user:admin")
    insert_directly(store, "UPDATE api_keys SET revoked_at = NULL WHERE key_id = ?",
                    (issued.record.key_id,))
    with pytest.raises(AuthenticationError):
        resolve_key(store, issued.key)


POLICY_REFERENCE_KEY_TABLES = ("relation_tuples", "label_grants", "policy_events",
                               "policy_generations", "refs", "api_keys")


@pytest.fixture(scope="module")
def two_tenant_app_dsn(pg_cluster: object) -> Iterator[str]:
    from affidavit.store.postgres.setup import DEFAULT_APP_ROLE, app_dsn_for
    from affidavit.store.postgres.store import PostgresStore

    owner = pg_cluster.new_database("policyrls")  # type: ignore[attr-defined]
    store = PostgresStore(owner, pool_size=1)
    try:
        populate(store, A)
        populate(store, B)
        yield app_dsn_for(owner, DEFAULT_APP_ROLE)
    finally:
        store.close()


@pytest.mark.postgres
def test_postgres_rls_on_policy_reference_and_key_tables(two_tenant_app_dsn: str) -> None:
    with psycopg.connect(two_tenant_app_dsn) as conn:
        flags = dict(conn.execute(
            "SELECT relname, relrowsecurity AND relforcerowsecurity FROM pg_class "
            "WHERE relkind = 'r' AND relname = ANY(%s)",
            (list(POLICY_REFERENCE_KEY_TABLES),)).fetchall())
        assert flags == dict.fromkeys(POLICY_REFERENCE_KEY_TABLES, True)
        for table in POLICY_REFERENCE_KEY_TABLES:
            conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, A))
            seen = {r[0] for r in conn.execute(f"SELECT tenant_id FROM {table}")}
            assert seen == {A}, table
            if table != "policy_events":  # append-only: no UPDATE or DELETE at all
                assert conn.execute(f"UPDATE {table} SET tenant_id = tenant_id "
                                    "WHERE tenant_id = %s", (B,)).rowcount == 0, table
                assert conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s",
                                    (B,)).rowcount == 0, table
            # A's own row copied under B's name: refused by the policy's WITH CHECK.
            conn.execute(f"CREATE TEMPORARY TABLE copied ON COMMIT DROP AS "
                         f"SELECT * FROM {table} LIMIT 1")
            conn.execute("UPDATE copied SET tenant_id = %s", (B,))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"INSERT INTO {table} SELECT * FROM copied")
            conn.rollback()
        conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, B))
        for table in POLICY_REFERENCE_KEY_TABLES:
            count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            assert count is not None and count[0] > 0, f"B's {table} rows were touched"
