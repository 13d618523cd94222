"""The dashboard in a real headless Chromium against a real `rawtrio serve --dashboard`,
the fake model server over loopback: what a person does in the page, end to end.

Screenshots of the main views are written to docs/dashboard/ by these tests."""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from playwright.sync_api import expect

from stress.bench.bench_store import Prose, build
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
from tests.headless.support import LiveRun, wait_until
from tests.host.support import Place

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

SLEEP_MARKER = "rawtrio-dashboard-sleep-marker"
#: An unusual duration names the `sleep` process (bash execs the last command of a list,
#: so the marker goes after it, keeping bash itself in the group too).
SLEEP_SECONDS = "29.8765"
SECRET = "S3CRET-DASHBOARD-VALUE-42"
API_KEY = "sk-planted-DASHBOARD-KEY-9f8e7d"
FILE_TEXT = "def greet(name):\n    return f'hello {name}'\n"

SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "stream slowly",
            "replies": [
                {
                    "text": "Here is **Markdown** with code:\n\n```python\n"
                    "def answer():\n    return 42\n```\n\nAnd the end of the reply.",
                    "chunk": 6,
                    "delay_ms": 60,
                }
            ],
        },
        {
            "match": "use a tool",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo tool-output"}}]},
                {"text": "The tool said tool-output."},
            ],
        },
        {
            "match": "write a file",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "arguments": {"path": "greet.py", "content": FILE_TEXT},
                        }
                    ]
                },
                {"text": "Wrote `greet.py`."},
            ],
        },
        sleep_rule(SLEEP_SECONDS, SLEEP_MARKER),
        {
            "match": "headless",
            "replies": [
                {"text": "Followed from the browser, word by word.", "chunk": 4, "delay_ms": 80},
            ],
        },
        {
            "match": "leak the secret",
            "replies": [
                # Three characters per delta: the secret arrives split across deltas.
                {"text": f"The token is {SECRET} (oops).", "chunk": 3},
            ],
        },
        {"match": "*", "replies": [{"text": "Hello from the fake model."}]},
    ]
}


