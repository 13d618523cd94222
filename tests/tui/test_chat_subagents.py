"""A `task` call's child in the full-screen chat (tmux, the fake model server): a live,
nested block under the call's line that collapses and expands with the call, is marked
cancelled by Ctrl-C, names itself in its permission prompts, and comes back on resume."""

from __future__ import annotations

import re

from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation, alive, wait_until
from tests.tui.support import Pane, descendants_of
from tests.tui.test_chat import KEYS, chat_args

QUICK = "└ subagent (quick job): 1 tool, ✓ done"
SLOW = "└ subagent (slow job): 1 tool, "


def lines_with(screen: str, text: str) -> list[str]:
    return [line for line in screen.splitlines() if text in line]


def test_the_child_block_is_live_nested_expandable_and_cancelled_by_ctrl_c(
    iso: Isolation, chat_model: FakeModel
) -> None:
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        pane.wait_for("ready │", "the session is open")
        pane.type("delegate a quick job")
        pane.keys("Enter")
        screen = pane.wait_for("The subagent finished.")
        screen = pane.wait_for("ready │")
        assert "✓ task quick job" in screen
        assert QUICK in screen  # collapsed: one line under the call
        assert "echo child-output" not in screen

        pane.keys("M-Up")  # select the task call; Enter expands its child with its details
        pane.wait_for("▸ ✓ task quick job", "the task call selected")
        pane.keys("Enter")
        screen = pane.wait_for("✓ bash echo child-output", "the child's tool line")
        [tool_line] = lines_with(screen, "✓ bash echo child-output")
        [summary] = lines_with(screen, QUICK)
        assert tool_line.index("✓") > summary.index("└")  # inside the block, indented
        assert "prompt: child echoes" in screen
        assert "The child echoed." in screen
        pane.keys("Enter")  # collapsed again
        screen = pane.wait_for(lambda s: "echo child-output" not in s, "the block collapsed")
        assert QUICK in screen
        pane.keys("Escape")  # deselect (before typing: ESC and a letter read as Alt-letter)
        pane.wait_for(lambda s: "▸" not in s, "the call deselected")

        chat = pane.chat_process()
        pane.type("delegate the slow job")
        pane.keys("Enter")
        # Live while the child runs, collapsed: what it runs now on the summary line.
        screen = pane.wait_for(
            lambda s: SLOW in s and "running…" in s and "bash echo child-started" in s,
            "the running child's summary",
        )
        wait_until(lambda: len(descendants_of(chat)) >= 1, "the child's command starts")
        procs = descendants_of(chat)
        pane.keys("C-o")  # every call's details: the child's lines show, its call running
        screen = pane.wait_for(
            lambda s: any(
                "bash echo child-started; sleep 60" in line and "running" in line
                for line in s.splitlines()
                if not line.lstrip().startswith("└")
            ),
            "the child's running tool line inside its block",
        )
        assert "Sleeping a minute." in screen  # the child's text, inside
        pane.keys("C-c")
        screen = pane.wait_for("turn cancelled: cancelled by the user (Ctrl-C)")
        screen = pane.wait_for(SLOW + "✂ cancelled", "the child block marked cancelled")
        assert "✂ task slow job" in screen
        [cut] = lines_with(screen, "bash echo child-started; sleep 60")
        assert "✂" in cut
        assert "cancelled" in cut
        wait_until(lambda: alive(procs) == [], "the child's processes end")
        pane.wait_for("ready │")
        pane.keys("C-d")
        assert pane.wait_ended() == 0
        found = re.search(r"rawtrio --resume ([0-9a-f]{32})", pane.scrollback())
        assert found, pane.scrollback()
        session_id = found.group(1)
    finally:
        pane.close()

    # Resumed: the history shows the calls, their results and the children's blocks.
    resumed = Pane.start(iso, *chat_args(chat_model, "--resume", session_id), env=KEYS, name="re")
    try:
        screen = resumed.wait_for(SLOW + "✂ cancelled", "the cancelled child, resumed")
        assert "✂ task slow job" in screen
        resumed.wait_for("ready │")
        resumed.keys("C-o")
        screen = resumed.wait_for("✓ bash echo child-output", "the quick child's tool line")
        assert "The child echoed." in screen
        resumed.keys("C-d")
        assert resumed.wait_ended() == 0
    finally:
        resumed.close()


def test_a_childs_permission_prompt_names_the_child(iso: Isolation, chat_model: FakeModel) -> None:
    pane = Pane.start(
        iso, *chat_args(chat_model), env={**KEYS, "RAWTRIO_PERMISSION_MODE": "default"}
    )
    try:
        pane.wait_for("ready │")
        pane.type("delegate a quick job")
        pane.keys("Enter")
        screen = pane.wait_for("[y] allow once", "a permission prompt")
        if "Allow task?" in screen:  # the `task` call itself asks first: allow it
            pane.keys("y")
        screen = pane.wait_for("$ echo child-output", "the child's bash asks")
        assert "asked by subagent (quick job)" in screen
        assert "[y] allow once" in screen
        pane.keys("y")
        screen = pane.wait_for("The subagent finished.")
        assert QUICK in screen
        pane.wait_for("ready │")
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()
