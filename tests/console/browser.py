"""Driving Debian's Chromium with Playwright: the browser, a signed-in page per principal,
network capture and screenshots.

Browser downloads are not reachable, so Playwright is pointed at ``/usr/bin/chromium``.
Without the browser or the package the tests skip with the reason; under ``CI=true`` they
fail instead, so a CI image that lost the browser cannot pass silently.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
DESKTOP, PHONE = 1280, 360
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (pip install playwright)"
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    return None


def require_browser() -> None:
    reason = missing_browser()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run under CI: {reason}")
    pytest.skip(reason)


@dataclass
class Visit:
    """A signed-in browser page of one principal, and the body of every response it
    received (read as each arrives: a page navigated away from keeps no body)."""

    page: Any
    base_url: str
    who: str
    bodies: list[str] = field(default_factory=list)

    def goto(self, path: str) -> Any:
        return self.page.goto(self.base_url + path)

    def keep(self, response: Any) -> None:
        if 300 <= response.status < 400:
            return  # a redirect has no body
        self.bodies.append(response.body().decode("utf-8", "replace"))

    def everything(self) -> str:
        """The DOM as the browser holds it now, and every response body."""
        return "\n".join([self.page.content(), *self.bodies])

    def shoot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        width = self.page.viewport_size["width"]
        path = SCREENSHOTS / f"{name}-{self.who}-{width}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


def sign_in(browser: Any, base_url: str, who: str, key: str, *, width: int = DESKTOP,
            javascript: bool = True, height: int = 900) -> Visit:
    """A fresh browser context signed in through the login form, with the keyboard."""
    context = browser.new_context(viewport={"width": width, "height": height},
                                  java_script_enabled=javascript)
    page = context.new_page()
    visit = Visit(page, base_url, who)
    page.on("response", visit.keep)
    visit.goto("/ui/login")
    page.get_by_label("API key").fill(key)
    page.get_by_label("API key").press("Enter")
    page.wait_for_url("**/ui/ask")
    return visit
