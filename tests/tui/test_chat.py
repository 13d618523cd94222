"""The full-screen chat in a real terminal (tmux), against the fake model server."""

from __future__ import annotations

import contextlib
import re
import signal
import time
from collections.abc import Iterator

import psutil

from rawtrio.tui.app import DOUBLE_CTRL_C_S
from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation, alive, wait_until
from tests.tui.support import Pane, descendants_of

KEYS = {"ANTHROPIC_API_KEY": "test-key"}


def chat_args(fake: FakeModel, *extra: str) -> list[str]:
    return ["--base-url", fake.base_url, "--sigterm-grace", "0.2", *extra]


def test_stream_cancel_a_tool_with_ctrl_c_leave_and_resume(
    iso: Isolation, chat_model: FakeModel
) -> None:
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        pane.wait_for("ready │", "the session is open")
        pane.type("say hello")
        pane.keys("Enter")
        screen = pane.wait_for("return 42")  # the end of the reply
        assert "Hello from the fake model." in screen  # Markdown, markers gone
        assert "**" not in screen
        assert "• first item" in screen
        assert "```" not in screen

        chat = pane.chat_process()
        pane.type("sleep with a grandchild")
        pane.keys("Enter")
        pane.wait_for(lambda s: "bash sh -c" in s and "running" in s, "a running tool line")
        wait_until(lambda: len(descendants_of(chat)) >= 3, "the tool's processes start")
        tool_procs = descendants_of(chat)
        pane.type("say hello again")  # typed during the turn: queued
        pane.keys("Enter")
        pane.wait_for("queued: say hello again")
        pane.keys("C-c")
        screen = pane.wait_for("turn cancelled: cancelled by the user (Ctrl-C)")
        assert "✂ bash" in screen
        assert "cancelled" in screen
        wait_until(lambda: alive(tool_procs) == [], "the tool's processes end")
        # After a cancel the queued prompt is not sent: it is back in the input box.
        screen = pane.wait_for("ready │", "the chat is idle again")
        assert "› say hello again" in screen
        assert "queued:" not in screen
        pane.keys("C-u")

        pane.type("some draft")
        pane.keys("C-c")  # at the prompt: clears the input
        pane.wait_for("press Ctrl-C again to exit")
        assert "some draft" not in pane.screen()
        pane.keys("C-c")  # twice within 2 s: leave
        assert pane.wait_ended() == 0
        before, after = pane.stty()
        assert before == after  # the terminal is restored (Ctrl-C is ^C again, echo, …)
        assert "intr = ^C" in after
        found = re.search(r"rawtrio --resume ([0-9a-f]{32})", pane.scrollback())
        assert found, pane.scrollback()
        session_id = found.group(1)
        assert not alive([chat]), "rawtrio is still running"
        assert alive(tool_procs) == []
    finally:
        pane.close()

    resumed = Pane.start(iso, *chat_args(chat_model, "--resume", session_id), env=KEYS, name="re")
    try:
        screen = resumed.wait_for("turn cancelled: cancelled by the user (Ctrl-C)")
        assert "Hello from the fake model." in screen
        assert "› sleep with a grandchild" in screen
        resumed.wait_for("ready │")
        resumed.keys("C-d")  # on an empty prompt: leave
        assert resumed.wait_ended() == 0
    finally:
        resumed.close()


def test_permission_prompt_allow_then_sigint_while_it_is_open(
    iso: Isolation, chat_model: FakeModel
) -> None:
    pane = Pane.start(
        iso, *chat_args(chat_model), env={**KEYS, "RAWTRIO_PERMISSION_MODE": "default"}
    )
    try:
        pane.wait_for("ready │")
        pane.type("use a tool")
        pane.keys("Enter")
        screen = pane.wait_for("[y] allow once")
        assert "$ echo tool-output" in screen
        pane.keys("y")
        pane.wait_for("The tool said tool-output.")
        assert "✓ bash" in pane.screen()

        pane.type("use a tool again")
        pane.keys("Enter")
        pane.wait_for("[y] allow once")
        chat = pane.chat_process()
        chat.send_signal(signal.SIGINT)  # a real SIGINT, not the key
        screen = pane.wait_for("turn cancelled")
        assert "permission: cancelled" in screen
        assert "[y] allow once" not in screen  # the modal is gone
        pane.keys("C-c")
        pane.keys("C-c")
        assert pane.wait_ended() == 0
        before, after = pane.stty()
        assert before == after
        assert not alive([chat])
    finally:
        pane.close()


