"""The service runs the leak test on a schedule: canaries appear in the scratch tenant and
the pass ratio reaches ``/metrics``."""

from __future__ import annotations

import time

import pytest

from affidavit.observability.metrics import record_leak_test
from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from tests.service.conftest import build_deployment

PASSING = "\naffidavit_leak_test_pass_ratio 1.0\n"


def test_the_service_runs_the_leak_test_on_its_schedule(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    deployment = build_deployment(tmp_path_factory.mktemp("canary"),
                                  "\n[telemetry]\ncanary_interval_seconds = 0.5\n")
    store = SQLiteStore(deployment.db)
    try:
        admin = issue_key(store, deployment.settings.tenant, "user:ada", role="admin").key
        assert store.heads("canary-scratch") == []
    finally:
        store.close()
    record_leak_test(0, 1)  # this process's gauge starts failing: only a run can pass it
    with deployment.serve() as running, running.client(admin) as client:
        deadline = time.monotonic() + 60
        while PASSING not in client.get("/metrics").text:
            assert time.monotonic() < deadline, "no passing canary run within a minute"
            time.sleep(0.2)
    store = SQLiteStore(deployment.db)
    try:
        assert store.heads("canary-scratch"), "the canaries were planted in the scratch tenant"
    finally:
        store.close()
