"""The permission prompt: a keyboard-driven modal over the chat.

It shows the tool, what the call would do — the command for `bash`, a diff for edits, the
content for a new file, the arguments otherwise — and the options: allow once, allow
always (this session), allow always in this project (saved to the project's config),
deny, and deny with a message for the model. A request of a `task` child says which child
asks ("asked by agent NAME (DESCRIPTION)", above the call). Keys: the option's letter or number, or
Up/Down and Enter. Ctrl-C or Esc cancel the turn (the app answers the prompt as cancelled).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import urwid

from rawtrio.frozen import thaw
from rawtrio.permissions.approval import AlwaysScope, ApprovalDecision
from rawtrio.runtime.view import PermissionView
from rawtrio.tui.blocks import diff_markup
from rawtrio.tui.markdown import Markup

#: (key, label, decision maker); "m" opens the message box instead.
OPTIONS: tuple[tuple[str, str], ...] = (
    ("y", "allow once"),
    ("a", "allow always (this session)"),
    ("p", "allow always in this project (saved)"),
    ("n", "deny"),
    ("m", "deny with a message…"),
)
PREVIEW_LINES = 30


def call_preview(tool_id: str, arguments: Mapping[str, Any]) -> list[Markup]:
    """What the call would do, for people."""
    if "command" in arguments and isinstance(arguments["command"], str):
        return [("perm command", "$ " + arguments["command"])]
    old, new = arguments.get("old"), arguments.get("new")
    if isinstance(old, str) and isinstance(new, str):
        import difflib  # only for an edit's preview: an idle chat has not loaded it

        diff = difflib.unified_diff(
            old.splitlines(), new.splitlines(), str(arguments.get("path", "")), "", lineterm=""
        )
        return diff_markup("\n".join(list(diff)[2:]) or "(no change)")
    content = arguments.get("content")
    if isinstance(content, str):
        lines = content.splitlines()
        shown = "\n".join("+" + line for line in lines[:PREVIEW_LINES])
        more = (
            f"\n… ({len(lines) - PREVIEW_LINES} more lines)" if len(lines) > PREVIEW_LINES else ""
        )
        return [
            ("dim", f"new content of {arguments.get('path', '')}:\n"),
            *diff_markup(shown + more),
        ]
    return [("dim", json.dumps(arguments, ensure_ascii=False, indent=2))]


class PermissionPrompt(urwid.WidgetWrap[urwid.LineBox[urwid.Widget]]):
    def __init__(
        self,
        request: PermissionView,
        answer: Callable[[ApprovalDecision], None],
        *,
        asker: str | None = None,
    ) -> None:
        """`asker`: the `task` child whose call this is (None: the session's own)."""
        self.request = request
        self._answer = answer
        self.selected = 0
        args = thaw(request.arguments)
        arguments: Mapping[str, Any] = args if isinstance(args, dict) else {}
        self._options = urwid.Text("")
        self._message = urwid.Edit(("perm key", "message for the model: "))
        self.typing = False
        asked: list[urwid.Widget] = []
        if asker is not None:
            asked.append(urwid.Text([("perm key", "asked by "), ("perm title", asker)]))
        body = urwid.Pile(
            [
                *asked,
                urwid.Text([("perm title", f"Allow {request.tool_id}?  "), request.summary]),
                urwid.Divider(),
                urwid.Text(call_preview(request.tool_id, arguments) or ""),
                urwid.Divider(),
                self._options,
            ]
        )
        self._body = body
        self._draw_options()
        super().__init__(urwid.LineBox(body, title="permission", title_attr="perm title"))

    def _draw_options(self) -> None:
        markup: list[Markup] = []
        for n, (key, label) in enumerate(OPTIONS):
            marker = "▸ " if n == self.selected else "  "
            attr = "perm selected" if n == self.selected else "perm option"
            markup += ["\n" if n else "", (attr, f"{marker}[{key}] {label}")]
        self._options.set_text(markup)

    def handle(self, key: str) -> bool:
        """Take a key; True when it was the prompt's."""
        if self.typing:
            if key == "enter":
                text = self._message.edit_text.strip()
                self._answer(ApprovalDecision.deny(text or None, "tui"))
            elif key == "esc":
                self.typing = False
                self._body.contents.pop()
                self._draw_options()
            else:
                self._message.keypress((60,), key)
            return True
        keys = [k for k, _ in OPTIONS]
        if key in ("up", "down"):
            self.selected = (self.selected + (1 if key == "down" else -1)) % len(OPTIONS)
            self._draw_options()
            return True
        if key == "enter":
            return self._choose(keys[self.selected])
        if key in keys:
            return self._choose(key)
        if key.isdigit() and 1 <= int(key) <= len(OPTIONS):
            return self._choose(keys[int(key) - 1])
        return key not in ("ctrl c", "esc", "ctrl d", "page up", "page down")

    def _choose(self, key: str) -> bool:
        if key == "y":
            self._answer(ApprovalDecision.allow_once("tui"))
        elif key == "a":
            self._answer(ApprovalDecision.allow_always(AlwaysScope.SESSION, "tui"))
        elif key == "p":
            self._answer(ApprovalDecision.allow_always(AlwaysScope.PROJECT, "tui"))
        elif key == "n":
            self._answer(ApprovalDecision.deny(None, "tui"))
        elif key == "m":
            self.typing = True
            self._body.contents.append((self._message, self._body.options("pack")))
            self._body.focus_position = len(self._body.contents) - 1
        return True
