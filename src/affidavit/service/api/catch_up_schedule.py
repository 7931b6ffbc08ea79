"""The service catches up after a policy change in the background: every few seconds, on
the engine threads, it checks a bounded batch of the served tenant's documents derived under
an earlier serving key and marks current those the change does not affect
(:mod:`affidavit.ingest.catch_up`), so they serve again without anyone running
``affidavit requalify``. The affected ones stay withheld; each is checked once per serving
key, not at every pass. A pass that fails is logged (its exception type only) and the next
one is tried after the interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from affidavit.ingest.catch_up import CatchUp
from affidavit.service.api.state import ServiceState

LOG = logging.getLogger("affidavit.ingest.catch_up")

INTERVAL_SECONDS = 5.0
"""How often the service looks for documents a policy change left stale."""
BATCH = 200
"""How many stale documents one pass checks: a pass holds the ingestion lock, so it stays
short; the next pass takes the next batch."""


@contextlib.asynccontextmanager
async def catch_up_schedule(state: ServiceState, *,
                            interval: float = INTERVAL_SECONDS) -> AsyncIterator[None]:
    """Catch up in the background while the ``async with`` body runs."""
    task = asyncio.create_task(_every(state, interval))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _one_pass(state: ServiceState, skip: frozenset[str]) -> CatchUp:
    return state.engine_for(state.settings.tenant).catch_up(limit=BATCH, skip=skip)


async def _every(state: ServiceState, interval: float) -> None:
    loop = asyncio.get_running_loop()
    affected: set[str] = set()  # version ids found affected: withheld until requalified
    while True:
        try:
            report = await loop.run_in_executor(state.executor, _one_pass, state,
                                                frozenset(affected))
            affected.update(report.affected)
            if report.restamped or report.affected:
                LOG.info("catch up", extra={"count": len(report.restamped),
                                            "status": len(report.affected)})
            if report.remaining and not report.busy:
                continue  # more to check: the next batch at once
        # Whatever one pass raises, the schedule goes on: stale documents stay withheld.
        except Exception as exc:
            LOG.warning("catch up failed", extra={"stage": type(exc).__name__})
        await asyncio.sleep(interval)
