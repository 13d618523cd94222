"""Diffs read back from the checkpoint store: what a turn changed, and what one call changed.

Two readers, one rule for what is shown as text:

- `diff_change_set` — a turn's change set as unified diffs, file by file, for the chat's
  diff view (`/diff`, rawtrio.tui.diff_view);
- `call_changes` — the files one `bash` or MCP call changed (found by comparing the tree
  before and after the call, rawtrio.checkpoints.capture), with their old and new text, for
  the call's result `details["file_changes"]`: ACP clients get them as `diff` content on
  the call's final `tool_call_update` (docs/contracts.md, "Checkpoints").

Both diff the before/after blobs (rawtrio.checkpoints.objects) with difflib. A side is
text when it is UTF-8, has no NUL byte in its first 8 KiB and is within the size bound;
otherwise the file is said as such ("binary file (N bytes)", "too large to show"), as are
symlinks, content the size cap dropped, created and deleted files and mode changes.
Blocking file reads: call from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from rawtrio.checkpoints.model import ChangeSet, FileChange, Version
from rawtrio.checkpoints.objects import ObjectStore
from rawtrio.checkpoints.tree import Seen

#: Bytes looked at for a NUL (git's rule for "binary").
BINARY_SNIFF: Final = 8192
#: The chat's diff view diffs sides up to this size (larger: "too large to show").
VIEW_TEXT_LIMIT: Final = 1024 * 1024
#: Lines of context around each change in the diff view.
CONTEXT_LINES: Final = 3
#: One call's changes as text (ACP `diff` content): each side at most this many bytes,
CALL_TEXT_LIMIT: Final = 64 * 1024
#: all sides of the call together at most this many (past it: said, not shown),
CALL_TEXT_BUDGET: Final = 256 * 1024
#: and at most this many files listed (the rest counted in `file_changes_left_out`).
CALL_MAX_FILES: Final = 10

Kind = Literal["created", "deleted", "modified", "mode"]


def change_kind(before: Version | None, after: Version | None) -> Kind:
    if before is None:
        return "created"
    if after is None:
        return "deleted"
    if before.blob == after.blob and before.symlink == after.symlink:
        return "mode"
    return "modified"


def mode_text(mode: int) -> str:
    return f"{mode:o}"


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a file: its text, or why it is not shown as text."""

    text: str | None
    note: str | None = None


def read_side(objects: ObjectStore, v: Version | None, limit: int) -> Side:
    """The text of version `v` ("" when the file is absent on that side)."""
    if v is None:
        return Side("")
    if v.symlink:
        try:
            return Side(None, f"symlink to {os.fsdecode(objects.get(v.blob))}")
        except OSError:
            return Side(None, "a symlink whose target is no longer kept")
    if v.size > limit:
        return Side(None, f"too large to show ({v.size} bytes)")
    try:
        data = objects.get(v.blob)
    except OSError:
        return Side(None, "its content is no longer kept (the store's size cap dropped it)")
    if b"\0" in data[:BINARY_SNIFF]:
        return Side(None, f"binary file ({v.size} bytes)")
    try:
        return Side(data.decode("utf-8"))
    except UnicodeDecodeError:
        return Side(None, f"not UTF-8 text ({v.size} bytes)")


