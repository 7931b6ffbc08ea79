"""One ingestion run per tenant at a time: the store's lock, waited for or refused.

Two runs of one tenant derive the same document versions at once; before this lock, each
then failed on the versions the other had just written and quarantined hundreds of good
documents. A run now holds its tenant's lock (:meth:`~affidavit.store.protocol.Store.
try_ingest_lock`) from before it is recorded until it is finished. A second run waits for
it up to ``wait_seconds`` (saying so once through ``on_wait``) and then refuses to start
with :class:`~affidavit.errors.RunInProgress`, naming the run that holds the lock.

The lock belongs to the holder's open file (SQLite) or database session (PostgreSQL), so a
killed run releases it as it dies: nothing stale is left to time out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from affidavit.errors import RunInProgress
from affidavit.store.protocol import IngestLock, Store

POLL_SECONDS = 0.2


@contextmanager
def holding_ingest_lock(store: Store, tenant: str, *, wait_seconds: float = 0.0,
                        on_wait: Callable[[str], None] | None = None,
                        sleep: Callable[[float], None] = time.sleep) -> Iterator[None]:
    """Within it, this process holds ``tenant``'s ingestion lock."""
    lock = _acquire(store, tenant, wait_seconds, on_wait, sleep)
    try:
        yield
    finally:
        lock.release()


def _acquire(store: Store, tenant: str, wait_seconds: float,
             on_wait: Callable[[str], None] | None,
             sleep: Callable[[float], None]) -> IngestLock:
    deadline = time.monotonic() + max(0.0, wait_seconds)
    told = False
    while True:
        lock = store.try_ingest_lock(tenant)
        if lock is not None:
            return lock
        busy = f"another ingestion run of tenant {tenant!r} is under way{_holder(store, tenant)}"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            waited = f" (waited {wait_seconds:g} s)" if wait_seconds > 0 else ""
            raise RunInProgress(f"{busy}{waited}; this run did not start")
        if not told and on_wait is not None:
            on_wait(f"{busy}; waiting up to {wait_seconds:g} s for it to finish")
            told = True
        sleep(min(POLL_SECONDS, remaining))


def _holder(store: Store, tenant: str) -> str:
    """`` (run-…, pid N on HOST, started …)`` for the newest run still marked running."""
    for run in store.list_runs(tenant, limit=20):
        if run.status != "RUNNING":
            continue
        params = json.loads(run.params_json or "{}")
        if params.get("queued"):
            continue  # a queue's run is drained by workers, not held by one process
        return (f" ({run.run_id}, pid {params.get('pid')} on {params.get('host')}, "
                f"started {run.started_at})")
    return ""
