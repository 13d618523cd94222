"""`/rewind` in the chat attached to a running host (tmux, a real `rawtrio serve`): the fork is
made in the host (`_rawtrio/sessions/fork` before the prompt's turn), the chat switches to
it with the prompt back in the editor, and the files are as before the prompt."""

from __future__ import annotations

import json
from typing import Any

from tests.checkpoints.helpers import picture
from tests.checkpoints.rewind_support import PROMPTS, make_small_project, scenario_three_turns
from tests.host.conftest import base_url, host, model, place
from tests.host.support import KEY, Client, HostProcess, Place
from tests.tui.support import Pane

__all__ = ["base_url", "host", "model", "place"]  # the host fixtures, with this SCENARIO
SCENARIO = scenario_three_turns()
ANSWERS = ("wrote a.txt", "changed a.txt and run.sh", "removed keep.txt")


def live_sessions(place: Place) -> list[dict[str, Any]]:
    client = Client.connect(place.paths.socket)
    try:
        client.initialize()
        found: list[dict[str, Any]] = client.result("_rawtrio/host/status", {})["sessions"]
        return found
    finally:
        client.close()


def user_texts(place: Place, sid: str) -> list[str]:
    shown = place.rawtrio("sessions", "export", "--format", "json", sid)
    assert shown.returncode == 0, shown.stderr
    return [m["text"] for m in json.loads(shown.stdout)["context"] if m["role"] == "user"]


def test_rewind_in_the_attached_chat_forks_in_the_host(place: Place, host: HostProcess) -> None:
    make_small_project(place.iso.cwd)
    env = {
        "XDG_RUNTIME_DIR": str(place.runtime),
        "RAWTRIO_STATE_DIR": str(place.state),
        "ANTHROPIC_API_KEY": KEY,
        "RAWTRIO_PERMISSION_MODE": "bypass",
    }
    pane = Pane.start(place.iso, "--base-url", place.base_url, env=env)
    try:
        pane.wait_for("ready │", "the session is open")
        [live] = live_sessions(place)  # the chat's session lives in the host
        source = live["id"]
        pictures = []
        for text, answer in zip(PROMPTS, ANSWERS, strict=True):
            pictures.append(picture(place.iso.cwd))
            pane.type(text)
            pane.keys("Enter")
            pane.wait_for(answer)
            pane.wait_for("ready │")
        pane.type("/rewind")
        pane.keys("Enter")
        pane.wait_for("back to just before which prompt?")
        pane.keys("Down")
        pane.keys("Enter")  # prompt 2
        pane.wait_for("what goes back?")
        pane.keys("Enter")  # files and conversation
        screen = pane.wait_for("rewound to prompt 2: conversation forked as")
        assert "4 files restored" in screen
        pane.wait_for(lambda s: "› second change" in s, "the prompt back in the editor")
        assert picture(place.iso.cwd) == pictures[1]
        # The chat moved to the fork, in the host (the source, left, closes once idle).
        [now] = [s for s in live_sessions(place) if s["clients"] == 1]
        fork = now["id"]
        assert fork != source
        assert user_texts(place, fork) == ["first change"]
        assert user_texts(place, source) == list(PROMPTS)
    finally:
        pane.close()
