"""The index package exports exactly its public surface."""

from __future__ import annotations

import affidavit.index as index


def test_all_names_exist_once() -> None:
    for name in index.__all__:
        assert hasattr(index, name), name
    assert len(set(index.__all__)) == len(index.__all__)


def test_every_public_name_is_exported() -> None:
    public = {
        name
        for name, value in vars(index).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("affidavit")
    }
    assert public <= set(index.__all__)
