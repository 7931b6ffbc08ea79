"""The service's scheduled leak test: ``affidavit canary run`` every
``[telemetry] canary_interval_seconds`` (0, the default, never), in the scratch tenant
``[telemetry] canary_tenant``, on the engine threads, for as long as the service runs.

Each run sets ``affidavit.leak_test.pass_ratio`` (``GET /metrics``, OTLP); a run that fails
is logged (its exception type only) and the next one is tried at the next interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from affidavit.engine.canary import run_canaries
from affidavit.errors import ConfigurationError
from affidavit.service.api.state import ServiceState

LOG = logging.getLogger("affidavit.engine.canary")


@contextlib.asynccontextmanager
async def canary_schedule(state: ServiceState) -> AsyncIterator[None]:
    """Run the leak test on a schedule while the ``async with`` body runs."""
    interval = state.settings.telemetry.canary_interval_seconds
    if interval <= 0:
        yield
        return
    if state.settings.telemetry.canary_tenant == state.settings.tenant:
        raise ConfigurationError("must not be the tenant in use", key="telemetry.canary_tenant")
    task = asyncio.create_task(_every(state, interval))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _every(state: ServiceState, interval: float) -> None:
    loop = asyncio.get_running_loop()
    tenant = state.settings.telemetry.canary_tenant
    while True:
        try:
            report = await loop.run_in_executor(
                state.executor, lambda: run_canaries(state.store, state.settings,
                                                     tenant=tenant))
            LOG.info("canary run", extra={"count": len(report.probes),
                                          "status": int(report.ok)})
        # Whatever one run raises, the schedule goes on: the metric keeps its last value.
        except Exception as exc:
            LOG.warning("canary run failed", extra={"stage": type(exc).__name__})
        await asyncio.sleep(interval)
