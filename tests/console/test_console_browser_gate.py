"""The browser tests' gate: without Chromium they skip with the reason, and under CI they
fail, so a CI image without the browser cannot pass by skipping them."""

from __future__ import annotations

import pytest

from tests.console import browser


def test_a_missing_browser_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="/nonexistent/chromium is missing"):
        browser.require_browser()


def test_a_missing_browser_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cannot run under CI"):
        browser.require_browser()