def test_first_run_shows_the_guide_and_the_demo_works_offline(iso: Isolation) -> None:
    pane = Pane.start(iso)  # no API key, no config
    try:
        screen = pane.wait_for("no model is configured yet")
        assert "ANTHROPIC_API_KEY" in screen
        assert "OPENAI_API_KEY" in screen
        pane.wait_for("› /demo")  # pre-filled
        pane.keys("Enter")
        pane.wait_for("rawtrio demo")
        pane.wait_for("ready │")
        pane.keys("Enter")  # the first suggested prompt
        pane.wait_for("Welcome to the rawtrio demo")
        pane.wait_for("Ctrl-C twice")
        pane.wait_for(lambda s: "ready │" in s and "› Look around" in s, "the next prompt")
        pane.keys("C-u")
        pane.type("Run the slow test suite")  # the last demo prompt: runs without asking
        pane.keys("Enter")
        pane.wait_for(lambda s: "bash for i in" in s and "running" in s, "the command runs")
        pane.keys("C-c")
        pane.wait_for("turn cancelled: cancelled by the user (Ctrl-C)")
        pane.wait_for("ready │")
        pane.keys("C-c")
        pane.keys("C-c")
        assert pane.wait_ended() == 0
        chat_left = [p for p in psutil.process_iter() if "rawtrio-demo" in " ".join(_cmd(p))]
        assert chat_left == []
    finally:
        pane.close()


