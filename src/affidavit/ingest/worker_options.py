"""The options of ``affidavit worker``, apart from the worker itself.

The command line builds every subcommand's parser on each run; keeping these here means
that doing so does not import the worker, ingestion and the PostgreSQL backend.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerOptions:
    """How a worker claims and waits. ``once``: exit when the tenant's queue is empty."""

    batch_size: int = 8
    stale_after: float = 300.0
    poll_interval: float = 1.0
    max_attempts: int = 5
    once: bool = False


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``affidavit worker`` (shared by the CLI and ``python -m``)."""
    parser.add_argument("--once", action="store_true",
                        help="exit when the queue is empty instead of waiting for more")
    parser.add_argument("--batch", type=int, default=WorkerOptions.batch_size,
                        help="documents claimed at a time (default 8)")
    parser.add_argument("--stale-after", type=float, default=WorkerOptions.stale_after,
                        help="seconds without heartbeat before a claim is taken over "
                             "(default 300)")
    parser.add_argument("--poll", type=float, default=WorkerOptions.poll_interval,
                        help="seconds between polls of an empty queue (default 1)")