def unified_lines(old: str, new: str, context: int = CONTEXT_LINES) -> list[str]:
    """The unified diff of two texts, its `---`/`+++` header left out: `@@` lines, then
    lines starting with " ", "-" or "+", and git's "\\ No newline at end of file" after a
    last line without one."""
    import difflib  # only when a diff is shown: a turn that changed nothing never loads it

    out: list[str] = []
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    for line in list(difflib.unified_diff(a, b, n=context))[2:]:
        if line.endswith(("\n", "\r")):
            out.append(line.rstrip("\r\n"))
        else:
            out += [line, "\\ No newline at end of file"]
    return out


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file of a change set, ready to show."""

    path: str
    kind: Kind
    old_mode: int | None
    new_mode: int | None
    added: int = 0
    removed: int = 0
    #: The unified diff's lines (`unified_lines`); empty when not shown as text.
    lines: tuple[str, ...] = ()
    #: What is said instead of (or besides) the lines: binary, too large, mode changes.
    notes: tuple[str, ...] = ()

    def header(self) -> str:
        """ "modified src/a.py (+3 −1)", "created new.txt (mode 644)", ..."""
        text = f"{self.kind} {self.path}"
        if self.kind != "mode":
            text += f" (+{self.added} \u2212{self.removed})"
        return text


def diff_file(objects: ObjectStore, change: FileChange, limit: int = VIEW_TEXT_LIMIT) -> FileDiff:
    before, after = change.before, change.after
    kind = change_kind(before, after)
    notes: list[str] = []
    old_mode = before.mode if before is not None else None
    new_mode = after.mode if after is not None else None
    if kind == "created" and new_mode is not None:
        notes.append(f"new file, mode {mode_text(new_mode)}")
    elif kind == "deleted" and old_mode is not None:
        notes.append(f"deleted file, mode {mode_text(old_mode)}")
    elif old_mode is not None and new_mode is not None and old_mode != new_mode:
        notes.append(f"mode {mode_text(old_mode)} \u2192 {mode_text(new_mode)}")
    lines: list[str] = []
    if kind != "mode":
        old, new = read_side(objects, before, limit), read_side(objects, after, limit)
        if old.text is not None and new.text is not None:
            lines = unified_lines(old.text, new.text)
            if not lines and old.text != new.text:
                notes.append("only line separators changed")
        else:
            said = [s.note for s in (old, new) if s.note is not None]
            if len(said) == 2 and said[0] != said[1]:
                notes.append(f"{said[0]} \u2192 {said[1]}")
            else:
                notes.append(said[0] if said else "not shown")
    added, removed = change.added, change.removed
    if lines:  # what the view shows (the record's counts leave out a last newline's change)
        added = sum(1 for line in lines if line.startswith("+"))
        removed = sum(1 for line in lines if line.startswith("-"))
    return FileDiff(
        change.path, kind, old_mode, new_mode, added, removed, tuple(lines), tuple(notes)
    )


def diff_change_set(objects: ObjectStore, cs: ChangeSet) -> list[FileDiff]:
    """Every file of `cs`, in its order."""
    return [diff_file(objects, f) for f in cs.files]


# --- one call's changes (ACP `diff` content) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class PathChange:
    """One path a call changed, as the snapshots before and after it saw it."""

    path: str
    before: Seen | None
    after: Seen | None


def call_changes(objects: ObjectStore, changed: Sequence[PathChange]) -> dict[str, Any]:
    """The `details` entries for a call's changes: `file_changes`, a list of
    `{"path", "kind", "old_mode", "new_mode"}` plus `"old_text"` / `"new_text"` (the whole
    file, `old_text` None for a created file) when both sides are text within the bounds, or
    `"note"` saying why not (binary, too large, deleted, mode only, budget spent); and
    `file_changes_left_out`, how many changed files past `CALL_MAX_FILES` are not listed.
    {} when nothing changed."""
    entries: list[dict[str, Any]] = []
    budget = CALL_TEXT_BUDGET
    ordered = sorted(changed, key=lambda c: c.path)
    for change in ordered[:CALL_MAX_FILES]:
        entry, spent = _call_entry(objects, change, budget)
        budget -= spent
        entries.append(entry)
    if not entries:
        return {}
    out: dict[str, Any] = {"file_changes": entries}
    if len(ordered) > CALL_MAX_FILES:
        out["file_changes_left_out"] = len(ordered) - CALL_MAX_FILES
    return out


def _call_entry(
    objects: ObjectStore, change: PathChange, budget: int
) -> tuple[dict[str, Any], int]:
    """One file's entry and the text bytes it spent of the call's budget."""
    before, after = change.before, change.after
    v_old = before.version if before is not None else None
    v_new = after.version if after is not None else None
    kind: Kind
    if before is None or after is None:
        kind = "created" if before is None else "deleted"
    else:
        kind = change_kind(v_old, v_new) if v_old and v_new else "modified"
    entry: dict[str, Any] = {
        "path": change.path,
        "kind": kind,
        "old_mode": v_old.mode if v_old is not None else None,
        "new_mode": v_new.mode if v_new is not None else None,
    }
    for seen in (before, after):  # past a snapshot bound: its content was never kept
        if seen is not None and seen.version is None:
            entry["note"] = seen.reason or "not captured"
            return entry, 0
    mode_note = None
    if v_old is not None and v_new is not None and v_old.mode != v_new.mode:
        mode_note = f"mode {mode_text(v_old.mode)} \u2192 {mode_text(v_new.mode)}"
    if kind == "deleted":
        entry["note"] = f"deleted ({v_old.size if v_old else 0} bytes)"
        return entry, 0
    if kind == "mode":
        entry["note"] = mode_note
        return entry, 0
    old = read_side(objects, v_old, CALL_TEXT_LIMIT)
    new = read_side(objects, v_new, CALL_TEXT_LIMIT)
    if old.text is None or new.text is None:
        entry["note"] = new.note or old.note
        return entry, 0
    need = (v_old.size if v_old else 0) + (v_new.size if v_new else 0)
    if need > budget:
        entry["note"] = "not shown: this call's diff budget was spent on other files"
        return entry, 0
    entry["old_text"] = old.text if kind != "created" else None
    entry["new_text"] = new.text
    if mode_note is not None:
        entry["note"] = mode_note
    return entry, need
