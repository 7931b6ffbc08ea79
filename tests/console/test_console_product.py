"""The console as a reader would use it, in Debian's Chromium: Markdown rendered safely in
answers, cards and the reader; a refused answer showing its refusal and not its draft;
"retrieved, not used" collapsed; cards that fit a phone; and the history of one's own
questions with follow-ups, as three principals who must not see each other's.

Screenshots at 1280x800 and 360x740 go to ``/tmp/console-shots/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from affidavit.store import SQLiteStore
from tests.console.browser import Visit, sign_in
from tests.console.test_console_browser import CANARY_STRINGS, chromium, console
from tests.service.conftest import Deployment, RunningService

__all__ = ["chromium", "console"]  # the module-scoped fixtures this module shares

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/console-shots")
DESKTOP, PHONE = (1280, 800), (360, 740)
RULES = "What are the stapler rules?"
FIRST_FLOOR = "How many staplers are on the first floor?"
UNADDRESSED = "When do loaned staplers return and what colour is the sky on Mars?"


def visit(chromium: Any, console: RunningService, deployment: Deployment, who: str,
          size: tuple[int, int] = DESKTOP, **kwargs: Any) -> Visit:
    v = sign_in(chromium, console.base_url, who, deployment.keys[who], width=size[0],
                height=size[1], **kwargs)
    v.page.on("dialog", lambda dialog: pytest.fail(f"a script ran: {dialog.message}"))
    return v


def ask(v: Visit, question: str) -> str:
    v.page.get_by_label("Question", exact=True).fill(question)
    v.page.get_by_role("button", name="Ask", exact=True).click()
    v.page.wait_for_selector("#result", timeout=60_000)
    return v.page.locator("#result").get_attribute("data-request-id") or ""


def shoot(v: Visit, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    width = v.page.viewport_size["width"]
    v.page.screenshot(path=str(SHOTS / f"{name}-{v.who}-{width}.png"), full_page=True)


def doc_id(console: RunningService, deployment: Deployment, who: str, alias: str,
           query: str) -> str:
    with console.client(deployment.keys[who]) as client:
        hits = client.post("/v1/search", json={"query": query, "limit": 50}).json()["hits"]
    ids = {h["doc_id"] for h in hits if h["locator"].startswith(alias)}
    assert len(ids) == 1, (alias, ids)
    return ids.pop()


def record(deployment: Deployment, request_id: str) -> dict[str, Any]:
    store = SQLiteStore(deployment.db, create=False)
    try:
        entry = store.get_ledger(deployment.settings.tenant, request_id)
    finally:
        store.close()
    assert entry is not None
    return dict(json.loads(entry.payload))


def fits(v: Visit, width: int) -> None:
    scroll = v.page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, scroll


def test_markdown_renders_in_answers_cards_and_the_reader_and_markup_stays_text(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    sam = visit(chromium, console, console_deployment, "sam")
    ask(sam, RULES)
    answer = sam.page.locator("#answer-text")
    assert answer.locator(".para > strong").all_inner_texts() == ["heavy"]  # **heavy**
    assert "**" not in answer.inner_text()
    # the cited passage is a table, in its card and in the sources list
    assert answer.locator(".card table").count() >= 1
    cited = sam.page.locator("#sources-cited .source-card .passage")
    assert cited.locator("table tr").count() >= 3
    assert cited.locator("ul li").count() == 2
    shoot(sam, "answer-markdown")
    staplers = doc_id(console, console_deployment, "sam", "staplers.md", "stapler inventory")
    sam.goto(f"/ui/documents/{staplers}")
    main = sam.page.locator("main")
    assert main.locator(".section .md table th").all_inner_texts() == [
        "Floor", "Staplers", "Counted by"]
    assert main.locator(".section .md li strong").inner_text() == "heavy"
    # markup in the source is shown as text: no element, no handler, no script link
    assert main.locator("img, script").count() == 0
    assert main.locator("a[href^='javascript']").count() == 0
    assert "<img src=x onerror=alert(7)>" in main.inner_text()
    assert "[stapler help](javascript:alert(9))" in main.inner_text()
    shoot(sam, "reader-markdown")


def test_a_refused_answer_shows_its_refusal_and_reasons_and_not_the_draft(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    helen = visit(chromium, console, console_deployment, "helen")
    request_id = ask(helen, UNADDRESSED)
    draft = str(record(console_deployment, request_id)["raw_response"])
    assert draft.strip()
    refusal = helen.page.locator("#refusal")
    assert refusal.is_visible()
    assert "QUESTION_NOT_ADDRESSED" in helen.page.locator("#refusal-reasons").inner_text()
    assert helen.page.locator("#claims, #answer-text").count() == 0
    assert draft not in helen.page.locator("main").inner_text()
    assert helen.page.locator("#sources-h").inner_text() == "Evidence that was there"
    shoot(helen, "refused")
    helen.page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    fits(helen, PHONE[0])
    shoot(helen, "refused")
    helen.goto(f"/ui/ledger/{request_id}")
    assert helen.page.locator("#refusal").is_visible()
    assert draft not in helen.page.locator("main").inner_text()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_unused_sources_are_collapsed_and_a_card_fits_the_screen(
        size: tuple[int, int], chromium: Any, console: RunningService,
        console_deployment: Deployment) -> None:
    farid = visit(chromium, console, console_deployment, "farid", size)
    ask(farid, RULES)
    unused = farid.page.locator("details#unused")
    assert unused.get_attribute("open") is None
    assert not farid.page.locator("#sources-unused").is_visible()
    fits(farid, size[0])
    wraps = farid.page.locator("#answer-text .cite-wrap")
    for n in (wraps.count() - 1, 0):  # the last marker sits near the right edge
        farid.page.mouse.move(1, 1)  # no card shown by a resting pointer
        wraps.nth(n).locator("a.cite").focus()
        card = wraps.nth(n).locator(".card")
        assert card.is_visible()
        box, mark = card.bounding_box(), wraps.nth(n).locator("a.cite").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= size[0], box
        if size == DESKTOP:  # under its marker, not over it
            assert mark is not None and box["y"] >= mark["y"] + mark["height"] - 2, (box, mark)
        fits(farid, size[0])
    shoot(farid, "card")
    summary = farid.page.locator("details#unused summary")
    farid.page.mouse.move(1, 1)  # the pointer off every marker
    summary.focus()  # the keyboard opens it (a card shown on a phone may cover it)
    assert not card.is_visible()
    farid.page.keyboard.press("Enter")
    assert farid.page.locator("#sources-unused").is_visible()
    fits(farid, size[0])
    shoot(farid, "unused-open")


def test_history_is_each_principals_own_and_a_follow_up_continues_the_conversation(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    sam = visit(chromium, console, console_deployment, "sam", PHONE)
    first = ask(sam, FIRST_FLOOR)
    sam.page.get_by_label("Follow-up question").fill(RULES)
    sam.page.get_by_role("button", name="Ask the follow-up").click()
    sam.page.wait_for_url("**/ui/ask?request_id=*thread=*")
    turns = sam.page.locator("#conversation .turn-question")
    assert turns.all_inner_texts() == [FIRST_FLOOR]
    second = sam.page.locator("#result").get_attribute("data-request-id") or ""
    shoot(sam, "follow-up")
    sam.page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
    shoot(sam, "follow-up")
    sam.page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    sam.page.get_by_role("link", name="History").click()
    sam.page.wait_for_url("**/ui/history")
    listed = sam.page.locator("#history .asked")
    assert [listed.nth(i).get_attribute("data-request-id") for i in range(2)] == [
        second, first]
    assert sam.page.locator("#history .asked-question").all_inner_texts()[:2] == [
        RULES, FIRST_FLOOR]
    fits(sam, PHONE[0])
    shoot(sam, "history")
    sam.page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
    shoot(sam, "history")
    # sam holds no grant for any canary: none in any DOM or response it received
    seen = sam.everything().lower()
    assert [c for c in CANARY_STRINGS if c.lower() in seen] == []

    farid = visit(chromium, console, console_deployment, "farid")
    farid.goto("/ui/history")
    assert first not in farid.page.content() and FIRST_FLOOR not in farid.page.content()
    assert farid.goto(f"/ui/ask?request_id={first}").status == 404
    # a thread naming someone else's record reads like one naming no record
    farid.goto("/ui/ask")
    ask(farid, RULES)
    own = farid.page.locator("#result").get_attribute("data-request-id")
    assert farid.goto(f"/ui/ask?request_id={own}&thread={first}").status == 404
    assert farid.goto(f"/ui/ask?request_id={own}&thread=req-none").status == 404
    assert FIRST_FLOOR not in "\n".join(farid.bodies)

    grace = visit(chromium, console, console_deployment, "grace")
    grace.goto("/ui/history")  # an auditor's history is its own; the ledger has the rest
    assert first not in grace.page.content()
    grace.goto(f"/ui/ledger/{first}")
    assert grace.page.locator("#record-question").inner_text() == FIRST_FLOOR


def test_the_follow_up_and_history_work_without_javascript(
        chromium: Any, console: RunningService, console_deployment: Deployment) -> None:
    helen = visit(chromium, console, console_deployment, "helen", javascript=False)
    ask(helen, FIRST_FLOOR)
    helen.page.get_by_label("Follow-up question").fill(RULES)
    helen.page.get_by_role("button", name="Ask the follow-up").click()
    helen.page.wait_for_url("**/ui/ask?request_id=*thread=*")
    assert helen.page.locator("#conversation .turn-question").all_inner_texts() == [
        FIRST_FLOOR]
    assert helen.page.locator("details#unused").get_attribute("open") is None
    helen.goto("/ui/history")
    assert RULES in helen.page.locator("#history").inner_text()


FINDS = {"handbook.md": "travel bookings quarter", "hr/case-017.md": "grumbleflax",
         "finance/q3-results.md": "moneywhistle", "board/minutes.md": "lanternfish",
         "legal/contracts/supplier.md": "quillocrat", "mixed.md": "printers",
         "staplers.md": "stapler inventory"}


def found(console: RunningService, deployment: Deployment, who: str) -> set[str]:
    """The documents ``who`` finds with search (a hit is a paragraph it may read)."""
    ids: set[str] = set()
    with console.client(deployment.keys[who]) as client:
        for alias, query in FINDS.items():
            hits = client.post("/v1/search", json={"query": query, "limit": 100}
                               ).json()["hits"]
            ids |= {h["doc_id"] for h in hits if h["locator"].startswith(alias)}
    return ids


@pytest.mark.parametrize("who", ["sam", "farid", "nobody"])
def test_the_document_list_holds_what_the_principal_may_read_and_nothing_else(
        who: str, chromium: Any, console: RunningService,
        console_deployment: Deployment) -> None:
    v = visit(chromium, console, console_deployment, who, PHONE if who == "sam" else DESKTOP)
    v.goto("/ui/documents")
    rows = v.page.locator("#documents .document")
    listed = {rows.nth(i).get_attribute("data-doc-id") for i in range(rows.count())}
    mine = found(console, console_deployment, who)
    others = set().union(*(found(console, console_deployment, p)
                           for p in ("sam", "farid", "helen", "dana", "grace"))) - mine
    assert mine <= listed
    assert who == "farid" or others  # someone else reads what this principal may not
    assert not (listed & others), listed & others
    shoot(v, "documents")
    if who == "sam":
        fits(v, PHONE[0])
        mixed = doc_id(console, console_deployment, "sam", "mixed.md", "printers")
        row = v.page.locator(f"#documents .document[data-doc-id='{mixed}']")
        assert "needs FINANCIAL" in row.inner_text()
        row.get_by_role("link").click()
        v.page.wait_for_url(f"**/ui/documents/{mixed}")
        assert v.page.locator(".section.placeholder").count() == 1
    for doc in listed:
        assert v.goto(f"/ui/documents/{doc}").status == 200
    if who != "farid":  # sam and nobody hold no grant for any canary
        seen = v.everything().lower()
        assert [c for c in CANARY_STRINGS if c.lower() in seen] == []


UPLOADED = ("# zebrafinch register\n\n| Finch | Cage |\n|---|---|\n| zebrafinch | 4 |\n\n"
            "The zebrafinch register is kept by the aviary desk.\n")


def test_an_ingester_uploads_files_and_follows_the_run_to_its_outcome(
        chromium: Any, console: RunningService, console_deployment: Deployment,
        tmp_path: Path) -> None:
    sam = visit(chromium, console, console_deployment, "sam")
    assert sam.goto("/ui/upload").status == 403  # a reader may not ingest
    assert sam.page.locator("nav a", has_text="Upload").count() == 0
    grace = visit(chromium, console, console_deployment, "grace", PHONE)
    grace.page.get_by_role("link", name="Upload").click()
    grace.page.wait_for_url("**/ui/upload")
    fits(grace, PHONE[0])
    shoot(grace, "upload")
    upload = tmp_path / "zebrafinch.md"
    upload.write_text(UPLOADED, encoding="utf-8")
    grace.page.get_by_label("Files").set_input_files(str(upload))
    grace.page.get_by_label("Declared label (optional)").fill("INTERNAL")
    grace.page.get_by_label("Readers (optional, comma-separated)").fill("user:grace")
    grace.page.get_by_role("button", name="Upload", exact=True).click()
    grace.page.wait_for_url("**/ui/upload/run-*")
    status = grace.page.locator("#run-status")
    grace.page.wait_for_function(
        "() => document.getElementById('run-status')?.textContent !== 'RUNNING'",
        timeout=60_000)
    assert status.inner_text() == "COMPLETED"
    assert grace.page.locator("#run-counts").count() == 1
    fits(grace, PHONE[0])
    shoot(grace, "upload-run")
    grace.page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
    shoot(grace, "upload-run")
    run_page = grace.page.url
    grace.goto("/ui/documents")
    assert "zebrafinch register" in grace.page.locator("#documents").inner_text()
    farid = visit(chromium, console, console_deployment, "farid")
    assert farid.goto(run_page.removeprefix(console.base_url)).status == 403
    farid.goto("/ui/documents")
    assert "zebrafinch" not in farid.page.content()
