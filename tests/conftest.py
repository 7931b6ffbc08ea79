"""Shared fixtures: real SQLite files in temporary directories, parametrised by backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from affidavit.store import SQLiteStore, Store

BACKENDS = ["sqlite"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, migrated store of each backend."""
    if request.param == "sqlite":
        s = SQLiteStore(tmp_path / "contract.db")
    else:  # pragma: no cover - other backends are added with their issue
        raise NotImplementedError(request.param)
    try:
        yield s
    finally:
        s.close()
