"""A real `rawtrio serve --dashboard` in a subprocess and Debian's headless Chromium driven
by Playwright (the sync API: these tests are plain functions, the server and the fake model
run outside the test's thread).

The browser is the system's `/usr/bin/chromium` (installed by `make chromium` under CI),
never one Playwright downloads; it starts with the flags that keep it off the network (no
component updates, no sync, no QUIC, no background requests) and a fresh profile per test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from tests.headless.support import LIVENESS_S, rawtrio_argv
from tests.host.support import Place

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Locator, Page, Playwright

CHROMIUM = Path("/usr/bin/chromium")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "dashboard"

#: Keep the browser off the (closed) network: without these Chromium keeps trying to reach
#: update, sync and safe-browsing services.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--metrics-recording-only",
    "--no-default-browser-check",
]

#: Playwright's own liveness bound for one wait, in ms (never a performance assert).
WAIT_MS = LIVENESS_S * 1000


@contextlib.contextmanager
def open_browser(playwright: Playwright, profile: Path) -> Iterator[BrowserContext]:
    """A fresh Chromium profile (`profile` must be an empty folder)."""
    context = playwright.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM),
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 800},
        service_workers="block",
    )
    context.set_default_timeout(WAIT_MS)
    try:
        yield context
    finally:
        context.close()


@dataclass
class Dashboard:
    """A running dashboard server and where its page is: `rawtrio dashboard` (standalone,
    its own runtime) or, with `host=True`, `rawtrio serve --dashboard` (on the host that
    headless runs and editors attach to)."""

    proc: subprocess.Popen[bytes]
    log: Path
    url: str
    token: str

    @property
    def origin(self) -> str:
        return self.url.split("/#", 1)[0]

    @classmethod
    def start(
        cls,
        place: Place,
        *args: str,
        host: bool = False,
        env: dict[str, str] | None = None,
    ) -> Dashboard:
        state_file = place.state / "dashboard.json"
        with contextlib.suppress(FileNotFoundError):
            state_file.unlink()
        argv = (
            rawtrio_argv("serve", "--dashboard", "--idle-exit", "0", *args)
            if host
            else rawtrio_argv("dashboard", *args)
        )
        log = place.iso.root / f"dashboard-{time.monotonic_ns()}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv,
                cwd=place.iso.cwd,
                env=place.env(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        deadline = time.monotonic() + LIVENESS_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited {proc.returncode}: {log.read_text()}")
            with contextlib.suppress(FileNotFoundError, ValueError):
                info = json.loads(state_file.read_text())
                if info.get("pid") == proc.pid:
                    return cls(proc, log, info["url"], info["token"])
            time.sleep(0.05)
        proc.kill()
        raise AssertionError(f"the dashboard did not start within {LIVENESS_S} s")

    def stop(self) -> None:
        """SIGTERM, which it must survive cleanly (exit 0)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=LIVENESS_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise AssertionError(f"the server ignored SIGTERM: {self.log.read_text()}") from None
        assert code == 0, f"the server exited {code}: {self.log.read_text()}"

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """One API call with the token (for checks a page cannot make)."""
        import httpx2

        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx2.Client(base_url=self.origin, timeout=LIVENESS_S) as client:
            answer = client.request(method, path, headers=headers, json=body)
            answer.raise_for_status()
            return answer.json() if answer.content else None

    def raw_stream(self, session_id: str, after: int = 0) -> str:
        """The session's event stream from `after` up to now, as the bytes the page gets."""
        import httpx2

        headers = {"Authorization": f"Bearer {self.token}", "Last-Event-ID": str(after)}
        last = self.api("GET", f"/api/sessions/{session_id}")["last_seq"]
        out: list[str] = []
        with (
            httpx2.Client(base_url=self.origin, timeout=LIVENESS_S) as client,
            client.stream("GET", f"/api/sessions/{session_id}/events", headers=headers) as r,
        ):
            assert r.status_code == 200, r.status_code
            for line in r.iter_lines():
                out.append(line)
                if line == f"id: {last}" or (last <= after and line.startswith("event: hello")):
                    break
        return "\n".join(out)


def open_page(context: BrowserContext, dashboard: Dashboard, session: str | None = None) -> Page:
    page = context.new_page()
    url = dashboard.url + (f"&s={session}" if session else "")
    page.goto(url)
    page.wait_for_selector(".layout")
    return page


def current_session(page: Page) -> str:
    match = re.search(r"#s=([^&]+)", page.url)
    assert match, page.url
    return match.group(1)


def send_prompt(page: Page, text: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(text)
    box.press("Enter")


def items(page: Page, kind: str) -> Locator:
    """The transcript's items of one kind (`user`, `message`, `tool`, `compaction`, …)."""
    return page.locator(f'[data-part="transcript"] [data-kind="{kind}"]')


def wait_turn_ended(page: Page, count: int = 1) -> None:
    """Until the transcript shows `count` turn endings. (Locators, not `wait_for_function`:
    that evaluates a string, which the page's CSP forbids, as it should.)"""
    page.locator('[data-kind="turn_end"]').nth(count - 1).wait_for()


def screenshot(page: Page, name: str) -> None:
    """A picture of a main view for docs/dashboard/ (made by every run, committed)."""
    DOCS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS / f"{name}.png"))


def processes_with(marker: str) -> list[psutil.Process]:
    """This user's running processes whose command line holds `marker`."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(marker in part for part in p.info["cmdline"] or ()) and p.pid != os.getpid():
                found.append(p)
    return found


def sleep_rule(seconds: str, marker: str) -> dict[str, Any]:
    """A scenario rule: "sleep a while" runs `sleep SECONDS` in bash, then says "slept".
    Distinct `seconds` and `marker` per test file find (or miss) its processes by name."""
    command = f"echo started; sleep {seconds}; echo {marker}"
    return {
        "match": "sleep a while",
        "replies": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": "slept"},
        ],
    }
