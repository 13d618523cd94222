"""The chat's first frame, drawn before trio and urwid are imported (docs/benchmarks.md,
"start → prompt drawn").

Importing trio and urwid costs most of half a second of CPU; the prompt does not wait for
them. `shown` switches the terminal to the alternate screen and draws what the chat's own
first frame shows (`rawtrio.tui.layout`: the banner, the empty prompt, the status bar, in
the colours of its palette), and puts the terminal in the mode the chat reads keys in —
no echo, no line editing, Ctrl-C a byte rather than SIGINT, Enter apart from Ctrl-J — so
what the user types meanwhile waits in the terminal, unseen and unchanged.

`FirstFrame.hand_over` gives the terminal to urwid just before its screen starts (which
discards the terminal's pending input): it reads the keys typed so far, puts the
terminal's own settings back (urwid records them and restores them when the chat ends)
and returns those keys, which the chat then hands to the app as if urwid had read them
(`rawtrio.tui.runner.run_app`). When the chat never gets that far (SIGINT while importing,
a bug), leaving `shown` restores the terminal and the normal screen, and drops what was
typed for the chat rather than leave it to the shell.

The standard library only: this module is imported before anything else of the chat.
"""

from __future__ import annotations

import contextlib
import os
import select
import termios
from collections.abc import Iterable, Iterator
from typing import Any, Final

#: The banner the chat starts with (the first line of the transcript).
BANNER: Final = "Enter sends · Esc/Ctrl-C cancels a turn · Ctrl-C twice or Ctrl-D leaves · /help"
#: The status bar's first part while the runtime comes up.
STARTING: Final = "starting…"
#: The agent's name in the status bar until the configuration is read.
UNKNOWN_AGENT: Final = "…"
#: The prompt's caption.
CAPTION: Final = "› "
#: Rows below the transcript: queued prompts, the prompt, the hint, the status bar (each
#: one row while empty, as in `rawtrio.tui.layout.Layout`).
FOOTER_ROWS: Final = 4

# The SGR sequences urwid writes for these entries of `rawtrio.tui.layout.PALETTE` (16
# colours): "dim" (dark gray), "prompt" (light cyan, bold), "status" (black on light gray).
_PLAIN: Final = "\x1b[0;39;49m"
_DIM: Final = "\x1b[0;90;49m"
_PROMPT: Final = "\x1b[0;96;1;49m"
_STATUS: Final = "\x1b[0;30;47m"
_ALTERNATE_SCREEN: Final = "\x1b[?1049h"
_NORMAL_SCREEN: Final = "\x1b[?1049l"
_BRACKETED_PASTE_ON: Final = "\x1b[?2004h"
_BRACKETED_PASTE_OFF: Final = "\x1b[?2004l"
_CURSOR_ON: Final = "\x1b[?25h"
_CURSOR_OFF: Final = "\x1b[?25l"
#: How much typed input is read at most at the hand-over (a paste can be long).
_READ_LIMIT: Final = 1 << 20


def status_line(parts: Iterable[str]) -> str:
    """The status bar's text: its parts, separated."""
    return " " + " │ ".join(parts)


