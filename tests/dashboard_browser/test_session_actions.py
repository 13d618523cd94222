"""Deleting and compacting a session from the page, in a real headless Chromium against a
real `rawtrio dashboard` and the fake model server over loopback.

Controls are found by their accessible names (aria-label), as a keyboard or screen-reader
user finds them; the confirmations are the page's own dialogs (the CSP forbids nothing
here, but `window.confirm` would block the page and could not show the server's answer)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from playwright.sync_api import expect

from rawtrio.testing.fake_model import FakeModelServer
from tests.dashboard_browser.support import (
    Dashboard,
    current_session,
    items,
    open_page,
    processes_with,
    screenshot,
    send_prompt,
    sleep_rule,
    wait_turn_ended,
)
from tests.headless.support import LIVENESS_S, wait_until
from tests.host.support import Client, Place

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Locator, Page

#: How long a compaction may take to end (the summary is slow on purpose).
ENDED_MS = LIVENESS_S * 1000
SLEEP_SECONDS = "28.7654"
SLEEP_MARKER = "rawtrio-dashboard-delete-marker"
#: A focus that makes the fake model fail the summary request (a 400: not retried).
FAIL_FOCUS = "FAIL-THE-SUMMARY"
#: A focus that makes the summary slow (to cancel it).
SLOW_FOCUS = "SLOW-SUMMARY"
SUMMARY = "Summary: the user asked for more, three times."
LONG_REPLY = "Here is more about it, in some detail. " * 30

SCENARIO: dict[str, Any] = {
    "rules": [
        # Compaction (summary) requests first: their text quotes the conversation.
        {
            "match": FAIL_FOCUS,
            "replies": [{"error": {"status": 400, "message": "the summary was refused"}}],
        },
        # A summary that takes long (about 15 s), to be cancelled.
        {
            "match": SLOW_FOCUS,
            "replies": [{"text": SUMMARY, "chunk": 2, "delay_ms": 600}],
        },
        # Slow enough (about 5 s) that the page shows it under way, even on a loaded machine.
        {"match": "@compaction", "replies": [{"text": SUMMARY, "chunk": 3, "delay_ms": 300}]},
        {"match": "tell me more", "replies": [{"text": LONG_REPLY}]},
        sleep_rule(SLEEP_SECONDS, SLEEP_MARKER),
        {"match": "*", "replies": [{"text": "Hello from the fake model."}]},
    ]
}


def status_of(dashboard: Dashboard, path: str) -> int:
    import httpx2

    headers = {"Authorization": f"Bearer {dashboard.token}"}
    with httpx2.Client(base_url=dashboard.origin, timeout=LIVENESS_S) as client:
        return client.get(path, headers=headers).status_code


def entry(page: Page, session: str) -> Locator:
    return page.locator(f'.sessions li[data-session-id="{session}"]')


def one_turn(page: Page, text: str, count: int) -> None:
    send_prompt(page, text)
    wait_turn_ended(page, count)


def compaction_ended(dashboard: Dashboard, session: str) -> dict[str, Any]:
    history = dashboard.api("GET", f"/api/sessions/{session}/history?order=newest&limit=100")
    ended = [e for e in history["events"] if e["type"] == "compaction_ended"]
    assert len(ended) == 1, ended
    event: dict[str, Any] = ended[0]
    return event


# --- delete -------------------------------------------------------------------------------


def test_delete_asks_first_cancel_keeps_the_session_confirm_deletes_it(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    one_turn(page, "hello there", 1)
    session = current_session(page)
    dialog = page.get_by_role("alertdialog")
    # Cancel, then Esc: nothing changes.
    page.get_by_label("Delete this session").click()
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("hello there")  # the session's title
    screenshot(page, "delete")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    page.get_by_label("Delete this session").click()
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert status_of(dashboard, f"/api/sessions/{session}") == 200
    expect(entry(page, session)).to_have_count(1)
    assert current_session(page) == session
    # Confirmed: gone from the store and the list; the page shows its empty state.
    page.get_by_label("Delete this session").click()
    dialog.get_by_role("button", name="Delete").click()
    expect(dialog).to_have_count(0)
    expect(entry(page, session)).to_have_count(0)
    expect(page.locator(".empty")).to_be_visible()
    assert "#s=" not in page.url
    assert status_of(dashboard, f"/api/sessions/{session}") == 404
    expect(page.locator('[data-part="error"], [data-part="notice"]')).to_have_count(0)
    # The next page does not try to open it again, and the list stays without it.
    other = dashboard.api("POST", "/api/sessions", {})["id"]
    again = open_page(browser, dashboard)
    entry(again, other).wait_for()  # the list has loaded: the page chose what to open
    expect(entry(again, session)).to_have_count(0)
    expect(again.locator(".empty")).to_be_visible()
    assert "#s=" not in again.url
    # The page goes on: a prompt starts a new session.
    one_turn(page, "a new start", 1)
    assert current_session(page) != session


def test_a_session_is_deleted_from_the_list_with_the_keyboard(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    one_turn(page, "the first session", 1)
    first = current_session(page)
    page.locator(".sidebar .new").click()
    page.wait_for_url(lambda url: "#s=" in url and not url.endswith(f"#s={first}"))
    one_turn(page, "the second session", 1)
    second = current_session(page)
    entry(page, first).wait_for()
    # The first (not open) entry: Delete on it asks; Tab from Cancel reaches Delete.
    entry(page, first).locator(".s-open").focus()
    page.keyboard.press("Delete")
    dialog = page.get_by_role("alertdialog")
    expect(dialog).to_contain_text("the first session")
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Tab")
    expect(dialog.get_by_role("button", name="Delete")).to_be_focused()
    page.keyboard.press("Enter")
    expect(dialog).to_have_count(0)
    expect(entry(page, first)).to_have_count(0)
    assert status_of(dashboard, f"/api/sessions/{first}") == 404
    # The open session stays open and goes on.
    assert current_session(page) == second
    one_turn(page, "still here", 2)
    # Each entry's own delete button is reachable and named for its session.
    button = page.get_by_label("Delete session the second session")
    button.focus()
    page.keyboard.press("Enter")
    expect(dialog).to_contain_text("the second session")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert status_of(dashboard, f"/api/sessions/{second}") == 200


def test_delete_is_refused_while_a_turn_runs_and_nothing_changes(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    send_prompt(page, "sleep a while")
    tool = page.locator('[data-kind="tool"][data-phase="running"]')
    tool.wait_for()
    wait_until(lambda: bool(processes_with(SLEEP_SECONDS)), "the tool's sleep started")
    session = current_session(page)
    # No compaction while a turn runs.
    expect(page.get_by_label("Compact the context")).to_be_disabled()
    page.get_by_label("Delete this session").click()
    dialog = page.get_by_role("alertdialog")
    dialog.get_by_role("button", name="Delete").click()
    refusal = dialog.locator('[data-part="dialog-error"]')
    expect(refusal).to_contain_text(f"session {session} is running turn")
    expect(refusal).to_contain_text("cancel it first")
    screenshot(page, "delete-refused")
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_have_count(0)
    # Nothing changed: listed, open, the tool still running.
    expect(entry(page, session)).to_have_count(1)
    assert current_session(page) == session
    assert tool.count() == 1
    assert processes_with(SLEEP_MARKER)
    assert status_of(dashboard, f"/api/sessions/{session}") == 200
    # Once the turn is cancelled, the same control deletes it.
    page.locator("button.cancel").click()
    page.locator('[data-kind="turn_end"][data-outcome="cancelled"]').wait_for()
    assert processes_with(SLEEP_MARKER) == []
    page.get_by_label("Delete this session").click()
    dialog.get_by_role("button", name="Delete").click()
    expect(entry(page, session)).to_have_count(0)
    assert status_of(dashboard, f"/api/sessions/{session}") == 404


def test_delete_is_refused_while_another_front_end_is_on_the_session(
    place: Place, browser: BrowserContext
) -> None:
    running = Dashboard.start(place, host=True)
    client = Client.connect(place.paths.socket)  # a front end attached to the host
    try:
        client.initialize()
        session = client.start(place, flags={"base_url": place.base_url})["sessionId"]
        page = open_page(browser, running, session=session)
        page.locator('[data-part="connection"]', has_text="live").wait_for()
        page.get_by_label("Delete this session").click()
        dialog = page.get_by_role("alertdialog")
        dialog.get_by_role("button", name="Delete").click()
        refusal = dialog.locator('[data-part="dialog-error"]')
        expect(refusal).to_contain_text(f"session {session} is open in another front end")
        dialog.get_by_role("button", name="Close").click()
        expect(dialog).to_have_count(0)
        expect(entry(page, session)).to_have_count(1)
        assert current_session(page) == session
        assert status_of(running, f"/api/sessions/{session}") == 200
        # The other front end still has it: a prompt from it runs.
        client.result("_rawtrio/session/submit", {"sessionId": session, "text": "hello there"})
        client.wait_event("turn_ended")
        wait_turn_ended(page)
    finally:
        client.close()
        running.stop()


def test_a_session_deleted_elsewhere_closes_with_a_notice(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    one_turn(page, "hello there", 1)
    session = current_session(page)
    dashboard.api("DELETE", f"/api/sessions/{session}")  # another page's request
    expect(page.locator('[data-part="notice"]')).to_contain_text("deleted")
    expect(page.locator(".empty")).to_be_visible()
    expect(entry(page, session)).to_have_count(0)


# --- compact ------------------------------------------------------------------------------


def test_compact_after_a_few_turns_shows_the_result_and_the_session_goes_on(
    dashboard: Dashboard, browser: BrowserContext, model: FakeModelServer
) -> None:
    page = open_page(browser, dashboard)
    for n in range(1, 4):
        one_turn(page, f"tell me more, part {n}", n)
    session = current_session(page)
    page.get_by_label("Compact the context").click()
    dialog = page.get_by_role("dialog")
    focus = dialog.get_by_label("Focus of the summary (optional)")
    expect(focus).to_be_focused()
    focus.fill("the numbers")
    screenshot(page, "compact")
    focus.press("Enter")
    expect(dialog).to_have_count(0)
    # Under way: shown in the transcript; no second compaction, prompts are queued.
    item = items(page, "compaction")
    expect(item).to_have_attribute("data-state", "running")
    expect(item).to_contain_text("Compacting the context")
    expect(page.get_by_label("Compact the context")).to_be_disabled()
    expect(page.locator('[data-part="connection"]')).to_have_text("compacting")
    # Then its result: what it did and the sizes before and after.
    expect(item).to_have_attribute("data-state", "compacted", timeout=ENDED_MS)
    ended = compaction_ended(dashboard, session)
    assert ended["outcome"] == "compacted"
    expect(item).to_contain_text("Context compacted")
    expect(item.locator('[data-part="sizes"]')).to_contain_text(
        f"{ended['tokens_before']:,} tokens → {ended['tokens_after']:,} tokens"
    )
    expect(item.locator('[data-part="reason"]')).to_have_text(ended["reason"])
    assert "summarized" in ended["reason"]
    screenshot(page, "compaction")
    # The focus reached the summary request.
    summaries = [r for r in model.requests if "Focus the summary on: the numbers" in str(r.body)]
    assert summaries, "no summary request carried the focus"
    # The session goes on: the next prompt is answered, and compacting again is possible.
    expect(page.get_by_label("Compact the context")).to_be_enabled()
    one_turn(page, "hello after the compaction", 4)
    assert "Hello from the fake model." in items(page, "message").last.inner_text()


def test_nothing_to_compact_is_said_in_the_transcript(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    one_turn(page, "hello there", 1)
    page.get_by_label("Compact the context").click()
    page.get_by_role("dialog").get_by_role("button", name="Compact").click()
    item = items(page, "compaction")
    expect(item).to_have_attribute("data-state", "unchanged", timeout=ENDED_MS)
    expect(item).to_contain_text("Context unchanged")
    expect(item.locator('[data-part="reason"]')).to_contain_text("nothing to compact")
    expect(page.get_by_label("Compact the context")).to_be_enabled()
    one_turn(page, "hello again", 2)


def test_a_failed_compaction_shows_its_error(dashboard: Dashboard, browser: BrowserContext) -> None:
    page = open_page(browser, dashboard)
    for n in range(1, 4):
        one_turn(page, f"tell me more, part {n}", n)
    page.get_by_label("Compact the context").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Focus of the summary (optional)").fill(FAIL_FOCUS)
    dialog.get_by_role("button", name="Compact").click()
    item = items(page, "compaction")
    expect(item).to_have_attribute("data-state", "error", timeout=ENDED_MS)
    expect(item).to_contain_text("Compaction failed")
    expect(item.locator('[data-part="reason"]')).to_contain_text("the summary request failed")
    one_turn(page, "hello after the failure", 4)


def test_cancel_stops_a_compaction_and_the_context_stays(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    for n in range(1, 4):
        one_turn(page, f"tell me more, part {n}", n)
    session = current_session(page)
    page.get_by_label("Compact the context").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Focus of the summary (optional)").fill(SLOW_FOCUS)
    dialog.get_by_role("button", name="Compact").click()
    item = items(page, "compaction")
    expect(item).to_have_attribute("data-state", "running")
    page.locator("button.cancel").click()
    expect(item).to_have_attribute("data-state", "cancelled", timeout=ENDED_MS)
    expect(item).to_contain_text("Compaction cancelled")
    expect(item.locator('[data-part="reason"]')).to_contain_text("the context is unchanged")
    assert compaction_ended(dashboard, session)["outcome"] == "cancelled"
    expect(page.get_by_label("Compact the context")).to_be_enabled()
    one_turn(page, "hello after the cancel", 4)


def test_a_compaction_the_server_refuses_is_explained_in_the_dialog(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    one_turn(page, "hello there", 1)
    session = current_session(page)
    page.get_by_label("Compact the context").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Focus of the summary (optional)").fill("kept while refused")
    # Meanwhile another front end starts a turn.
    body = {"client_request_id": "other-front-end-1", "text": "sleep a while"}
    dashboard.api("POST", f"/api/sessions/{session}/turns", body)
    page.locator('[data-kind="tool"][data-phase="running"]').wait_for()
    dialog.get_by_role("button", name="Compact").click()
    refusal = dialog.locator('[data-part="dialog-error"]')
    expect(refusal).to_contain_text(f"session {session} is running turn")
    expect(dialog.get_by_label("Focus of the summary (optional)")).to_have_value(
        "kept while refused"
    )
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_have_count(0)
    assert items(page, "compaction").count() == 0
    page.locator("button.cancel").click()
    page.locator('[data-kind="turn_end"][data-outcome="cancelled"]').wait_for()
    assert processes_with(SLEEP_MARKER) == []


def test_a_prompt_sent_while_another_front_end_compacts_goes_out_after_it(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    """A prompt written while a compaction runs is queued and sent once it ends. It used to
    be refused by the server (the session is busy), put back in the queue, and left there:
    only a turn's end sent the queue."""
    page = open_page(browser, dashboard)
    for n in range(1, 4):
        one_turn(page, f"tell me more, part {n}", n)
    session = current_session(page)
    body = {"client_request_id": "other-front-end-2"}
    dashboard.api("POST", f"/api/sessions/{session}/compact", body)
    item = items(page, "compaction")
    expect(item).to_have_attribute("data-state", "running")
    send_prompt(page, "hello after their compaction")
    expect(page.locator('[data-part="queue"]')).to_contain_text("hello after their compaction")
    expect(item).to_have_attribute("data-state", "compacted", timeout=ENDED_MS)
    wait_turn_ended(page, 4)
    expect(page.locator('[data-part="queue"]')).to_have_count(0)
    assert "hello after their compaction" in items(page, "user").last.inner_text()
