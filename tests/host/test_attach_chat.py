"""The terminal chat attached to a running host, in a real terminal (tmux): it shows the
model's answer, asks for approval and takes the answer, and a turn started in either front
end is seen and cancelled from the other (the chat's Ctrl-C through
`_rawtrio/session/cancel`); `--no-attach` keeps it in its own process."""

from __future__ import annotations

from typing import Any

from tests.host.support import KEY, Client, HostProcess, Place
from tests.tui.support import Pane


def _chat(place: Place, *args: str, mode: str = "default") -> Pane:
    env = {
        "XDG_RUNTIME_DIR": str(place.runtime),
        "RAWTRIO_STATE_DIR": str(place.state),
        "ANTHROPIC_API_KEY": KEY,
        "RAWTRIO_PERMISSION_MODE": mode,
    }
    return Pane.start(place.iso, "--base-url", place.base_url, *args, env=env)


def _status(place: Place) -> dict[str, Any]:
    client = Client.connect(place.paths.socket)
    try:
        client.initialize()
        status: dict[str, Any] = client.result("_rawtrio/host/status", {})
        return status
    finally:
        client.close()


def test_the_attached_chat_answers_approves_and_cancels_both_ways(
    place: Place, host: HostProcess
) -> None:
    pane = _chat(place)
    try:
        pane.wait_for("ready │", "the session is open")
        [live] = _status(place)["sessions"]  # the chat's session lives in the host
        sid = live["id"]
        assert live["clients"] == 1

        pane.type("say hello")
        pane.keys("Enter")
        pane.wait_for("Hello from the fake model.")

        pane.type("use a tool")  # default mode: the host asks, the chat answers
        pane.keys("Enter")
        screen = pane.wait_for("[y] allow once")
        assert "$ echo tool-output" in screen
        pane.keys("y")
        pane.wait_for("The tool said tool-output.")
        assert "✓ bash" in pane.screen()

        pane.type("/mode bypass")
        pane.keys("Enter")
        pane.wait_for("mode bypass", "the mode switched in the host")

        other = Client.connect(place.paths.socket)
        try:
            other.initialize()
            other.start(place, choice={"resume": sid}, headless=False)
            # A turn of the chat, cancelled by the other front end.
            pane.type("sleep a while")
            pane.keys("Enter")
            started = other.wait_event("tool_call_started")
            other.notify("_rawtrio/session/cancel", {"sessionId": sid, "reason": "received SIGINT"})
            pane.wait_for("turn cancelled: received SIGINT")
            ended = other.wait_until(
                lambda e: e["type"] == "turn_ended" and e["turn_id"] == started["turn_id"]
            )
            assert ended["outcome"] == "cancelled"
            pane.wait_for("ready │", "the chat is idle again")

            # A turn of the other front end, shown in the chat and cancelled by its Ctrl-C.
            turn = other.result(
                "_rawtrio/session/submit", {"sessionId": sid, "text": "sleep a while"}
            )
            pane.wait_for(lambda s: "working" in s and "bash" in s, "the other's turn runs")
            pane.keys("C-c")
            ended = other.wait_until(
                lambda e: e["type"] == "turn_ended" and e["turn_id"] == turn["turnId"]
            )
            assert ended["outcome"] == "cancelled"
            assert ended["reason"] == "cancelled by the user (Ctrl-C)"
            pane.wait_for("turn cancelled: cancelled by the user (Ctrl-C)")
        finally:
            other.close()

        pane.wait_for("ready │")
        pane.keys("C-c")  # idle: as a local chat, twice leaves
        pane.wait_for("press Ctrl-C again to exit")
        pane.keys("C-c")
        assert pane.wait_ended() == 0
        before, after = pane.stty()
        assert before == after
        assert f"rawtrio --resume {sid}" in pane.scrollback()
    finally:
        pane.close()


def test_no_attach_keeps_the_chat_in_its_own_process(place: Place, host: HostProcess) -> None:
    pane = _chat(place, "--no-attach")
    try:
        pane.wait_for("ready │", "the session is open")
        pane.type("say hello")
        pane.keys("Enter")
        pane.wait_for("Hello from the fake model.")
        status = _status(place)
        assert status["sessions"] == []  # nothing of it in the host
        assert status["clients"] == 1  # the status query itself
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()
