"""Tenant isolation by row-level security, shown from the application role's side.

The store keeps ``WHERE tenant_id = ...`` in every statement; these tests go around it and
talk to the database directly as the application role, so what they show is the policy.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from affidavit.errors import ConfigurationError
from affidavit.records import DocumentMetadata, Reference, SourceDocument
from affidavit.store import QuarantineRecord, RelationTuple
from affidavit.store.postgres.migrations import TENANT_SETTING, TENANT_TABLES
from affidavit.store.postgres.queue import enqueue_documents
from affidavit.store.postgres.setup import DEFAULT_APP_ROLE, app_dsn_for
from affidavit.store.postgres.store import PostgresStore
from affidavit.store.protocol import KEEP, ApiKeyRecord, IdentityResolution
from tests.pg_fixture import PgCluster
from tests.postgres.conftest import NOW, make_bundle

pytestmark = pytest.mark.postgres

A, B = "tenant-a", "tenant-b"


def populate(store: PostgresStore, tenant: str) -> None:
    """At least one row of ``tenant`` in every tenant table."""
    bundle = make_bundle(tenant, "n1", f"v-{tenant}", 3)
    store.commit_version(bundle)
    store.add_tuple(tenant, RelationTuple("group:staff", "member", "user:x", "cli"), at=NOW)
    store.grant(tenant, "group:staff#member", ["PII"], at=NOW)
    store.append_ledger(tenant, record_id=f"r-{tenant}", request_id="q", created_at=NOW,
                        payload="{}", references=[Reference(
                            f"ref-{tenant}", "Citation", "ledger", f"r-{tenant}",
                            bundle.node_id, bundle.chunks[0].chunk_id, "Chunk", "{}", "label",
                            "reason", "PII", "user:x", NOW)])
    store.start_run(tenant, f"run-{tenant}", at=NOW, params_json="{}")
    store.record_quarantine(tenant, QuarantineRecord(f"run-{tenant}", "bad.md", "bad",
                                                     "EMPTY_DOCUMENT", "empty", NOW))
    store.replace_listing(tenant, "local:/x", ["n1"])
    store.put_vectors(tenant, "m", {c.chunk_id: [1.0, float(i)]
                                    for i, c in enumerate(bundle.chunks)})
    document = SourceDocument("files", "doc", "rev", b"# hello", "doc.md", DocumentMetadata())
    enqueue_documents(store, tenant, f"queued-{tenant}", [document], params_json="{}")
    store.resolve_identity(tenant, IdentityResolution(
        bundle.node_id, "n1", "copy.md", str(store.identity_owner(tenant, bundle.node_id)),
        KEEP, "ops", NOW))
    store.append_policy_event(tenant, kind="grant.add", actor="ops", at=NOW,
                              before_json="null", after_json="{}")
    store.add_api_key(tenant, ApiKeyRecord(f"key-{tenant}", "user:x", "reader", "salt", "hash",
                                           NOW))


@pytest.fixture(scope="module")
def rls_dsn(pg_cluster: PgCluster) -> str:
    return pg_cluster.new_database("rls")


@pytest.fixture(scope="module")
def two_tenants(rls_dsn: str) -> Iterator[tuple[str, PostgresStore]]:
    """Both tenants' rows in every table; a store whose pool holds one connection."""
    store = PostgresStore(rls_dsn, pool_size=1)
    populate(store, A)
    populate(store, B)
    try:
        yield app_dsn_for(rls_dsn, DEFAULT_APP_ROLE), store
    finally:
        store.close()


def schema_tables(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                        "ORDER BY tablename").fetchall()
    return [str(r[0]) for r in rows]


def tenants_seen(conn: psycopg.Connection, table: str) -> set[str]:
    """Every tenant id a hand-written SELECT * of ``table`` returns."""
    cur = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table)))
    columns = [d.name for d in cur.description or ()]
    rows = cur.fetchall()
    if "tenant_id" not in columns:
        return set()
    index = columns.index("tenant_id")
    return {str(r[index]) for r in rows}


