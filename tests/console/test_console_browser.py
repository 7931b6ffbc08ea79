"""The console in a real browser (Debian's Chromium through Playwright), as a reader, a
reviewer and an administrator: streamed answers, withheld evidence, reader placeholders,
the ledger, SIRE review and the permissions explainer; screenshots at 1280 and 360 px."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from affidavit.store import SQLiteStore
from tests.canary.conftest import CANARIES
from tests.console.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PHONE,
    SCREENSHOTS,
    Visit,
    require_browser,
    sign_in,
)
from tests.console.conftest import MIX_CANARY, PDF_CANARY
from tests.service.conftest import Deployment, RunningService

pytestmark = pytest.mark.browser

CANARY_STRINGS = [c for pair in CANARIES.values() for c in pair] + [MIX_CANARY, PDF_CANARY]
QUESTION = "When are the office printers replaced?"
# A term of each document, to find it with search (the explainer must agree with search).
FINDS = {"handbook.md": "travel bookings quarter", "hr/case-017.md": "grumbleflax",
         "finance/q3-results.md": "moneywhistle", "board/minutes.md": "lanternfish",
         "legal/contracts/supplier.md": "quillocrat", "travel-policy.md": "nightly hotel limit",
         "mixed.md": "printers", "printers.pdf": "printers"}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def console(console_deployment: Deployment, chromium: Any) -> Iterator[RunningService]:
    # conftest's terminal summary prints where the screenshots are
    with console_deployment.serve() as running:
        yield running


def visit(chromium: Any, console: RunningService, deployment: Deployment, who: str,
          **kwargs: Any) -> Visit:
    return sign_in(chromium, console.base_url, who, deployment.keys[who], **kwargs)


def ask(v: Visit, question: str) -> None:
    v.page.get_by_label("Question").fill(question)
    v.page.get_by_role("button", name="Ask").click()
    v.page.wait_for_selector("#result", timeout=60_000)


def test_streamed_tokens_come_before_the_coloured_claims(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    v = visit(chromium, console, console_deployment, "sam")
    ask(v, QUESTION)
    events = v.page.evaluate("document.body.dataset.streamEvents").split()
    assert events[0] == "token", events
    assert events.index("envelope") > max(i for i, e in enumerate(events) if e == "token")
    assert events[-1] == "result"
    assert (v.page.locator("#stream-text").text_content() or "").strip()
    claims = v.page.locator("#claims > li")
    assert claims.count() >= 1
    colours = {claims.nth(i).get_attribute("data-status"): claims.nth(i).evaluate(
        "e => getComputedStyle(e).backgroundColor") for i in range(claims.count())}
    assert all(c not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)") for c in colours.values())
    assert v.page.locator("#output-state").inner_text() == "AUTHORIZED"
    assert v.page.locator("#ledger-record").inner_text().startswith("led-")
    v.shoot("ask")


def test_a_marker_shows_its_passage_on_hover_and_opens_the_reader_at_the_chunk(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    v = visit(chromium, console, console_deployment, "sam")
    ask(v, QUESTION)
    marker = v.page.locator("#claims a.cite").first
    card = v.page.locator("#claims .cite-wrap").first.locator(".card")
    assert not card.is_visible()
    marker.focus()  # the keyboard reaches the passage too
    assert card.is_visible()
    # The pointer was left on the Ask button, where a card now opens under the marker's
    # line: hovering keeps a card open, so move it off before leaving by keyboard.
    v.page.mouse.move(0, 0)
    v.page.locator("#question").focus()
    assert not card.is_visible()
    marker.hover()
    assert card.is_visible() and "printers" in card.inner_text().lower()
    chunk = marker.get_attribute("data-chunk")
    marker.click()
    v.page.wait_for_url("**/ui/documents/**")
    focused = v.page.locator(f"#chunk-{chunk}")
    assert "focus" in (focused.get_attribute("class") or "")


def test_a_reader_without_the_grant_sees_a_withheld_count_and_no_canary(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    v = visit(chromium, console, console_deployment, "sam")
    ask(v, "What is the acquisition budget, and when are the printers replaced?")
    assert int(v.page.locator("#withheld-count").inner_text()) >= 1
    assert "FINANCIAL" in v.page.locator(".withheld").inner_text()
    v.page.locator("#ledger-record").click()
    v.page.wait_for_selector("#asked-by")
    v.goto("/ui/ledger")
    for doc in ("mixed.md", "printers.pdf"):
        v.goto(f"/ui/documents/{_doc_id(console, console_deployment, 'sam', doc)}")
    seen = v.everything()
    # every page's body was captured, the record page navigated away from included
    assert any('id="asked-by"' in body for body in v.bodies)
    assert any('"type": "envelope"' in body for body in v.bodies)
    leaked = [c for c in CANARY_STRINGS if c.lower() in seen.lower()]
    assert not leaked, leaked
    assert "Content requires FINANCIAL clearance" in seen


def test_the_reader_shows_placeholders_page_numbers_and_the_original_only_when_allowed(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    sam = visit(chromium, console, console_deployment, "sam")
    mixed = _doc_id(console, console_deployment, "sam", "mixed.md")
    sam.goto(f"/ui/documents/{mixed}")
    placeholder = sam.page.locator(".section.placeholder")
    assert placeholder.count() == 1
    assert placeholder.inner_text().count("Content requires FINANCIAL clearance") == 1
    assert sam.page.locator("#original-link").count() == 0
    sam.shoot("reader")
    pdf = _doc_id(console, console_deployment, "sam", "printers.pdf")
    sam.goto(f"/ui/documents/{pdf}")
    assert sam.page.locator(".page").all_inner_texts()[:3] == ["page 1", "page 2", "page 3"]
    assert "without the pages" in sam.page.locator("#original-link").inner_text()
    farid = visit(chromium, console, console_deployment, "farid")
    farid.goto(f"/ui/documents/{mixed}")
    assert farid.page.locator(".section.placeholder").count() == 0
    assert MIX_CANARY in farid.page.content()
    assert farid.page.locator("#original-link").inner_text() == "Download the original"


def test_the_ledger_lists_own_records_and_all_for_an_admin_with_chain_and_replay(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    sam = visit(chromium, console, console_deployment, "sam")
    ask(sam, QUESTION)
    request_id = sam.page.locator("#result").get_attribute("data-request-id")
    sam.goto("/ui/ledger")
    assert set(sam.page.locator("#ledger-table tbody td:nth-child(3)").all_inner_texts()) \
        == {"user:sam"}
    assert "Chain verified" in sam.page.locator("#chain-status").inner_text()
    sam.shoot("ledger")
    grace = visit(chromium, console, console_deployment, "grace")
    ask(grace, "What does the travel desk approve?")
    grace.goto("/ui/ledger")
    askers = set(grace.page.locator("#ledger-table tbody td:nth-child(3)").all_inner_texts())
    assert {"user:sam", "user:grace"} <= askers
    grace.goto(f"/ui/ledger/{request_id}")
    assert grace.page.locator("#asked-by").inner_text() == "user:sam"
    headers = grace.page.locator("#claims-table th").all_inner_texts()
    assert "Δ" in headers and "Support" in headers
    grace.page.get_by_role("button", name="Replay").click()
    assert "the decision reproduces" in grace.page.locator("#replay-result").inner_text()
    grace.shoot("record")
    helen = visit(chromium, console, console_deployment, "helen")
    response = helen.goto(f"/ui/ledger/{request_id}")
    assert response.status == 404  # another reader's record reads like an unknown id


def test_approving_a_sire_proposal_records_the_reviewer(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    sam = visit(chromium, console, console_deployment, "sam")
    assert sam.goto("/ui/review").status == 403
    helen = visit(chromium, console, console_deployment, "helen")
    helen.goto("/ui/review")
    proposal = helen.page.locator("article.proposal[data-state=PROPOSED]").filter(
        has_text="handbook.md")
    assert proposal.count() == 1
    assert proposal.locator(".term.added").count() >= 1  # the printers sentence is new
    helen.shoot("review")
    sire_id = (proposal.get_attribute("id") or "").removeprefix("sire-")
    proposal.get_by_role("button", name="Approve as user:helen").click()
    helen.page.wait_for_url("**/ui/review?message=*")
    assert "by user:helen" in helen.page.locator("#review-message").inner_text()
    store = SQLiteStore(console_deployment.db, create=False)
    try:
        record = {r.sire_id: r for r in store.list_sire(console_deployment.settings.tenant)}
    finally:
        store.close()
    assert record[sire_id].state == "ACTIVE" and record[sire_id].approved_by == "user:helen"


def test_releasing_quarantine_names_the_releaser_and_shows_the_reason(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    grace = visit(chromium, console, console_deployment, "grace")
    grace.goto("/ui/review")
    entry = grace.page.locator("ul.quarantine li").filter(has_text="broken.md")
    assert entry.locator(".reason").inner_text().strip()
    entry.get_by_role("button", name="Release").click()
    grace.page.wait_for_url("**/ui/review?message=*")
    assert "as user:grace" in grace.page.locator("#review-message").inner_text()
    store = SQLiteStore(console_deployment.db, create=False)
    try:
        released = [q for q in store.list_quarantine(console_deployment.settings.tenant)
                    if q.alias.endswith("broken.md")]
    finally:
        store.close()
    assert [q.released_by for q in released] == ["user:grace"]


def test_the_explainer_verdict_matches_search_for_20_random_pairs(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    grace = visit(chromium, console, console_deployment, "grace")
    people = ["sam", "helen", "farid", "grace", "dana", "nobody"]
    chooser = random.Random(2026)
    pairs = [(chooser.choice(people), chooser.choice(sorted(FINDS))) for _ in range(20)]
    grace.goto("/ui/permissions")
    grace.page.get_by_label("Principal").fill("user:sam")
    grace.page.get_by_label("Document (path, node id or source id)").fill("mixed.md")
    grace.page.get_by_role("button", name="Explain").click()
    assert grace.page.locator("#decision").inner_text() == "PARTIAL"
    grace.shoot("permissions")
    for who, doc in pairs:
        grace.goto(f"/ui/permissions?principal=user:{who}&doc={doc}")
        decision = grace.page.locator("#decision").inner_text()
        twin = grace.page.request.get(
            f"{console.base_url}/ui/permissions.json?principal=user:{who}&doc={doc}").json()
        assert twin["decision"] == decision
        found = _doc_id(console, console_deployment, who, doc, required=False) is not None
        assert (decision != "DENIED") == found, (who, doc, decision)


def test_pages_fit_a_phone_and_label_every_input(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    grace = visit(chromium, console, console_deployment, "grace", width=PHONE)
    mixed = _doc_id(console, console_deployment, "grace", "mixed.md")
    ask(grace, QUESTION)
    request_id = grace.page.locator("#result").get_attribute("data-request-id")
    grace.shoot("ask")
    for name, path in (("reader", f"/ui/documents/{mixed}"), ("ledger", "/ui/ledger"),
                       ("record", f"/ui/ledger/{request_id}"), ("review", "/ui/review"),
                       ("permissions", "/ui/permissions?principal=user:sam&doc=mixed.md")):
        grace.goto(path)
        width = grace.page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE, (name, width)
        unlabelled = grace.page.evaluate(
            "[...document.querySelectorAll('input:not([type=hidden]), textarea, select')]"
            ".filter(e => e.labels.length === 0).map(e => e.name)")
        assert unlabelled == [], (name, unlabelled)
        grace.shoot(name)
    grace.page.context.new_page().goto(console.base_url + "/ui/login")
    login = grace.page.context.pages[-1]
    login.screenshot(path=str(SCREENSHOTS / "login-360.png"), full_page=True)


def test_every_page_says_who_you_are_and_works_without_javascript(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    helen = visit(chromium, console, console_deployment, "helen", javascript=False)
    assert helen.page.locator("#me-principal").inner_text() == "user:helen"
    assert helen.page.locator("#me-tenant").inner_text() == console_deployment.settings.tenant
    assert "PII" in helen.page.locator("#me-grants").inner_text()
    helen.page.get_by_label("Question").fill(QUESTION)
    helen.page.get_by_role("button", name="Ask").click()
    helen.page.wait_for_url("**/ui/ask?request_id=*")
    assert helen.page.locator("#claims > li").count() >= 1
    helen.goto("/ui/review")
    assert helen.page.locator("#me-role").inner_text() == "reviewer"
    helen.shoot("nojs-review")


def _doc_id(console: RunningService, deployment: Deployment, who: str, alias: str, *,
            required: bool = True) -> str | None:
    """The document's id when ``who`` finds it with search over HTTP, else None."""
    with console.client(deployment.keys[who]) as client:
        response = client.post("/v1/search", json={"query": FINDS[alias], "limit": 100})
    response.raise_for_status()
    ids = {h["doc_id"] for h in response.json()["hits"] if h["locator"].startswith(alias)}
    if required:
        assert len(ids) == 1, (who, alias, ids)
    return next(iter(ids), None)

