"""Opening a PostgreSQL deployment: migrations as the owner, then the application role.

The DSN a user gives (``--db postgresql://...`` or ``AFFIDAVIT_DB``) is normally the schema
owner's. :func:`prepare_database` then, in one transaction under an advisory lock so that
several processes may start together:

1. applies the pending migrations;
2. creates the application role (``affidavit_app`` unless named otherwise) when it is
   missing: ``LOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT``, never the owner;
3. enables and forces row-level security with the ``tenant_isolation`` policy on every
   tenant table and grants the role its privileges.

The application role's password is derived from the owner's (HMAC-SHA256 of the role name
keyed by the owner password), so every process holding the owner DSN computes the same one
and nobody else can. When the owner DSN has no password (a local socket with ``trust`` or
``peer`` authentication) the role gets none and connects the way the owner does; where that
is not possible, pass ``app_dsn`` explicitly.

A DSN that already names a non-owner role without ``BYPASSRLS`` on a migrated database is
used as the application connection directly, so API processes need no owner credentials.
Every application connection is checked before use (:func:`check_application_role`): a
superuser, a ``BYPASSRLS`` role, the owner or a member of the owner role is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from contextlib import suppress

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from affidavit.errors import ConfigurationError, StoreError
from affidavit.store.postgres.base import Connection
from affidavit.store.postgres.migrations import (
    POLICY_NAME,
    POSTGRES_MIGRATIONS,
    TENANT_TABLES,
    policy_predicate,
    privileges_for,
)

DEFAULT_APP_ROLE = "affidavit_app"
_MIGRATION_LOCK = "affidavit:migrations"
_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def redact(dsn: str) -> str:
    """The DSN without its password, for messages and ``store.path``."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "postgresql://(unparsable DSN)"
    params.pop("password", None)
    user, db = params.get("user", ""), params.get("dbname", "")
    host, port = str(params.get("host", "")), params.get("port", "")
    if host.startswith("/"):  # a Unix socket directory
        return f"postgresql://{user}@/{db}?host={host}"
    where = f"{host}:{port}" if port else host
    return f"postgresql://{user}@{where}/{db}"


def derived_password(owner_dsn: str, role: str) -> str | None:
    """The application role's password, derived from the owner's; None if it has none."""
    owner_password = conninfo_to_dict(owner_dsn).get("password")
    if not owner_password:
        return None
    message = f"affidavit-app-role:{role}".encode()
    return hmac.new(str(owner_password).encode(), message, hashlib.sha256).hexdigest()


def app_dsn_for(owner_dsn: str, role: str) -> str:
    """The owner DSN with the application role and its derived password."""
    password = derived_password(owner_dsn, role)
    params = {k: v for k, v in conninfo_to_dict(owner_dsn).items() if k != "password"}
    params["user"] = role
    if password is not None:
        params["password"] = password
    return make_conninfo("", **params)


def connect(dsn: str, *, autocommit: bool = False) -> Connection:
    """A plain connection, with connection failures turned into a StoreError."""
    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=15)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {redact(dsn)}: {exc}") from exc


def prepare_database(dsn: str, *, app_dsn: str | None, app_role: str) -> str:
    """Migrate and secure the database named by ``dsn``; return the application DSN."""
    role = str(conninfo_to_dict(app_dsn).get("user") or "") if app_dsn else app_role
    if not _ROLE_NAME.match(role):
        raise ConfigurationError(f"invalid application role name {role!r}", key="store.db")
    with connect(dsn) as conn:
        if app_dsn is None and _is_ready_application_role(conn):
            return dsn
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                             (_MIGRATION_LOCK,))
                applied = _apply_migrations(conn)
                # An explicit application DSN names a role someone else manages.
                created = app_dsn is None and _ensure_role(conn, role,
                                                           derived_password(dsn, role))
                if applied or created or _security_incomplete(conn, role):
                    _secure_tables(conn, role)
        except psycopg.Error as exc:
            raise StoreError(f"cannot prepare {redact(dsn)} as its owner: {exc}") from exc
    return app_dsn if app_dsn is not None else app_dsn_for(dsn, app_role)


