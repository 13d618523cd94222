"""The chat's screen before the chat is: what its first frame is drawn from.

The first frame — the banner, the prompt and the status bar — is drawn from these widgets
as soon as urwid and trio are imported, before the modules that make the chat work
(`rawtrio.events`, the transcript view, the permission types, the blocks); the app
(`rawtrio.tui.app.ChatApp`) then takes these very widgets over, so its own first draw
changes nothing on screen (docs/benchmarks.md, "start → prompt drawn"). Keys typed
meanwhile wait in the terminal until the app reads them. Nothing here may import more than
urwid and the prompt editor.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import urwid

from rawtrio.tui.editor import History, PromptEdit
from rawtrio.tui.first_frame import STARTING, status_line

__all__ = ["PALETTE", "STARTING", "EndFollowingListBox", "Layout", "status_line"]

PALETTE = [
    ("user prefix", "light cyan,bold", ""),
    ("user", "light cyan", ""),
    ("prompt", "light cyan,bold", ""),
    ("notice", "light blue", ""),
    ("warning", "yellow", ""),
    ("error", "light red", ""),
    ("dim", "dark gray", ""),
    ("thinking", "dark gray", ""),
    ("status", "black", "light gray"),
    ("status busy", "black", "yellow"),
    ("status cancel", "white,bold", "dark red"),
    ("queued", "dark cyan", ""),
    ("hint", "dark gray", ""),
    ("guide", "light green", ""),
    ("tool name", "bold", ""),
    ("tool arg", "light gray", ""),
    ("tool run", "yellow", ""),
    ("tool wait", "light magenta", ""),
    ("tool ok", "light green", ""),
    ("tool error", "light red", ""),
    ("tool denied", "brown", ""),
    ("tool cancelled", "light magenta", ""),
    ("diff add", "light green", ""),
    ("diff del", "light red", ""),
    ("diff hunk", "light cyan", ""),
    ("md h", "white,bold,underline", ""),
    ("md strong", "white,bold", ""),
    ("md em", "italics", ""),
    ("md code", "light cyan", ""),
    ("md link", "light blue,underline", ""),
    ("md url", "dark gray", ""),
    ("md bullet", "yellow", ""),
    ("md quote", "light gray", ""),
    ("md rule", "dark gray", ""),
    ("md table", "dark gray", ""),
    ("code", "light gray", ""),
    ("code kw", "light magenta", ""),
    ("code fn", "light blue", ""),
    ("code str", "light green", ""),
    ("code num", "yellow", ""),
    ("code com", "dark gray", ""),
    ("perm title", "white,bold", ""),
    ("perm command", "yellow,bold", ""),
    ("perm option", "", ""),
    ("perm selected", "black", "light cyan"),
    ("perm key", "light cyan", ""),
    ("tool selected", "black", "light cyan"),
]


class EndFollowingListBox(urwid.ListBox[int]):
    """A list box that, while it follows the end (`follow`), shows the last row of the
    last block.

    urwid keeps the focus block where it was when it grows, so a block that gains rows
    after it was scrolled into view — a running tool's output line, a reply taller than
    the screen — would grow below the bottom edge once the transcript fills the screen.
    Anchoring at each render (with the size known) keeps whatever changed last in view.
    """

    def __init__(self, walker: urwid.SimpleFocusListWalker[Any]) -> None:
        super().__init__(walker)
        self.walker = walker
        #: Whether the end is shown (False once the user scrolls up or selects a call).
        self.follow = True

    def append(self, block: urwid.Widget) -> None:
        """Add `block` at the end, and show it when following the end."""
        self.walker.append(block)
        if self.follow:
            self.scroll_to_end()

    def scroll_to_end(self) -> None:
        if self.walker:
            self.set_focus(len(self.walker) - 1, coming_from="above")
            self.set_focus_valign("bottom")
        self.follow = True

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:  # type: ignore[override]
        cols, rows = size
        last = len(self.walker) - 1
        if self.follow and last >= 0 and rows > 0:
            # Whatever scrolling was asked for since the last render, the end wins.
            self.set_focus_pending = self.set_focus_valign_pending = None
            self.walker.set_focus(last)
            height = self.walker[last].rows((cols,), focus)
            offset, inset = self.get_focus_offset_inset(size)
            if offset - inset != rows - height:
                self.shift_focus(size, rows - height)
        return super().render(size, focus)


class Layout:
    """The chat's widgets: the transcript's list box above; below it the queued prompts,
    the prompt, a hint line and the status bar. `ChatApp` fills and changes them."""

    def __init__(self, history_path: Path | None, *, banner: Iterable[Any], agent: str) -> None:
        self.listbox = EndFollowingListBox(urwid.SimpleFocusListWalker([]))
        for line in banner:
            self.listbox.append(urwid.Text(line))
        self.edit = PromptEdit(History(history_path))
        self.queued_text = urwid.Text("")
        self.hint = urwid.Text("")
        self.status = urwid.Text(status_line([STARTING, f"agent {agent}"]), wrap="ellipsis")
        self.status_map = urwid.AttrMap(self.status, "status")
        footer = urwid.Pile([self.queued_text, self.edit, self.hint, self.status_map])
        self.frame: urwid.Frame[Any, Any, Any] = urwid.Frame(
            self.listbox, footer=footer, focus_part="footer"
        )
