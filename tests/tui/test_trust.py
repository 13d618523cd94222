"""The trust question the chats ask before an untrusted project's files take effect: the
full-screen chat's dialog and the line chat's y/n/q question, in a real terminal (tmux)
against the fake model server. The project's `.claude/settings.json` holds a PreToolUse
hook that appends to a marker file; the "use a tool" prompt makes the model call `bash`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation
from tests.tui.support import Pane

KEYS = {"ANTHROPIC_API_KEY": "test-key"}


def chat_args(fake: FakeModel, *extra: str) -> list[str]:
    return ["--base-url", fake.base_url, "--sigterm-grace", "0.2", *extra]


def hooked_project(iso: Isolation, marker_text: str = "hook-ran") -> tuple[Path, Path]:
    """The project's `.claude/settings.json` (a hook on Bash) and the hook's marker file."""
    iso.env()  # makes the folders
    marker = iso.root / "marker"
    settings = iso.cwd / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": f"echo {marker_text} >> {marker}"}
    settings.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}),
        encoding="utf-8",
    )
    return settings, marker


def trust_store(iso: Isolation) -> dict[str, object]:
    path = iso.home / ".local" / "state" / "rawtrio" / "trust.json"
    if not path.exists():
        return {}
    folders = json.loads(path.read_text(encoding="utf-8"))["folders"]
    assert isinstance(folders, dict)
    return folders


def test_trusting_in_the_dialog_runs_the_hook_in_the_first_turn_and_is_recorded(
    iso: Isolation, chat_model: FakeModel
) -> None:
    settings, marker = hooked_project(iso)
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        screen = pane.wait_for("[t] trust and remember", "the trust dialog")
        assert ".claude/settings.json  (hooks)" in screen, screen  # relative to the cwd
        assert "hook PreToolUse Bash: echo hook-ran >>" in screen, screen
        assert "ready │" not in screen  # asked before the session opens
        pane.keys("t")
        pane.wait_for("ready │", "the session is open")
        assert "trust and remember" not in pane.screen()
        pane.type("use a tool")
        pane.keys("Enter")
        pane.wait_for("The tool said tool-output.")
        assert marker.read_text() == "hook-ran\n"
        assert str(settings.resolve()) in trust_store(iso)
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()

    # Trusted now: the next start asks nothing.
    again = Pane.start(iso, *chat_args(chat_model), env=KEYS, name="again")
    try:
        screen = again.wait_for("ready │")
        assert "trust and remember" not in screen
        again.keys("C-d")
        assert again.wait_ended() == 0
    finally:
        again.close()


def test_continuing_without_them_leaves_the_hook_out_and_asks_again_next_time(
    iso: Isolation, chat_model: FakeModel
) -> None:
    _, marker = hooked_project(iso)
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        pane.wait_for("[c] continue without them", "the trust dialog")
        pane.keys("c")
        screen = pane.wait_for("ready │")
        assert "rawtrio: .claude/settings.json defines hooks" in screen  # the notice stays
        pane.type("use a tool")
        pane.keys("Enter")
        pane.wait_for("The tool said tool-output.")
        assert not marker.exists()
        assert trust_store(iso) == {}
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()

    again = Pane.start(iso, *chat_args(chat_model), env=KEYS, name="again")
    try:
        again.wait_for("[t] trust and remember", "asked again")
        again.keys("q")  # quit: the chat leaves without opening a session
        assert again.wait_ended() == 0
        assert trust_store(iso) == {}
    finally:
        again.close()


def test_a_changed_file_is_asked_about_again(iso: Isolation, chat_model: FakeModel) -> None:
    _, marker = hooked_project(iso)
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        pane.wait_for("[t] trust and remember")
        pane.keys("t")
        pane.wait_for("ready │")
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()

    hooked_project(iso, marker_text="changed-hook")
    again = Pane.start(iso, *chat_args(chat_model), env=KEYS, name="again")
    try:
        screen = again.wait_for("[t] trust and remember", "asked again after the change")
        assert "echo changed-hook" in screen
        again.keys("Escape")  # Esc: continue without them
        again.wait_for("ready │")
        again.type("use a tool")
        again.keys("Enter")
        again.wait_for("The tool said tool-output.")
        assert not marker.exists()
        again.keys("C-d")
        assert again.wait_ended() == 0
    finally:
        again.close()


def test_the_line_chat_asks_a_y_n_q_question(iso: Isolation, chat_model: FakeModel) -> None:
    settings, marker = hooked_project(iso)
    pane = Pane.start(iso, *chat_args(chat_model, "--plain"), env=KEYS)
    try:
        screen = pane.wait_for("[y] trust and remember", "the line chat's question")
        assert ".claude/settings.json (hooks)" in screen, screen  # relative to the cwd
        assert "hook PreToolUse Bash: echo hook-ran" in screen
        pane.type("y")
        pane.keys("Enter")
        pane.wait_for("Ctrl-D or Ctrl-C twice exits", "the line chat's prompt")
        pane.type("use a tool")
        pane.keys("Enter")
        pane.wait_for("The tool said tool-output.")
        assert marker.read_text() == "hook-ran\n"
        assert str(settings.resolve()) in trust_store(iso)
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()