def _is_ready_application_role(conn: Connection) -> bool:
    """True when this login is already a non-owner role of a fully migrated database."""
    row = conn.execute(
        "SELECT r.rolsuper OR r.rolbypassrls, to_regclass('schema_migrations') IS NOT NULL "
        "FROM pg_roles r WHERE r.rolname = current_user").fetchone()
    conn.rollback()
    if row is None or bool(row[0]) or not bool(row[1]):
        return False
    latest = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    owns = _owned_tables(conn)
    conn.rollback()
    # The highest number, not the last listed: migrations are appended by number.
    newest = max(m.version for m in POSTGRES_MIGRATIONS)
    current = latest is not None and int(latest[0]) == newest
    return current and not owns


def _owned_tables(conn: Connection) -> list[str]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
        "AND c.relkind = 'r' AND c.relname = ANY(%s) "
        "AND pg_has_role(current_user, c.relowner, 'USAGE')", (list(TENANT_TABLES),)).fetchall()
    return [str(r[0]) for r in rows]


def _apply_migrations(conn: Connection) -> bool:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                 "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
    done = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}
    applied = False
    for migration in POSTGRES_MIGRATIONS:
        if migration.version in done:
            continue
        conn.execute(sql.SQL(migration.sql))  # fixed DDL text
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                     (migration.version, migration.name))
        applied = True
    return applied


def _ensure_role(conn: Connection, role: str,
                 password: str | None) -> bool:
    """Create the application role if missing; keep its derived password current."""
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    secret = sql.Literal(password) if password is not None else sql.SQL("NULL")
    if exists:
        if password is not None:
            # Follows a rotated owner password; an owner that may not alter roles leaves the
            # password to whoever manages the role.
            with suppress(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(role), secret))
        return False
    conn.execute(sql.SQL(
        "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOINHERIT "
        "PASSWORD {}").format(sql.Identifier(role), secret))
    return True


def _security_incomplete(conn: Connection, role: str) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
        "AND c.relkind = 'r' AND c.relname = ANY(%s) AND NOT (c.relrowsecurity "
        "AND c.relforcerowsecurity AND has_table_privilege(%s, c.oid, 'SELECT') "
        "AND EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = %s))",
        (list(TENANT_TABLES), role, POLICY_NAME)).fetchone()
    return row is None or int(row[0]) > 0


def _secure_tables(conn: Connection, role: str) -> None:
    who = sql.Identifier(role)
    predicate = sql.SQL(policy_predicate())  # fixed text
    schema = _current_schema(conn)
    usable = conn.execute("SELECT has_schema_privilege(%s, %s, 'USAGE')",
                          (role, schema)).fetchone()
    if not (usable and usable[0]):
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
            sql.Identifier(schema), who))
    conn.execute(sql.SQL("GRANT SELECT ON schema_migrations TO {}").format(who))
    for table in TENANT_TABLES:
        name = sql.Identifier(table)
        conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(name))
        conn.execute(sql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(name))
        conn.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(
            sql.Identifier(POLICY_NAME), name))
        conn.execute(sql.SQL("CREATE POLICY {} ON {} USING ({}) WITH CHECK ({})").format(
            sql.Identifier(POLICY_NAME), name, predicate, predicate))
        conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(name, who))
        conn.execute(sql.SQL("GRANT {} ON {} TO {}").format(
            sql.SQL(privileges_for(table)), name, who))


def _current_schema(conn: Connection) -> str:
    row = conn.execute("SELECT current_schema()").fetchone()
    if row is None or row[0] is None:
        raise StoreError("the connection has no current schema")
    return str(row[0])


def check_application_role(conn: Connection) -> None:
    """Refuse an application connection that row-level security would not bind."""
    row = conn.execute("SELECT rolsuper, rolbypassrls FROM pg_roles "
                       "WHERE rolname = current_user").fetchone()
    if row is None or bool(row[0]) or bool(row[1]):
        raise ConfigurationError(
            "the application connection must use a role without SUPERUSER or BYPASSRLS",
            key="store.db")
    owned = _owned_tables(conn)
    if owned:
        raise ConfigurationError(
            f"the application role owns (or inherits the owner of) {owned[0]}; "
            "row-level security needs a separate, non-owner role", key="store.db")
