"""The line-mode chat in a real subprocess: signals during a turn."""

from __future__ import annotations

import signal
import subprocess

import psutil

from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation, LiveRun, alive, descendant_pids, wait_until

KEYS = {"ANTHROPIC_API_KEY": "test-key"}


def start_chat(iso: Isolation, fake: FakeModel) -> LiveRun:
    return LiveRun.start(
        iso,
        "--base-url",
        fake.base_url,
        "--sigterm-grace",
        "0.2",
        env=KEYS,
        stdin=subprocess.PIPE,
    )


def test_sigterm_during_a_turn_cancels_it_stops_the_tool_and_exits_143(
    iso: Isolation, fake_model: FakeModel
) -> None:
    chat = start_chat(iso, fake_model)
    try:
        assert chat.proc.stdin is not None
        chat.proc.stdin.write("sleep with a grandchild\n")
        chat.proc.stdin.flush()
        wait_until(lambda: len(descendant_pids(chat.proc.pid)) >= 4, "the tool's processes start")
        procs = [psutil.Process(pid) for pid in descendant_pids(chat.proc.pid)]
        chat.signal(signal.SIGTERM, group=False)
        done = chat.finish()
    finally:
        if chat.proc.poll() is None:
            chat.kill()
        assert chat.proc.stdin is not None
        chat.proc.stdin.close()
    assert done.returncode == 143
    assert "Traceback" not in done.stderr
    assert "(cancelled: received SIGTERM)" in done.stdout
    assert alive(procs) == []


def test_ctrl_c_cancels_the_turn_and_the_chat_goes_on(
    iso: Isolation, fake_model: FakeModel
) -> None:
    chat = start_chat(iso, fake_model)
    try:
        assert chat.proc.stdin is not None
        chat.proc.stdin.write("sleep with a grandchild\n")
        chat.proc.stdin.flush()
        wait_until(lambda: len(descendant_pids(chat.proc.pid)) >= 4, "the tool's processes start")
        procs = [psutil.Process(pid) for pid in descendant_pids(chat.proc.pid)]
        chat.signal(signal.SIGINT, group=True)
        wait_until(lambda: alive(procs) == [], "the tool's processes end")
        chat.proc.stdin.write("say hello\n")
        chat.proc.stdin.close()  # Ctrl-D after the second turn
        done = chat.finish()
    finally:
        if chat.proc.poll() is None:
            chat.kill()
    assert done.returncode == 0
    assert "Traceback" not in done.stderr
    assert "(cancelled: cancelled by the user (Ctrl-C))" in done.stdout
    assert "Hello from the fake model." in done.stdout


def test_a_reply_that_is_not_unicode_is_shown_and_the_chat_goes_on(
    iso: Isolation, fake_model: FakeModel
) -> None:
    chat = start_chat(iso, fake_model)
    assert chat.proc.stdin is not None
    chat.proc.stdin.write("answer with a lone surrogate\n")
    chat.proc.stdin.flush()
    chat.wait_for_text("bad \ufffd text")
    outcome = chat.wait_for_text("(")  # the turn's outcome
    assert outcome.startswith("(completed"), outcome
    chat.proc.stdin.write("say hello\n")
    chat.proc.stdin.flush()
    chat.wait_for_text("Hello from the fake model.")
    chat.proc.stdin.close()
    done = chat.finish()
    assert done.returncode == 0, done.stderr


def test_undo_diff_and_memory_are_commands_of_the_line_chat(
    iso: Isolation, fake_model: FakeModel
) -> None:
    """`/diff`, `/undo` (a file changed outside since the turn is only written over after
    a `y`) and `/memory` are run by the chat, never sent to the model."""
    chat = LiveRun.start(
        iso, "--base-url", fake_model.base_url, "--mode", "bypass", env=KEYS, stdin=subprocess.PIPE
    )
    note = iso.cwd / "note.txt"
    try:
        assert chat.proc.stdin is not None

        def send(line: str) -> None:
            assert chat.proc.stdin is not None
            chat.proc.stdin.write(line + "\n")
            chat.proc.stdin.flush()

        send("write a note")
        chat.wait_for_text("Wrote it.")
        chat.wait_for_text("(completed")
        assert note.read_text() == "first\n"
        send("/diff")
        chat.wait_for_text("created note.txt")
        chat.wait_for_text("+first")
        note.write_text("changed outside\n")
        send("/undo")
        chat.wait_for_text("overwrite them?")
        send("n")
        chat.wait_for_text("/undo: nothing was written")
        assert note.read_text() == "changed outside\n"
        send("/undo")
        chat.wait_for_text("overwrite them?")
        send("y")
        send("/memory")
        chat.wait_for_text("project memory for")
        assert not note.exists()  # the turn created it: undone, it is gone
        send("/undo 0")
        chat.wait_for_text("/undo takes a checkpoint number")
        chat.proc.stdin.close()
        done = chat.finish()
    finally:
        if chat.proc.poll() is None:
            chat.kill()
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
