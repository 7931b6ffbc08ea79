"""Persistence behind one interface: SQLite (embedded default) and PostgreSQL.

The PostgreSQL backend needs the ``postgres`` extra (psycopg 3 and its pool); it is imported
only when a ``postgresql://`` location is opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from affidavit.errors import ConfigurationError

if TYPE_CHECKING:
    from affidavit.config.settings import StoreSettings
    from affidavit.store.postgres.store import PostgresStore
    from affidavit.store.protocol import (
        ChunkRecord,
        CommitResult,
        HeadInfo,
        LedgerEntry,
        LexicalHit,
        LexicalStats,
        QuarantineRecord,
        RelationTuple,
        RunRecord,
        SireRecord,
        Store,
        VersionBundle,
    )
    from affidavit.store.sqlite.store import SQLiteStore

__all__ = [
    "ChunkRecord",
    "CommitResult",
    "HeadInfo",
    "LedgerEntry",
    "LexicalHit",
    "LexicalStats",
    "PostgresStore",
    "QuarantineRecord",
    "RelationTuple",
    "RunRecord",
    "SQLiteStore",
    "SireRecord",
    "Store",
    "VersionBundle",
    "display_location",
    "open_store",
]


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(location: str, *, base: Path | None = None, create: bool = True,
               settings: StoreSettings | None = None) -> SQLiteStore | PostgresStore:
    """Open the store named by a settings value: a file path, ``sqlite:///path`` or a
    ``postgresql://`` DSN (the schema owner's; see :mod:`affidavit.store.postgres.setup`).
    ``settings`` (the ``[store]`` section) tunes PostgreSQL's vector search."""
    if location.startswith(POSTGRES_SCHEMES):
        from affidavit.config.settings import StoreSettings

        return _open_postgres(location, settings or StoreSettings())
    path_text = location.removeprefix("sqlite:///")
    path = Path(path_text)
    if path_text != ":memory:" and not path.is_absolute() and base is not None:
        path = base / path
    from affidavit.store.sqlite.store import SQLiteStore

    return SQLiteStore(path, create=create)


def display_location(location: str) -> str:
    """The store location for messages and logs: a PostgreSQL URL loses its password."""
    if not location.startswith(POSTGRES_SCHEMES):
        return location
    parts = urlsplit(location)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rpartition('@')[2]}"
    query = urlencode([(k, "***" if k == "password" else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)], safe="/*")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _postgres_class() -> type[PostgresStore]:
    try:
        from affidavit.store.postgres.store import PostgresStore
    except ImportError as exc:
        raise ConfigurationError(
            "the PostgreSQL backend needs the 'postgres' extra: "
            "pip install 'affidavit[postgres]'", key="store.db") from exc
    return PostgresStore


def _open_postgres(dsn: str, settings: StoreSettings) -> PostgresStore:
    return _postgres_class()(dsn, exact_vector_threshold=settings.exact_vector_threshold,
                             ef_search=settings.hnsw_ef_search)


# The contract's types, imported on first use: a module that needs only one small piece of
# the store package (a reference's shape, say) does not load the settings and the protocol.
_PROTOCOL_NAMES = frozenset({
    "ChunkRecord", "CommitResult", "HeadInfo", "LedgerEntry", "LexicalHit", "LexicalStats",
    "QuarantineRecord", "RelationTuple", "RunRecord", "SireRecord", "Store", "VersionBundle",
})


def __getattr__(name: str) -> object:
    # PostgresStore is imported on first use so that psycopg stays an optional extra, and
    # SQLiteStore so that importing the store's types (every command does) does not load
    # the backend and numpy before a command needs them.
    if name in _PROTOCOL_NAMES:
        from affidavit.store import protocol

        value = getattr(protocol, name)
        globals()[name] = value
        return value
    if name == "PostgresStore":
        return _postgres_class()
    if name == "SQLiteStore":
        from affidavit.store.sqlite.store import SQLiteStore

        return SQLiteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
