"""The trust dialog: a keyboard-driven modal over the chat, drawn like the permission prompt.

Shown before the chat's first turn when the project has files that wait for trust
(`rawtrio.tui.trust.untrusted_files`): it lists each file and what it would add, and offers
trust and remember, continue without them (this session), or quit. Keys: the option's
letter or number, or Up/Down and Enter; Esc continues without them, Ctrl-C quits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import urwid

from rawtrio.tui.trust import Answer, UntrustedFile

OPTIONS: tuple[tuple[str, str, Answer], ...] = (
    ("t", "trust and remember (until a file changes)", "trust"),
    ("c", "continue without them (this session)", "skip"),
    ("q", "quit", "quit"),
)


class TrustPrompt(urwid.WidgetWrap[urwid.LineBox[urwid.Widget]]):
    """Opened with `ChatApp.open_picker`: `handle` takes every key, `closed` says done."""

    def __init__(self, files: list[UntrustedFile], answer: Callable[[Answer], None]) -> None:
        self.files = files
        self._answer = answer
        self.selected = 0
        self.closed = False
        listing: list[Any] = []
        for file in files:
            listing += ["\n" if listing else "", ("perm command", file.shown or str(file.path))]
            listing.append(("dim", f"  ({file.summary})"))
            for line in file.details:
                listing += ["\n", f"    {line}"]
        self._options = urwid.Text("")
        body = urwid.Pile(
            [
                urwid.Text(
                    ("perm title", "This project has files that run code or grant permissions:")
                ),
                urwid.Divider(),
                urwid.Text(listing),
                urwid.Divider(),
                urwid.Text(("dim", "Untrusted, they are left out; trusting is recorded per file.")),
                self._options,
            ]
        )
        self._draw_options()
        super().__init__(urwid.LineBox(body, title="trust this project?", title_attr="perm title"))

    def _draw_options(self) -> None:
        markup: list[Any] = []
        for n, (key, label, _) in enumerate(OPTIONS):
            marker = "▸ " if n == self.selected else "  "
            attr = "perm selected" if n == self.selected else "perm option"
            markup += ["\n" if n else "", (attr, f"{marker}[{key}] {label}")]
        self._options.set_text(markup)

    def handle(self, key: str) -> bool:
        """Take a key (every key is the dialog's while it is open)."""
        if self.closed:
            return False
        keys = [k for k, _, _ in OPTIONS]
        if key in ("up", "down"):
            self.selected = (self.selected + (1 if key == "down" else -1)) % len(OPTIONS)
            self._draw_options()
        elif key == "enter":
            self._choose(OPTIONS[self.selected][2])
        elif key in keys:
            self._choose(OPTIONS[keys.index(key)][2])
        elif key.isdigit() and 1 <= int(key) <= len(OPTIONS):
            self._choose(OPTIONS[int(key) - 1][2])
        elif key == "esc":
            self._choose("skip")
        elif key in ("ctrl c", "ctrl d"):
            self._choose("quit")
        return True

    def _choose(self, answer: Answer) -> None:
        self.closed = True
        self._answer(answer)
