"""Persistence behind one interface: SQLite (embedded default) and, later, PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from affidavit.errors import ConfigurationError
from affidavit.store.base import (
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
from affidavit.store.sqlite import SQLiteStore

__all__ = [
    "ChunkRecord",
    "CommitResult",
    "HeadInfo",
    "LedgerEntry",
    "LexicalHit",
    "LexicalStats",
    "QuarantineRecord",
    "RelationTuple",
    "RunRecord",
    "SQLiteStore",
    "SireRecord",
    "Store",
    "VersionBundle",
    "open_store",
]


def open_store(location: str, *, base: Path | None = None, create: bool = True) -> SQLiteStore:
    """Open the store named by a settings value: a file path or ``sqlite:///path``."""
    if location.startswith(("postgresql://", "postgres://")):
        raise ConfigurationError(
            "the PostgreSQL backend is not available in this version", key="store.db")
    path_text = location.removeprefix("sqlite:///")
    path = Path(path_text)
    if path_text != ":memory:" and not path.is_absolute() and base is not None:
        path = base / path
    return SQLiteStore(path, create=create)
