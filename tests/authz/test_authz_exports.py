"""The public surface of affidavit.authz is exactly what __all__ lists."""

from __future__ import annotations

import types

import affidavit.authz


def test_all_names_exist_and_public_names_are_exported() -> None:
    exported = set(affidavit.authz.__all__)
    assert all(hasattr(affidavit.authz, name) for name in exported)
    public = {name for name, value in vars(affidavit.authz).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert public == exported
