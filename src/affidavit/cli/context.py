"""What every ``affidavit`` command shares: the :class:`Context` (settings and a store, opened
lazily), the exit codes and JSON printing. The command modules import this and never each
other's commands, so the command group modules stay free of cycles.

At module level it imports only the standard library and the error types (pinned by
tests/project/test_startup_imports.py).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from affidavit.cli.errors import EXIT_BUSY as EXIT_BUSY
from affidavit.cli.errors import EXIT_FAILED as EXIT_FAILED
from affidavit.cli.errors import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from affidavit.cli.errors import EXIT_OK as EXIT_OK
from affidavit.cli.errors import EXIT_QUARANTINED as EXIT_QUARANTINED
from affidavit.cli.errors import EXIT_USAGE as EXIT_USAGE
from affidavit.cli.errors import UsageError as UsageError

if TYPE_CHECKING:
    from affidavit.config.settings import Settings
    from affidavit.store import Store


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


class Context:
    """What every command needs: settings and a store, opened lazily."""

    def __init__(self, args: argparse.Namespace):
        from affidavit.config import loader as config_module

        self.args = args
        self.settings: Settings = config_module.load(
            args.config, overrides={"store.db": args.db, "tenant": args.tenant})
        self._store: Store | None = None

    @property
    def tenant(self) -> str:
        return self.settings.tenant

    def store(self, *, create: bool = False) -> Store:
        if self._store is None:
            base = Path(self.settings.source_file).parent if (
                self.settings.source_file and not self.args.db) else Path.cwd()
            from affidavit.store import open_store

            self._store = open_store(self.settings.store.db, base=base, create=create,
                                     settings=self.settings.store)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