def wrap(text: str, width: int) -> list[str]:
    """`text` cut into lines of at most `width` characters at spaces (a word longer than a
    line is cut), as urwid's `Text` wraps it."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if len(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        while len(word) > width:
            lines.append(word[:width])
            word = word[width:]
        line = word
    lines.append(line)
    return lines


def frame_text(cols: int, rows: int, *, agent: str = UNKNOWN_AGENT) -> str:
    """What draws the first frame on a terminal of `cols` × `rows` (the alternate screen
    is entered first; the cursor is left in the prompt)."""
    body = rows - FOOTER_ROWS
    out = [_ALTERNATE_SCREEN, _BRACKETED_PASTE_ON, _CURSOR_OFF, _PLAIN, "\x1b[2J"]
    # The transcript shows its end (`rawtrio.tui.layout.EndFollowingListBox`).
    for n, line in enumerate(wrap(BANNER, cols)[-body:]):
        out.append(f"\x1b[{n + 1};1H{_DIM}{line}{_PLAIN}")
    prompt_row = body + 2
    out.append(f"\x1b[{prompt_row};1H{_PROMPT}{CAPTION[:cols]}{_PLAIN}")
    status = status_line([STARTING, f"agent {agent}"])
    if len(status) > cols:
        status = status[: cols - 1] + "…"
    out.append(f"\x1b[{rows};1H{_STATUS}{status}\x1b[K{_PLAIN}")
    out.append(f"\x1b[{prompt_row};{min(len(CAPTION), cols - 1) + 1}H{_CURSOR_ON}")
    return "".join(out)


class FirstFrame:
    """The first frame on the terminal `fd_in` / `fd_out`, until urwid takes it over."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in, self.fd_out = fd_in, fd_out
        self._saved: list[Any] | None = None
        self.drawn = False

    def draw(self) -> None:
        """Take the terminal into the chat's key mode and draw the frame; nothing when
        the terminal is too small to show the prompt or its settings cannot be read."""
        try:
            cols, rows = os.get_terminal_size(self.fd_out)
            self._saved = termios.tcgetattr(self.fd_in)
        except (OSError, termios.error):
            return
        if rows < FOOTER_ROWS + 1 or cols < len(CAPTION) + 1:
            self._saved = None
            return
        mode = termios.tcgetattr(self.fd_in)
        mode[0] &= ~termios.ICRNL  # Enter stays CR: Ctrl-J (LF) means "newline"
        mode[3] &= ~(termios.ECHO | termios.ICANON)
        cc = mode[6]
        cc[termios.VMIN], cc[termios.VTIME] = 1, 0
        cc[termios.VINTR] = bytes([_vdisable(self.fd_in)])  # Ctrl-C arrives as a key
        try:
            termios.tcsetattr(self.fd_in, termios.TCSANOW, mode)
            _write_all(self.fd_out, frame_text(cols, rows).encode())
        except (OSError, termios.error):
            self._restore(termios.TCSANOW)
            return
        self.drawn = True

    def hand_over(self) -> bytes:
        """Read what was typed since the frame was drawn, put the terminal's own settings
        back (for urwid, which starts next) and return it. The screen stays as it is."""
        if not self.drawn:
            return b""
        typed = bytearray()
        # A terminal that went away (OSError): urwid finds out when it starts.
        with contextlib.suppress(OSError):
            while len(typed) < _READ_LIMIT and select.select([self.fd_in], [], [], 0)[0]:
                chunk = os.read(self.fd_in, 65536)
                if not chunk:
                    break
                typed += chunk
        self._restore(termios.TCSANOW)
        self.drawn = False
        return bytes(typed)

    def abandon(self) -> None:
        """The chat ended before urwid took the terminal: the normal screen back, the
        terminal's settings back, and what was typed for the chat dropped."""
        if not self.drawn:
            return
        self.drawn = False
        with contextlib.suppress(OSError):
            _write_all(
                self.fd_out, (_PLAIN + _BRACKETED_PASTE_OFF + _CURSOR_ON + _NORMAL_SCREEN).encode()
            )
        self._restore(termios.TCSAFLUSH)

    def _restore(self, when: int) -> None:
        saved, self._saved = self._saved, None
        if saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd_in, when, saved)


@contextlib.contextmanager
def shown(fd_in: int, fd_out: int) -> Iterator[FirstFrame]:
    """The first frame drawn for the block; abandoned at its end unless handed over."""
    frame = FirstFrame(fd_in, fd_out)
    frame.draw()
    try:
        yield frame
    finally:
        frame.abandon()


def _vdisable(fd: int) -> int:
    """The value that switches a special character off (`_POSIX_VDISABLE`)."""
    try:
        value = os.fpathconf(fd, "PC_VDISABLE")
    except (OSError, ValueError):
        return 0
    return value if 0 <= value < 256 else 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