def test_the_token_moves_from_the_address_bar_into_memory(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    assert dashboard.token not in page.url
    assert "#token" not in page.url
    # The page works (it holds the token in memory): a session can be created and listed.
    send_prompt(page, "hello there")
    wait_turn_ended(page)
    assert "Hello from the fake model." in items(page, "message").first.inner_text()
    # Reloading loses the in-memory token: the page asks for the URL again.
    page.reload()
    page.wait_for_selector(".token-screen")
    screenshot(page, "token")
    page.locator(".token-screen input").fill(dashboard.url)
    page.locator(".token-screen button").click()
    page.wait_for_selector(".sessions li")


def test_a_prompt_streams_markdown_and_highlighted_code(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    send_prompt(page, "stream slowly please")
    # Part of the reply is shown while it streams ...
    streaming = page.locator('[data-kind="message"].streaming')
    streaming.wait_for()
    partial = streaming.inner_text()
    assert "And the end of the reply." not in partial
    # ... then all of it, rendered: bold text, a highlighted Python block.
    wait_turn_ended(page)
    message = items(page, "message").first
    assert "And the end of the reply." in message.inner_text()
    assert message.locator("strong").inner_text() == "Markdown"
    assert message.locator("pre code.language-python .hljs-keyword").first.inner_text() == "def"
    assert page.locator('[data-kind="message"].streaming').count() == 0


def test_a_tool_waits_for_approval_and_runs_once_allowed(
    place: Place, browser: BrowserContext
) -> None:
    running = Dashboard.start(place, env={"RAWTRIO_PERMISSION_MODE": "default"})
    try:
        page = open_page(browser, running)
        send_prompt(page, "use a tool")
        tool = page.locator('[data-kind="tool"][data-phase="awaiting_approval"]')
        tool.wait_for()
        assert "echo tool-output" in tool.inner_text()
        screenshot(page, "approval")
        tool.locator('button[data-decision="allow_once"]').click()
        done = page.locator('[data-kind="tool"][data-status="ok"]')
        done.wait_for()
        wait_turn_ended(page)
        done.locator(".tool-head").click()  # finished cards are collapsed: open it
        assert "tool-output" in done.locator('[data-part="result"]').inner_text()
        assert "allow once" in items(page, "approval").first.inner_text()
        assert "The tool said tool-output." in page.locator('[data-part="transcript"]').inner_text()
        # The answer was the server's: a second answer now is refused as already answered.
        session = current_session(page)
        history = running.api("GET", f"/api/sessions/{session}/history?order=oldest")
        answered = [e for e in history["events"] if e["type"] == "permission_answered"]
        assert [e["decision"] for e in answered] == ["allow_once"]
    finally:
        running.stop()


def test_a_file_edit_shows_its_diff_collapsed_until_opened(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    send_prompt(page, "write a file")
    wait_turn_ended(page)
    tool = page.locator('[data-kind="tool"][data-status="ok"]')
    assert tool.locator('[data-part="diff"]').count() == 0  # collapsed
    tool.locator(".tool-head").click()
    diff = tool.locator('[data-part="diff"]')
    assert "greet.py" in diff.inner_text()
    assert diff.locator(".dadd").count() == 2
    screenshot(page, "transcript")
    tool.locator(".tool-head").click()
    assert tool.locator('[data-part="diff"]').count() == 0


def test_cancel_stops_a_running_tool_and_leaves_no_process(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    send_prompt(page, "sleep a while")
    tool = page.locator('[data-kind="tool"][data-phase="running"]')
    tool.wait_for()
    tool.locator('[data-part="output"]').wait_for()
    wait_until(lambda: bool(processes_with(SLEEP_SECONDS)), "the tool's sleep started")
    assert processes_with(SLEEP_MARKER), "the tool's shell runs"
    # A prompt typed while the turn runs is queued, not sent.
    send_prompt(page, "hello after the cancel")
    assert "hello after the cancel" in page.locator('[data-part="queue"]').inner_text()
    screenshot(page, "running")
    page.locator("button.cancel").click()
    page.locator('[data-kind="tool"][data-status="cancelled"]').wait_for()
    page.locator('[data-kind="turn_end"][data-outcome="cancelled"]').wait_for()
    assert processes_with(SLEEP_MARKER) == []
    assert processes_with(SLEEP_SECONDS) == []
    # The queued prompt goes out once the cancelled turn ended.
    wait_turn_ended(page, 2)
    assert page.locator('[data-part="queue"]').count() == 0
    assert "Hello from the fake model." in items(page, "message").last.inner_text()


def test_a_reload_shows_the_history(dashboard: Dashboard, browser: BrowserContext) -> None:
    page = open_page(browser, dashboard)
    send_prompt(page, "use a tool")
    wait_turn_ended(page)
    session = current_session(page)
    page.close()
    # A new page (the token comes with the URL again) opens the last session from its history.
    again = open_page(browser, dashboard)
    again.locator('[data-kind="turn_end"]').wait_for()
    assert current_session(again) == session
    text = again.locator('[data-part="transcript"]').inner_text()
    assert "use a tool" in text
    assert "The tool said tool-output." in text
    assert again.locator('[data-kind="tool"][data-status="ok"]').count() == 1
    screenshot(again, "history")


def test_a_session_driven_by_a_headless_client_is_followed_live(
    place: Place, browser: BrowserContext
) -> None:
    running = Dashboard.start(place, host=True)
    try:
        page = open_page(browser, running)
        run = LiveRun.start(
            place.iso, "-p", "headless run", "--output-format", "stream-json", env=place.env()
        )
        try:
            # The run's session appears in the list and opens; its reply streams in.
            entry = page.locator(".sessions li", has_text="headless run")
            entry.wait_for()
            entry.locator(".s-open").click()
            page.locator('[data-kind="user"]', has_text="headless run").wait_for()
            page.locator('[data-kind="message"]', has_text="word by word").wait_for()
            wait_turn_ended(page)
            assert run.proc.wait(timeout=60) == 0
        finally:
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()
        screenshot(page, "sessions")
    finally:
        running.stop()


def test_the_session_list_searches(dashboard: Dashboard, browser: BrowserContext) -> None:
    page = open_page(browser, dashboard)
    send_prompt(page, "use a tool")
    wait_turn_ended(page)
    first = current_session(page)
    page.locator(".sidebar .new").click()
    page.wait_for_url(lambda url: "#s=" in url and not url.endswith(f"#s={first}"))
    expect(page.locator("[data-part=transcript] [data-kind]")).to_have_count(0)
    send_prompt(page, "write a file")
    wait_turn_ended(page)
    page.locator(".search").fill("greet")
    expect(page.locator(".sessions li")).to_have_count(1)
    assert "write a file" in page.locator(".sessions li").inner_text()


def storage_of(page: Page) -> str:
    """Everything the browser keeps for the page: local and session storage, cookies."""
    stored = page.evaluate(
        "() => JSON.stringify({local: {...localStorage}, session: {...sessionStorage},"
        " cookie: document.cookie})"
    )
    cookies = json.dumps(page.context.cookies())
    return f"{stored}\n{cookies}"


def config_text(python: str) -> str:
    """A secret variable, used (a variable is known to the redaction once a session
    resolves it: here for a hook's environment)."""
    return f"""
[variables.token]
value = "{SECRET}"
secret = true

[[hooks]]
event = "UserPromptSubmit"
command = [{json.dumps(python)}, "-c", "import sys; sys.stdin.read()"]
env = {{ TOKEN = {{ var = "token" }} }}
"""


def test_no_secret_reaches_the_page_the_stream_or_the_storage(
    place: Place, browser: BrowserContext, tmp_path: Path
) -> None:
    config = tmp_path / "rawtrio.toml"  # the one file that may hold it: the user wrote it
    config.write_text(config_text(sys.executable))
    running = Dashboard.start(place, "--config", str(config), env={"ANTHROPIC_API_KEY": API_KEY})
    try:
        page = open_page(browser, running)
        send_prompt(page, f"leak the secret {SECRET}")
        wait_turn_ended(page)
        session = current_session(page)
        page.reload()
        page.wait_for_selector(".token-screen")
        page.goto(running.url)
        page.locator('[data-kind="turn_end"]').wait_for()
        dom = page.content() + page.locator("body").inner_text()
        stream = running.raw_stream(session)
        stored = storage_of(page)
        assert "[redacted:token]" in dom
        for planted in (SECRET, API_KEY):
            assert planted not in dom
            assert planted not in stream
            assert planted not in stored
        # The token itself never leaves memory either.
        assert running.token not in stored
        assert running.token not in page.url
        assert re.search(r"rawtrio\.dashboard\.prefs", stored)
    finally:
        running.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_the_page_carries_on_after_the_server_restarts(
    place: Place, browser: BrowserContext
) -> None:
    port = str(free_port())
    first = Dashboard.start(place, "--dashboard-port", port, host=True)
    try:
        page = open_page(browser, first)
        send_prompt(page, "hello before the restart")
        wait_turn_ended(page)
        session = current_session(page)
    finally:
        first.stop()
    # The stream dropped: the page says so and keeps trying.
    page.locator('[data-part="reconnecting"]').wait_for()
    second = Dashboard.start(place, "--dashboard-port", port, host=True)
    try:
        assert second.token != first.token
        # The new server refuses the old token: the page asks for the new address, which
        # the user pastes into the same tab (only the fragment changes: no page load).
        page.locator(".token-screen").wait_for()
        page.evaluate("url => { location.href = url; }", second.url)
        page.locator('[data-part="connection"]', has_text="stored").wait_for()
        assert current_session(page) == session
        # The transcript it had is still there, once, and the session goes on.
        send_prompt(page, "use a tool")
        wait_turn_ended(page, 2)
        assert items(page, "user").count() == 2
        assert "The tool said tool-output." in items(page, "message").last.inner_text()
    finally:
        second.stop()


def test_the_header_renames_the_session_and_sets_its_mode(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    page = open_page(browser, dashboard)
    send_prompt(page, "hello there")
    wait_turn_ended(page)
    page.locator("h2.title").dblclick()
    title = page.get_by_label("Session title")
    title.fill("renamed from the page")
    title.press("Enter")
    page.locator(".sessions li", has_text="renamed from the page").wait_for()
    page.get_by_label("Permission mode").select_option("plan")
    page.locator('[data-kind="mode"]', has_text="plan").wait_for()
    detail = dashboard.api("GET", f"/api/sessions/{current_session(page)}")
    assert (detail["title"], detail["mode"]) == ("renamed from the page", "plan")


def test_a_title_being_typed_survives_the_page_redrawing(
    dashboard: Dashboard, browser: BrowserContext
) -> None:
    """The rename box keeps what the user typed when the page redraws before Enter (the
    session list refreshes every few seconds; any event redraws it). It used to be reset
    to the stored title by the redraw, so Enter renamed the session to its old title."""
    page = open_page(browser, dashboard)
    send_prompt(page, "hello there")
    wait_turn_ended(page)
    page.locator("h2.title").dblclick()
    title = page.get_by_label("Session title")
    title.fill("typed before a redraw")
    # Another front end changes the mode: its event redraws the page mid-edit.
    dashboard.api("POST", f"/api/sessions/{current_session(page)}/mode", {"mode": "plan"})
    page.locator('[data-kind="mode"]', has_text="plan").wait_for()
    expect(title).to_have_value("typed before a redraw")
    title.press("Enter")
    expect(page.locator("h2.title")).to_have_text("typed before a redraw")
    detail = dashboard.api("GET", f"/api/sessions/{current_session(page)}")
    assert detail["title"] == "typed before a redraw"


def test_a_long_session_opens_at_its_end_and_pages_back_on_demand(
    place: Place, browser: BrowserContext
) -> None:
    turns = 30  # 19 display events each: 570, of which the page asks for the newest 100
    place.state.mkdir(mode=0o700, parents=True, exist_ok=True)
    trio.run(build, place.state / "sessions.db", ["long"], turns, 6, Prose(3))
    running = Dashboard.start(place)
    try:
        page = open_page(browser, running, session="long")
        items(page, "turn_end").last.wait_for()
        shown = items(page, "turn_end").count()
        assert 0 < shown < turns
        older = page.locator("button.older")
        while older.count():
            older.click()
            page.wait_for_timeout(50)
        expect(items(page, "turn_end")).to_have_count(turns)
        expect(items(page, "user")).to_have_count(turns)
    finally:
        running.stop()
