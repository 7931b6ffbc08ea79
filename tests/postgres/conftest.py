"""Fixtures of the PostgreSQL-only tests: fresh databases on the session's server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from affidavit.records import Chunk, ParagraphLabel, RawBlob, SireTuple, sha256_hex
from affidavit.store import VersionBundle
from tests.pg_fixture import PgCluster

NOW = "2026-01-01T00:00:00+00:00"


@pytest.fixture
def owner_dsn(pg_cluster: PgCluster) -> str:
    """The owner DSN of a fresh, migrated database."""
    return pg_cluster.new_database("pgtest")


@pytest.fixture
def pg_store(owner_dsn: str) -> Iterator[object]:
    from affidavit.store.postgres.store import PostgresStore

    store = PostgresStore(owner_dsn)
    try:
        yield store
    finally:
        store.close()


def make_bundle(tenant: str, node: str, version: str, n_chunks: int, *,
                acl: tuple[str, ...] = ("group:staff#member",), label: str = "INTERNAL",
                terms: tuple[str, ...] = ("alpha",)) -> VersionBundle:
    """A version of ``n_chunks`` chunks with distinct 32-character ids."""
    raw = f"{tenant}/{node}/{version}".encode()
    chunks = tuple(
        Chunk(chunk_id=sha256_hex(f"{tenant}/{version}/{i}".encode())[:32], node_id=node,
              version_id=version, ordinal=i, start=0, end=4, text=f"{' '.join(terms)} {i}",
              label=label, heading_path=("H",), locator=f"{node} | chunk {i}", witness="w")
        for i in range(n_chunks))
    return VersionBundle(
        tenant=tenant, node_id=node, version_id=version, fingerprint="fp-" + version,
        blob=RawBlob(sha256_hex(raw), raw, "files", node, "rev", NOW), alias=f"{node}.md",
        title=f"Title {node}", metadata_json="{}", declared_label=None,
        normalized_text="text",
        paragraph_labels=((ParagraphLabel(0, label, ("default",)), 0, 4),),
        chunks=chunks,
        postings={c.chunk_id: tuple((t, 1) for t in sorted(terms)) for c in chunks},
        chunk_lengths={c.chunk_id: len(terms) for c in chunks},
        acl_tokens=acl, sire=SireTuple("s", ("a",), (), ()), witness="w", run_id="run-1",
        created_at=NOW)


def edited_keeping_chunks(first: VersionBundle, version: str,
                          acl: tuple[str, ...]) -> VersionBundle:
    """A new version of ``first``'s node holding the same chunk ids (an edit that left the
    body unchanged), under its own ACL."""
    bundle = make_bundle(first.tenant, first.node_id, version, len(first.chunks), acl=acl)
    return replace(bundle, chunks=tuple(replace(c, version_id=version) for c in first.chunks),
                   postings=first.postings, chunk_lengths=first.chunk_lengths)


def database_owned_by(cluster: PgCluster, role: str, database: str) -> tuple[str, str]:
    """(superuser DSN, owner DSN) of a new, unmigrated database owned by an ordinary role,
    as in production: migrations then run under the row-level security such an owner has."""
    import psycopg

    cluster.admin(f"CREATE ROLE {role} LOGIN CREATEROLE")
    cluster.admin(f'CREATE DATABASE "{database}" OWNER {role}')
    admin_dsn = cluster.dsn(database)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return admin_dsn, psycopg.conninfo.make_conninfo(admin_dsn, user=role)


def run_script(dsn: str, script: str) -> None:
    """Run ``;``-separated statements one by one, each committed (an undo of a migration)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in script.strip().split(";\n"):
            conn.execute(statement.strip().rstrip(";"))


def row_security_forced(conn: object, *tables: str) -> list[tuple[str, bool]]:
    """(table, row-level security enabled and forced) of ``tables``, sorted by name."""
    return conn.execute(  # type: ignore[attr-defined, no-any-return]
        "SELECT relname, relrowsecurity AND relforcerowsecurity FROM pg_class "
        "WHERE relname = ANY(%s) ORDER BY relname", (list(tables),)).fetchall()


def named_and_head_versions(conn: object, table: str) -> list[tuple[str, str | None]]:
    """(version a row of ``table`` names, its chunk's head version) for every row."""
    return conn.execute(  # type: ignore[attr-defined, no-any-return]
        f"SELECT t.version_id, c.version_id FROM {table} t LEFT JOIN chunks c "
        "ON c.tenant_id = t.tenant_id AND c.chunk_id = t.chunk_id AND c.is_head").fetchall()
