"""`/diff [N]`: what a turn changed, as a scrollable diff over the chat.

At the end of a turn that changed files the chat says "3 files changed (+41 −7) —
checkpoint 2; /diff shows them, /undo puts them back". `/diff` shows the session's last
change set, `/diff N` checkpoint N: a box over the transcript with a unified diff per file
(file headers, `@@` hunks, added and removed lines coloured), binary and too-large files,
symlinks, created and deleted files and mode changes said as such, and what could not be
captured listed at the end (rawtrio.checkpoints.diff reads the before/after blobs).

Keys while it is open: Up/Down a line, PgUp/PgDn (or Space) a page, Home/End, n/p the
next / previous file; Esc (or q, Enter, Ctrl-C) closes it. It takes keys the way the chat's
pickers do (`handle`, `closed`), so the app opens it with `open_picker`.

Lines are cut to the box's width (an ellipsis marks a cut), one row per line, so the
scroll position is a line number and the box keeps its height whatever it shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import trio
import urwid

from rawtrio.errors import UsageError

if TYPE_CHECKING:
    from rawtrio.checkpoints.diff import FileDiff
    from rawtrio.checkpoints.model import ChangeSet
    from rawtrio.tui.host import ChatHost

#: One row of the view: urwid text markup.
Line = Any
#: Screen rows left around the box (the status bar and a margin).
MARGIN_ROWS: Final = 4
#: The box is never shorter than this (rows of diff).
MIN_ROWS: Final = 3
TAB = "    "


def diff_lines(cs: ChangeSet, diffs: list[FileDiff]) -> tuple[list[Line], list[int]]:
    """The rows of the view, and the row of each file's header."""
    lines: list[Line] = []
    starts: list[int] = []
    if cs.cancelled:
        lines.append(("warning", "the turn was cancelled: this is what it changed up to the cut"))
    if cs.state == "undone":
        lines.append(("warning", "undone: /redo applies it again"))
    for d in diffs:
        if lines:
            lines.append("")
        starts.append(len(lines))
        lines.append(("md strong", d.header()))
        lines += [("dim", f"  {note}") for note in d.notes]
        for row in d.lines:
            row = row.replace("\t", TAB)
            if row.startswith("@@"):
                lines.append(("diff hunk", row))
            elif row.startswith("+"):
                lines.append(("diff add", row))
            elif row.startswith("-"):
                lines.append(("diff del", row))
            elif row.startswith("\\"):
                lines.append(("dim", row))
            else:
                lines.append(row)
    for miss in cs.not_captured:
        if lines:
            lines.append("")
        lines.append(("warning", f"not captured: {miss.path} ({miss.reason})"))
    return lines, starts


class DiffView(urwid.Widget):
    """A change set's diff in a box of a fixed height (the screen's, less a margin)."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    _selectable = True

    def __init__(
        self, title: str, lines: list[Line], starts: list[int], screen_rows: Callable[[], int]
    ) -> None:
        super().__init__()
        self.title = title
        self.lines = lines or [("dim", "(nothing to show)")]
        self.starts = starts
        self.screen_rows = screen_rows
        self.top = 0
        self.closed = False

    def height(self) -> int:
        """Rows of diff shown at once."""
        return max(MIN_ROWS, min(len(self.lines), self.screen_rows() - MARGIN_ROWS - 2))

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return self.height() + 2  # the box's border

    def _clamp(self) -> None:
        self.top = max(0, min(self.top, len(self.lines) - self.height()))

    def visible(self) -> list[Line]:
        self._clamp()
        shown = self.lines[self.top : self.top + self.height()]
        return shown + [""] * (self.height() - len(shown))

    def render(
        self, size: tuple[()] | tuple[int] | tuple[int, int], focus: bool = False
    ) -> urwid.Canvas:
        cols = size[0] if size else 80
        markup: list[Any] = []
        for n, line in enumerate(self.visible()):
            markup += ["\n" if n else "", line]
        last = min(len(self.lines), self.top + self.height())
        where = f"lines {self.top + 1}\u2013{last} of {len(self.lines)}"
        title = f"{self.title} \u2014 {where} (\u2191\u2193 PgUp PgDn, n/p file, Esc closes)"
        body = urwid.Text(markup, wrap="ellipsis")
        return urwid.LineBox(body, title=title, title_align="left").render((cols,), focus)

    def handle(self, key: str) -> bool:
        page = max(1, self.height() - 1)
        moves = {"up": -1, "down": 1, "page up": -page, "page down": page, " ": page}
        if key in moves:
            self.top += moves[key]
        elif key == "home":
            self.top = 0
        elif key == "end":
            self.top = len(self.lines)
        elif key in ("n", "p"):
            self._jump(1 if key == "n" else -1)
        elif key in ("esc", "q", "enter", "ctrl c"):
            self.closed = True
        self._clamp()
        self._invalidate()
        return True

    def _jump(self, step: int) -> None:
        self._clamp()
        if step > 0:
            later = [s for s in self.starts if s > self.top]
            if later:
                self.top = later[0]
        else:
            earlier = [s for s in self.starts if s < self.top]
            self.top = earlier[-1] if earlier else 0


async def show_diff(app: ChatHost, arg: str) -> None:
    """`/diff [N]`: the last change set of the session, or checkpoint N."""
    session = app.session
    if session is None:
        raise UsageError("no session yet")
    number: int | None = None
    if arg:
        if not arg.isdigit() or int(arg) < 1:
            raise UsageError(f"/diff takes a checkpoint number (1, 2, …), got {arg!r}")
        number = int(arg)
    from rawtrio.checkpoints.diff import diff_change_set
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    store = CheckpointStore(checkpoints_root(), session.cwd)
    sid = session.id

    def load() -> tuple[ChangeSet, list[FileDiff]] | None:
        sets = store.change_sets(sid)
        if number is not None:
            sets = [c for c in sets if c.number == number]
        if not sets:
            return None
        return sets[-1], diff_change_set(store.objects, sets[-1])

    try:
        found = await trio.to_thread.run_sync(load, abandon_on_cancel=True)
    except OSError as exc:
        raise UsageError(f"could not read the checkpoints: {exc}") from None
    if found is None:
        if number is not None:
            raise UsageError(f"this session has no checkpoint {number}")
        raise UsageError("no turn of this session has changed files yet")
    cs, diffs = found
    lines, starts = diff_lines(cs, diffs)
    title = f"checkpoint {cs.number}: {cs.summary()}"
    app.open_picker(DiffView(title, lines, starts, lambda: app.screen_size()[1]))
