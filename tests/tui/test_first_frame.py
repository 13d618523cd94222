"""What the chat imports before its first frame (docs/benchmarks.md, "start → prompt drawn")."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
import trio
import urwid

from rawtrio.tui import first_frame
from rawtrio.tui.host import ChatSetup
from rawtrio.tui.layout import Layout
from tests.headless.support import LIVENESS_S

#: Loaded only after the first frame: the app, the transcript's blocks and what they need.
AFTER_THE_FIRST_FRAME = (
    "rawtrio.tui.app",
    "rawtrio.tui.blocks",
    "rawtrio.tui.markdown",
    "rawtrio.tui.permission",
    "rawtrio.events",
    "rawtrio.runtime.view",
    "rawtrio.permissions",
    "pygments",
)


def test_the_first_frame_is_drawn_from_the_layout_alone() -> None:
    """`rawtrio.tui.runner` draws the first frame from `rawtrio.tui.layout`: importing
    them (and drawing that layout) loads none of the app's modules."""
    code = (
        "import sys, json, urwid\n"
        "import rawtrio.tui.runner\n"
        "from rawtrio.tui.layout import Layout\n"
        "layout = Layout(None, banner=['Enter sends'], agent='…')\n"
        "canvas = layout.frame.render((80, 10), focus=True)\n"
        "text = [line.decode() for line in canvas.text]\n"
        f"loaded = [m for m in {AFTER_THE_FIRST_FRAME!r} if m in sys.modules]\n"
        "print(json.dumps({'loaded': loaded, 'text': text}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    found = json.loads(done.stdout)
    assert found["loaded"] == []
    text = found["text"]
    assert text[0].rstrip() == "Enter sends"  # the banner
    assert text[-3].startswith("›")  # the prompt
    assert text[-1].startswith(" starting… │ agent …")


async def test_the_app_takes_the_layout_over_without_changing_the_frame() -> None:
    """The loop's first redraw after the app is made finds the frame as it was drawn."""
    from rawtrio.tui.app import ChatApp

    layout = Layout(None, banner=[("dim", "Enter sends")], agent="…")
    before = screen(layout.frame)
    async with trio.open_nursery() as nursery:
        app = ChatApp(
            ChatSetup(runtime=None, options=None, agent="…", history_path=None), nursery, layout
        )
        assert app.top is layout.frame
        assert screen(app.top) == before
        app.on_keys(["h", "i"], [])  # and the keys go to the layout's prompt
        assert layout.edit.edit_text == "hi"


def screen(widget: urwid.Widget) -> list[bytes]:
    canvas = widget.render((80, 12), focus=True)
    return [*canvas.text, *(repr(row).encode() for row in canvas.content())]


# --- the frame drawn before trio and urwid (`rawtrio.tui.first_frame`) -------------------

#: Never imported before the first frame is on screen.
NOT_BEFORE_THE_FIRST_FRAME = (
    "trio",
    "urwid",
    "rawtrio.tui.runner",
    "rawtrio.tui.app",
    "rawtrio.app",
    "rawtrio.runtime",
    "rawtrio.store.sqlite",
    "rawtrio.providers",
    "rawtrio.config.schema",
    "anthropic",
    "openai",
    "httpx",
    "pydantic",
)


def test_the_chat_draws_its_prompt_before_importing_trio_urwid_or_the_runtime(
    tmp_path: Path,
) -> None:
    """The real program on a terminal, with `-X importtime` writing to that terminal: every
    module it reports before the first frame's prompt was imported before the frame was
    drawn (one stream, in order)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAWTRIO_", "XDG_"))}
    env.update(
        ANTHROPIC_API_KEY="test-key",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
        HOME=str(tmp_path),
        RAWTRIO_STATE_DIR=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TERM="xterm-256color",
    )
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "rawtrio", "--no-attach"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + LIVENESS_S
        while "›".encode() not in seen:
            assert time.monotonic() < deadline, seen[-2000:]
            if select.select([master], [], [], 1.0)[0]:
                seen += os.read(master, 65536)
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    before = seen[: seen.index("›".encode())].decode(errors="replace")
    imported = {
        line.rpartition("|")[2].strip()
        for line in before.splitlines()
        if line.startswith("import time:")
    }
    assert "rawtrio.tui.first_frame" in imported
    early = sorted(
        m for m in imported if m in NOT_BEFORE_THE_FIRST_FRAME or m.startswith(NOT_BEFORE_PREFIXES)
    )
    assert early == []


NOT_BEFORE_PREFIXES = tuple(f"{m}." for m in NOT_BEFORE_THE_FIRST_FRAME)


def visible_rows(drawn: str, cols: int, rows: int) -> list[str]:
    """The text a terminal shows after `drawn` (cursor moves, erases and colours; enough
    for the first frame)."""
    grid = [[" "] * cols for _ in range(rows)]
    row = col = 0
    for match in re.finditer(r"\x1b\[([0-9;?$]*)([A-Za-z])|\x1b[()][0-9A-Z]|(.)", drawn, re.S):
        params, final, char = match.group(1), match.group(2), match.group(3)
        if char is not None:
            if col < cols:
                grid[row][col] = char
            col += 1
        elif final == "H":
            r, _, c = (params or "1;1").partition(";")
            row, col = int(r or 1) - 1, int(c or 1) - 1
        elif final == "K":
            grid[row][col:] = [" "] * (cols - col)
        elif final == "J" and params == "2":
            grid = [[" "] * cols for _ in range(rows)]
    return ["".join(line).rstrip() for line in grid]


@pytest.mark.parametrize(("cols", "rows"), [(80, 24), (40, 8), (20, 6)])
def test_the_first_frame_shows_what_the_chats_own_first_frame_shows(cols: int, rows: int) -> None:
    """The frame drawn before urwid shows the very text the chat's first frame (drawn by
    urwid from `rawtrio.tui.layout`) shows, so the hand-over changes nothing on screen."""
    layout = Layout(None, banner=[("dim", first_frame.BANNER)], agent=first_frame.UNKNOWN_AGENT)
    canvas = layout.frame.render((cols, rows), focus=True)
    expected = [line.decode().rstrip() for line in canvas.text]
    assert visible_rows(first_frame.frame_text(cols, rows), cols, rows) == expected


def pty_pair() -> tuple[int, int]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    return master, slave


def test_keys_typed_at_the_first_frame_are_handed_over_as_typed() -> None:
    """Ctrl-C stays a byte (no SIGINT), Enter stays CR (not Ctrl-J), nothing is echoed,
    and the terminal's own settings are back once the keys are handed over."""
    master, slave = pty_pair()
    try:
        original = termios.tcgetattr(slave)
        frame = first_frame.FirstFrame(slave, slave)
        frame.draw()
        assert frame.drawn
        drawn = os.read(master, 65536)
        assert "›".encode() in drawn
        os.write(master, b"hi\x03\r\x1b[200~pasted\x1b[201~")
        assert select.select([slave], [], [], LIVENESS_S)[0]
        assert frame.hand_over() == b"hi\x03\r\x1b[200~pasted\x1b[201~"
        assert termios.tcgetattr(slave) == original
        assert not select.select([master], [], [], 0)[0]  # nothing echoed
    finally:
        os.close(master)
        os.close(slave)


def test_a_chat_that_never_takes_the_frame_over_restores_the_terminal() -> None:
    """Left without a hand-over (SIGINT while importing, a bug): the normal screen and the
    terminal's settings are back, and what was typed for the chat is not left to the shell."""
    master, slave = pty_pair()
    try:
        original = termios.tcgetattr(slave)
        with first_frame.shown(slave, slave) as frame:
            assert frame.drawn
            os.read(master, 65536)
            os.write(master, b"rm -rf x\r")
            assert select.select([slave], [], [], LIVENESS_S)[0]
        assert termios.tcgetattr(slave) == original
        assert os.read(master, 65536).endswith(b"\x1b[?1049l")
        assert not select.select([slave], [], [], 0)[0]  # the typed line was dropped
    finally:
        os.close(master)
        os.close(slave)


def test_no_frame_on_a_terminal_too_small_for_the_prompt() -> None:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 3, 80, 0, 0))
    try:
        original = termios.tcgetattr(slave)
        frame = first_frame.FirstFrame(slave, slave)
        frame.draw()
        assert not frame.drawn
        assert termios.tcgetattr(slave) == original
        assert frame.hand_over() == b""
    finally:
        os.close(master)
        os.close(slave)
