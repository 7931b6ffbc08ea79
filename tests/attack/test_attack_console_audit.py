"""Attacks on the policy audit trail through the console: every change to what was let in
is a policy event with its actor, whichever door it came through."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from affidavit.audit import QUARANTINE_RELEASE
from affidavit.store import SQLiteStore
from tests.console.conftest import console_deployment
from tests.service.conftest import Deployment, RunningService

__all__ = ["console_deployment"]

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
RELEASE_FORM = re.compile(r'name="run_id" value="([^"]+)">\s*<input type="hidden" '
                          r'name="alias" value="([^"]*broken\.md)"')


@pytest.fixture(scope="module")
def console(console_deployment: Deployment) -> Iterator[RunningService]:
    with console_deployment.serve() as running:
        yield running


def test_a_quarantine_release_in_the_console_is_a_policy_event_by_the_releaser(
        console: RunningService, console_deployment: Deployment) -> None:
    with httpx.Client(base_url=console.base_url, follow_redirects=True, timeout=60) as client:
        login = CSRF.search(client.get("/ui/login").text)
        assert login is not None
        client.post("/ui/login", data={"csrf": login.group(1),
                                       "api_key": console_deployment.keys["grace"]})
        review = client.get("/ui/review").text
        csrf, form = CSRF.search(review), RELEASE_FORM.search(review)
        assert csrf is not None and form is not None, review
        released = client.post("/ui/review/quarantine/release", data={
            "csrf": csrf.group(1), "run_id": form.group(1), "alias": form.group(2)})
    assert released.status_code == 200 and "as user:grace" in released.text
    store = SQLiteStore(console_deployment.db, create=False)
    try:
        events = [e for e in store.iter_policy_events(console_deployment.settings.tenant)
                  if e.kind == QUARANTINE_RELEASE]
    finally:
        store.close()
    assert [(e.actor, form.group(2) in e.after_json) for e in events] == [("user:grace", True)]