def test_every_table_with_tenant_rows_is_under_forced_rls(two_tenants: tuple) -> None:
    app_dsn, _ = two_tenants
    with psycopg.connect(app_dsn) as conn:
        with_tenant = {str(r[0]) for r in conn.execute(
            "SELECT table_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND column_name = 'tenant_id'")}
        assert with_tenant == set(TENANT_TABLES)
        flags = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            "pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_class c "
            "WHERE c.relname = ANY(%s) AND c.relkind = 'r'", (list(TENANT_TABLES),)).fetchall()
        assert len(flags) == len(TENANT_TABLES)
        assert all(r[1] and r[2] and not r[3] for r in flags), flags
        role = conn.execute("SELECT rolsuper, rolbypassrls FROM pg_roles "
                            "WHERE rolname = current_user").fetchone()
        assert role == (False, False)


def test_select_star_as_tenant_a_returns_no_row_of_tenant_b(two_tenants: tuple) -> None:
    app_dsn, _ = two_tenants
    with psycopg.connect(app_dsn) as conn:
        conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, A))
        tables = schema_tables(conn)
        assert set(TENANT_TABLES) <= set(tables)
        for table in tables:
            seen = tenants_seen(conn, table)
            assert B not in seen, table
            if table in TENANT_TABLES:
                assert seen == {A}, f"{table} holds rows of A that A cannot see"


def test_without_a_tenant_nothing_is_visible(two_tenants: tuple) -> None:
    app_dsn, _ = two_tenants
    with psycopg.connect(app_dsn) as conn:
        for table in TENANT_TABLES:
            assert tenants_seen(conn, table) == set(), table
        conn.execute("SELECT set_config(%s, '', true)", (TENANT_SETTING,))
        assert tenants_seen(conn, "chunks") == set()


def test_the_application_role_cannot_switch_rls_off_or_become_the_owner(
        two_tenants: tuple) -> None:
    app_dsn, _ = two_tenants
    with psycopg.connect(app_dsn, autocommit=True) as conn:
        conn.execute("SET row_security = off")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM chunks")  # refused rather than unfiltered
        conn.execute("RESET row_security")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SET ROLE postgres")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("ALTER TABLE chunks DISABLE ROW LEVEL SECURITY")


def test_writes_into_another_tenant_are_refused(two_tenants: tuple) -> None:
    app_dsn, _ = two_tenants
    with psycopg.connect(app_dsn) as conn:
        conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, A))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO label_grants VALUES (%s, 'user:x', 'SECRET', 'now')",
                         (B,))
        conn.rollback()
        conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, A))
        changed = conn.execute("UPDATE chunks SET text = 'x' WHERE tenant_id = %s",
                               (B,)).rowcount
        assert changed == 0


def test_a_pooled_connection_reused_for_b_sees_none_of_a(two_tenants: tuple) -> None:
    _, store = two_tenants  # pool of one connection: B gets the very connection A used
    with store.transaction(A) as conn:
        pid_a = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert tenants_seen(conn, "chunks") == {A}
        # Even a session-level setting (a bug) must not outlive the checkout.
        conn.execute("SELECT set_config(%s, %s, false)", (TENANT_SETTING, A))
    with store.pool.connection() as conn:
        left = conn.execute("SELECT current_setting(%s, true)", (TENANT_SETTING,)).fetchone()
        assert left is not None and left[0] in (None, "")
        assert tenants_seen(conn, "chunks") == set()
    with store.transaction(B) as conn:
        assert conn.execute("SELECT pg_backend_pid()").fetchone() == pid_a
        for table in TENANT_TABLES:
            assert A not in tenants_seen(conn, table), table


def test_the_ledger_is_append_only_for_everyone(two_tenants: tuple, rls_dsn: str) -> None:
    app_dsn, _ = two_tenants
    with psycopg.connect(app_dsn) as conn:
        conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, A))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE ledger SET payload = '{\"forged\":1}'")
    with psycopg.connect(rls_dsn) as conn:
        for statement in ("UPDATE ledger SET payload = 'x'", "DELETE FROM ledger",
                          "TRUNCATE ledger"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(statement)
            conn.rollback()


def test_an_application_dsn_that_bypasses_rls_is_refused(owner_dsn: str) -> None:
    with pytest.raises(ConfigurationError, match="BYPASSRLS"):
        PostgresStore(owner_dsn, app_dsn=owner_dsn)


def test_the_application_dsn_alone_opens_a_migrated_database(two_tenants: tuple) -> None:
    app_dsn, _ = two_tenants
    store = PostgresStore(app_dsn)  # no owner credentials in this process
    try:
        assert store.lexical_stats(A).n_chunks == 3
        assert store.get_ledger(B, f"r-{A}") is None
    finally:
        store.close()
