"""The prompt: multi-line editing, history across sessions, and completion.

Enter sends; Alt-Enter or Ctrl-J inserts a newline, and so does Enter inside a bracketed
paste (a pasted text is inserted whole, never sent line by line). Up/Down on a one-line
prompt walk the input history, which is kept in the state directory for every session
(`tui_history.jsonl`, the last `HISTORY_LIMIT` prompts, readable by the user only). Tab
completes a slash command at the start of the prompt, or a path after `@` (relative to the
session's directory).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import urwid

from rawtrio.private_files import open_private, tighten, write_private

HISTORY_LIMIT = 1000
#: Paths offered for one `@` completion at most (a huge directory is cut, not listed).
COMPLETION_LIMIT = 200


class History:
    """Prompts typed in the chat, oldest first, shared by every session."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.items: list[str] = []
        if path is not None:
            try:
                tighten(path)
                with path.open(encoding="utf-8") as f:
                    for line in f:
                        try:
                            value = json.loads(line)
                        except json.JSONDecodeError:
                            continue
                        if isinstance(value, str):
                            self.items.append(value)
            except OSError:
                pass
        self.items = self.items[-HISTORY_LIMIT:]

    def add(self, text: str) -> None:
        if not text.strip() or (self.items and self.items[-1] == text):
            return
        self.items.append(text)
        if self.path is None:
            return
        try:
            if len(self.items) > HISTORY_LIMIT * 2:
                self.items = self.items[-HISTORY_LIMIT:]
                write_private(self.path, "".join(json.dumps(i) + "\n" for i in self.items))
            else:
                with open_private(self.path, "a") as f:
                    f.write(json.dumps(text) + "\n")
        except OSError:
            pass  # history is a convenience: a read-only state dir must not stop the chat


def common_prefix(words: Sequence[str]) -> str:
    if not words:
        return ""
    first, last = min(words), max(words)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def complete_path(cwd: Path, partial: str) -> list[str]:
    """Paths under `cwd` starting with `partial` (directories end with `/`)."""
    head, _, tail = partial.rpartition("/")
    base = (cwd / head) if head else cwd
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for entry in entries:
        if not entry.name.startswith(tail) or (entry.name.startswith(".") and not tail):
            continue
        name = f"{head}/{entry.name}" if head else entry.name
        out.append(name + "/" if entry.is_dir() else name)
        if len(out) >= COMPLETION_LIMIT:
            break
    return out


class PromptEdit(urwid.Edit):
    """The input box; the app decides what Enter and the other chat keys do."""

    def __init__(self, history: History) -> None:
        super().__init__(caption=("prompt", "› "), multiline=True)
        self.history = history
        self._browse: int | None = None
        self._draft = ""

    def set(self, text: str) -> None:
        self.set_edit_text(text)
        self.set_edit_pos(len(text))

    def newline(self) -> None:
        self.insert_text("\n")

    def keypress(self, size: tuple[()] | tuple[int] | tuple[int, int], key: str) -> str | None:
        if key in ("up", "down") and "\n" not in self.edit_text:
            self._walk(-1 if key == "up" else 1)
            return None
        if key == "ctrl u":
            self.set("")
            return None
        self._browse = None
        result: str | None = super().keypress((size[0],) if size else (80,), key)
        return result

    def _walk(self, direction: int) -> None:
        items = self.history.items
        if not items:
            return
        if self._browse is None:
            if direction > 0:
                return
            self._draft = self.edit_text
            self._browse = len(items)
        position = self._browse + direction
        if position >= len(items):
            self._browse = None
            self.set(self._draft)
            return
        self._browse = max(0, position)
        self.set(items[self._browse])

    def completion(self, commands: Sequence[str], cwd: Path | None) -> tuple[str, list[str]]:
        """Complete at the cursor; returns (what was inserted, the candidates)."""
        text, pos = self.edit_text, self.edit_pos
        before = text[:pos]
        if before.startswith("/") and " " not in before:
            found = [c for c in commands if c.startswith(before)]
            return self._insert(before, found, trailing=" " if len(found) == 1 else ""), found
        word = before.rsplit(None, 1)[-1] if before.strip() else ""
        if word.startswith("@") and cwd is not None and (not before or not before[-1].isspace()):
            found = ["@" + p for p in complete_path(cwd, word[1:])]
            single = len(found) == 1 and not found[0].endswith("/")
            return self._insert(word, found, trailing=" " if single else ""), found
        return "", []

    def _insert(self, typed: str, found: list[str], *, trailing: str) -> str:
        prefix = common_prefix(found)
        if len(prefix) <= len(typed) and not (trailing and found):
            return ""
        addition = prefix[len(typed) :] + trailing
        self.insert_text(addition)
        return addition
