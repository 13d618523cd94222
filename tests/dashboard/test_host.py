"""`rawtrio serve --dashboard`: the dashboard on the host's runtime, so a session a
terminal, a headless run or an editor drives through the host is followed live from the
browser, and the first answer to a permission request wins across front ends."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rawtrio.testing.fake_model import FakeModelServer
from tests.dashboard.support import Dashboard
from tests.headless.support import Isolation, LiveRun
from tests.host.support import Client, HostProcess, Place, short_runtime_dir


@pytest.fixture
def place(tmp_path: Path, model: FakeModelServer) -> Iterator[Place]:
    with short_runtime_dir() as runtime:
        yield Place(Isolation(tmp_path), runtime, model.base_url)


@pytest.fixture
def host(place: Place) -> Iterator[tuple[HostProcess, Dashboard]]:
    proc = HostProcess.start(place, "--idle-exit", "0", "--dashboard")
    try:
        proc.wait_registered()
        dash = Dashboard.from_log(proc.log, proc.proc)
        try:
            yield proc, dash
        finally:
            dash.client.close()
    finally:
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.wait_exit() == 0, proc.output()
        assert "Traceback" not in proc.output(), proc.output()
        assert not (place.state / "dashboard.json").exists()


def test_the_host_serves_the_dashboard_and_says_where(
    place: Place, host: tuple[HostProcess, Dashboard]
) -> None:
    _proc, dash = host
    assert dash.ok("GET", "/api/bootstrap")["mode"] == "host"
    saved = json.loads((place.state / "dashboard.json").read_text())
    assert saved["url"] == f"{dash.url}/#token={dash.token}"
    assert (place.state / "dashboard.json").stat().st_mode & 0o777 == 0o600
    status = place.rawtrio("serve", "--status")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["status"]["dashboard"] == dash.url
    assert dash.token not in status.stdout


def test_a_session_driven_through_the_host_is_followed_live(
    place: Place, host: tuple[HostProcess, Dashboard]
) -> None:
    _, dash = host
    client = Client.connect(place.paths.socket)
    try:
        client.initialize()
        sid = client.start(place, flags={"base_url": place.base_url})["sessionId"]
        listed = dash.ok("GET", "/api/sessions")["sessions"]
        assert [s["live"] for s in listed if s["id"] == sid] == [True]
        with dash.stream(sid) as stream:
            assert stream.wait_event("hello").data["live"] is True
            client.result("_rawtrio/session/submit", {"sessionId": sid, "text": "use a tool"})
            stream.wait_event("turn_ended")
            seen = stream.events()
        client.wait_event("turn_ended")
        assert seen == client.events
        assert next(e["type"] for e in seen) == "user_message"
        assert "tool_call_finished" in [e["type"] for e in seen]
    finally:
        client.close()


def test_the_first_answer_wins_across_front_ends(
    place: Place, host: tuple[HostProcess, Dashboard]
) -> None:
    _, dash = host
    client = Client.connect(place.paths.socket)
    try:
        client.initialize()
        env = {**place.client_env(), "RAWTRIO_PERMISSION_MODE": "default"}
        flags = {"base_url": place.base_url}
        sid = client.start(place, env=env, flags=flags, headless=False, approves=True)["sessionId"]
        with dash.stream(sid) as stream:
            stream.wait_event("hello")
            client.result("_rawtrio/session/submit", {"sessionId": sid, "text": "use a tool"})
            asked = stream.wait_event("permission_requested").data
            path = f"/api/sessions/{sid}/permissions/{asked['request_id']}"
            dash.ok("POST", path, json={"decision": "deny", "message": "not now"})
            late = client.call(
                "_rawtrio/session/answer_permission",
                {"sessionId": sid, "requestId": asked["request_id"],
                 "decision": {"kind": "allow_once"}},
            )  # fmt: skip
            assert late["error"]["data"]["kind"] == "ApprovalAlreadyResolved"
            finished = stream.wait_event("tool_call_finished").data
            assert finished["status"] == "denied"
            assert finished["denied_by"] == "user"
            stream.wait_event("turn_ended")
    finally:
        client.close()


def test_a_headless_run_on_the_host_is_seen_and_cancelled_from_the_page(
    place: Place, host: tuple[HostProcess, Dashboard]
) -> None:
    _, dash = host
    run = LiveRun.start(
        place.iso, "-p", "sleep a while", "--output-format", "stream-json", "--attach",
        env=place.env(),
    )  # fmt: skip
    try:
        started = run.wait_for_event("tool_call_started")
        sid = started["session_id"]
        with dash.stream(sid, last_event_id=0) as stream:
            stream.wait_event("tool_call_started")
            assert dash.ok("POST", f"/api/sessions/{sid}/cancel") == {"cancelled": True}
            ended = stream.wait_event("turn_ended").data
        assert ended["outcome"] == "cancelled"
        result = run.finish()
        assert result.returncode != 0
    finally:
        if run.proc.poll() is None:
            run.kill()


def test_an_open_page_keeps_the_host_from_idling_out(place: Place) -> None:
    proc = HostProcess.start(place, "--idle-exit", "3", "--dashboard")
    try:
        proc.wait_registered()
        dash = Dashboard.from_log(proc.log, proc.proc)
        try:
            sid = dash.new_session(place.iso.cwd)["id"]
            with dash.stream(sid) as stream:
                stream.wait_event("hello")
                time.sleep(9)  # three idle timeouts: a page is a client
                assert proc.proc.poll() is None, proc.output()
        finally:
            dash.client.close()
        assert proc.wait_exit() == 0  # once the page left, the idle timer ends it
        assert "idle for 3 s" in proc.output()
    finally:
        if proc.proc.poll() is None:
            proc.kill()
