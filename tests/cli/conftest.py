"""The command-line tests share the end-to-end fixtures: ``run`` invokes ``affidavit`` in a
temporary working directory (and replays every ledger record it wrote), and
``example_workspace`` is the bundled example ingested there."""

from tests.e2e.conftest import example_workspace, run

__all__ = ["example_workspace", "run"]
