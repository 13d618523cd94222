"""The trust prompt of the chat attached to a running host (`rawtrio serve`), in a real
terminal (tmux): the chat asks, records the answer in the trust store it shares with the
host, and the host's session runs the trusted project's hook in its first turn."""

from __future__ import annotations

import json

from tests.host.conftest import base_url, host, model, place
from tests.host.support import KEY, HostProcess, Place
from tests.tui.support import Pane

__all__ = ["base_url", "host", "model", "place"]  # the host tests' fixtures, used here


def test_the_attached_chat_asks_and_the_host_runs_the_trusted_hook(
    place: Place, host: HostProcess
) -> None:
    cwd = place.iso.cwd
    place.iso.env()  # makes the folders
    marker = place.iso.root / "marker"
    settings = cwd / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    hook = {"type": "command", "command": f"echo host-hook >> {marker}"}
    settings.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}),
        encoding="utf-8",
    )
    env = {
        "XDG_RUNTIME_DIR": str(place.runtime),
        "RAWTRIO_STATE_DIR": str(place.state),
        "ANTHROPIC_API_KEY": KEY,
        "RAWTRIO_PERMISSION_MODE": "bypass",
    }
    pane = Pane.start(place.iso, "--base-url", place.base_url, env=env)
    try:
        screen = pane.wait_for("[t] trust and remember", "the trust dialog")
        assert "hook PreToolUse Bash: echo host-hook >>" in screen
        pane.keys("t")
        pane.wait_for("ready │", "the host's session is open")
        pane.type("use a tool")
        pane.keys("Enter")
        pane.wait_for("The tool said tool-output.")
        assert marker.read_text() == "host-hook\n"  # run by the host, in the first turn
        folders = json.loads((place.state / "trust.json").read_text())["folders"]
        assert str(settings.resolve()) in folders
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()