def _cmd(p: psutil.Process) -> list[str]:
    try:
        return list(p.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []


def test_slash_commands_new_sessions_picker_mode_and_cost(
    iso: Isolation, chat_model: FakeModel
) -> None:
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        pane.wait_for("ready │")
        pane.type("say hello")
        pane.keys("Enter")
        pane.wait_for("return 42")
        pane.wait_for("ready │")  # the turn has ended: /new is refused while it runs
        pane.type("/new")
        pane.keys("Enter")
        screen = pane.wait_for("  new session ")
        assert "Hello from the fake model." not in screen
        pane.type("/ses")
        pane.keys("Tab")  # completes the command
        pane.wait_for("› /sessions")
        pane.keys("Enter")
        pane.wait_for("sessions (Enter resumes, Esc closes)")
        pane.keys("Enter")  # the only other session: the first one
        screen = pane.wait_for("resumed session")
        assert "Hello from the fake model." in screen
        pane.type("/mode plan")
        pane.keys("Enter")
        pane.wait_for("permission mode: plan")
        pane.wait_for("mode plan")  # the status bar
        pane.type("/cost")
        pane.keys("Enter")
        pane.wait_for("input tokens")
        pane.type("/quit")
        pane.keys("Enter")
        assert pane.wait_ended() == 0
    finally:
        pane.close()


def test_an_unknown_session_exits_2_with_the_terminal_restored(
    iso: Isolation, chat_model: FakeModel
) -> None:
    pane = Pane.start(iso, *chat_args(chat_model, "--resume", "0123456789abcdef"), env=KEYS)
    try:
        assert pane.wait_ended() == 2
        assert "rawtrio: " in pane.scrollback()
        before, after = pane.stty()
        assert before == after
    finally:
        pane.close()


def test_sigterm_cancels_the_turn_stops_the_tool_and_exits_143(
    iso: Isolation, chat_model: FakeModel
) -> None:
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        pane.wait_for("ready │")
        chat = pane.chat_process()
        pane.type("sleep with a grandchild")
        pane.keys("Enter")
        wait_until(lambda: len(descendants_of(chat)) >= 3, "the tool's processes start")
        tool_procs = descendants_of(chat)
        chat.send_signal(signal.SIGTERM)
        assert pane.wait_ended() == 143
        before, after = pane.stty()
        assert before == after
        assert alive(tool_procs) == []
        assert not alive([chat])
    finally:
        pane.close()


def test_a_failure_at_start_restores_the_terminal_and_keeps_the_traceback_off_screen(
    iso: Isolation, chat_model: FakeModel
) -> None:
    # A database path that is a directory: the store cannot open it.
    (iso.home / ".local" / "state" / "rawtrio" / "sessions.db").mkdir(parents=True)
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        assert pane.wait_ended() != 0
        screen = pane.scrollback()
        assert "Traceback" not in screen
        assert "rawtrio: " in screen  # one line saying what happened
        before, after = pane.stty()
        assert before == after
        if "unexpected error" in screen:  # a bug's traceback goes to the log file
            assert "Traceback" in pane.log()
    finally:
        pane.close()


def test_one_tool_call_selected_with_alt_up_and_expanded_with_enter(
    iso: Isolation, chat_model: FakeModel
) -> None:
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        pane.wait_for("ready │")
        pane.type("use a tool")
        pane.keys("Enter")
        pane.wait_for("The tool said tool-output.")
        pane.wait_for("ready │")
        assert "input: " not in pane.screen()

        def output_line(screen: str) -> bool:
            return any(line.strip() == "tool-output" for line in screen.splitlines())

        pane.keys("M-Up")  # select the call: its line is highlighted
        pane.wait_for("▸ ✓ bash echo tool-output", "the selected tool line")
        pane.keys("Enter")  # its details: input and output
        screen = pane.wait_for('input: {"command": "echo tool-output"}')
        assert output_line(screen), screen
        pane.keys("Enter")  # and shut again
        screen = pane.wait_for(lambda s: "input: " not in s, "the details are hidden")
        assert not output_line(screen), screen
        pane.type("x")  # typing deselects and goes to the prompt
        screen = pane.wait_for(lambda s: "▸" not in s and "› x" in s, "back at the prompt")
        assert "✓ bash echo tool-output" in screen
        pane.keys("C-u")
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()


@contextlib.contextmanager
def held_at_the_first_frame(pane: Pane) -> Iterator[psutil.Process]:
    """The chat stopped where its first frame left it (SIGSTOP) for the block: what the
    block types waits in the terminal until the chat goes on."""
    pane.wait_for("Enter sends", "the first frame")
    chat = pane.chat_process()
    chat.suspend()
    try:
        yield chat
    finally:
        chat.resume()


def test_keys_typed_as_soon_as_the_prompt_shows_are_kept(
    iso: Isolation, chat_model: FakeModel
) -> None:
    """The first frame is drawn before the app's modules load and before the session is
    open: what is typed from then on waits in the terminal and is sent once it can be."""
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        with held_at_the_first_frame(pane):
            pane.type("say hello")
            pane.keys("Enter")
        screen = pane.wait_for("return 42", "the reply to what was typed while starting")
        assert "› say hello" in screen
        assert "Hello from the fake model." in screen
        pane.wait_for("ready │")
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()


def test_ctrl_c_typed_as_soon_as_the_prompt_shows_is_the_chats_ctrl_c(
    iso: Isolation, chat_model: FakeModel
) -> None:
    """The first frame is drawn before trio and urwid are imported: a Ctrl-C typed at it is
    a key for the chat (clear the prompt, "press again to exit"), not a SIGINT that ends
    the program, and a second one leaves as at any idle prompt."""
    pane = Pane.start(iso, *chat_args(chat_model), env=KEYS)
    try:
        with held_at_the_first_frame(pane) as chat:
            pane.type("draft")
            pane.keys("C-c")
            typed = time.monotonic()
        screen = pane.wait_for("press Ctrl-C again to exit")
        assert "› draft" not in screen
        pane.wait_for("ready │")
        assert chat.is_running()
        # Past the double Ctrl-C window of that first one (on a fast machine the chat is
        # ready within it, and the next Ctrl-C would leave at once, the one after it
        # reaching the shell): the pair below is a fresh "clear, then leave".
        time.sleep(max(0.0, typed + DOUBLE_CTRL_C_S + 0.5 - time.monotonic()))
        pane.keys("C-c")
        pane.keys("C-c")
        assert pane.wait_ended() == 0
        before, after = pane.stty()
        assert before == after
    finally:
        pane.close()


def test_a_broken_config_file_is_named_after_the_terminal_is_restored(
    iso: Isolation, chat_model: FakeModel
) -> None:
    """The first frame shows before the configuration is read: a config file with a bad
    value still ends the chat with one line naming the file and the key, exit code 2, and
    the terminal as it was."""
    config = iso.home / ".config" / "rawtrio" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('sigterm_grace_s = "soon"\n')
    pane = Pane.start(iso, "--base-url", chat_model.base_url, env=KEYS)
    try:
        assert pane.wait_ended() == 2
        screen = pane.scrollback()
        assert "Traceback" not in screen
        line = next(n for n in screen.splitlines() if n.startswith("rawtrio: "))
        assert "config.toml" in line
        assert "sigterm_grace_s" in line
        before, after = pane.stty()
        assert before == after
    finally:
        pane.close()
