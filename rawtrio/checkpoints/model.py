"""The change-set record: what one turn changed, file by file (docs/contracts.md).

A path is relative to the project directory with "/" separators, or absolute for a file
outside it. `before` / `after` are the file's versions (a blob id and a mode), or None for
"absent". A file whose content could not be kept (too large, the turn's budget spent) is
not a `FileChange` but a `NotCaptured` entry: it is said, never silently skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

#: How a change was seen: the file tools capture exactly; other tools by a tree comparison.
CapturedBy = Literal["tool", "scan"]
State = Literal["applied", "undone"]
#: An undo or redo under way: the record says so before the first file is written, and
#: the next undo or redo completes it (rawtrio.checkpoints.restore).
Pending = Literal["undo", "redo"]
FORMAT: Final = 1


@dataclass(frozen=True, slots=True)
class Version:
    blob: str
    mode: int
    size: int
    symlink: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"blob": self.blob, "mode": self.mode, "size": self.size}
        if self.symlink:
            out["symlink"] = True
        return out

    @staticmethod
    def from_json(d: Any) -> Version | None:
        if d is None:
            return None
        return Version(str(d["blob"]), int(d["mode"]), int(d["size"]), bool(d.get("symlink")))


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    before: Version | None
    after: Version | None
    captured_by: CapturedBy
    #: Lines added and removed (text files; 0 and 0 for binary content).
    added: int = 0
    removed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "captured_by": self.captured_by,
            "added": self.added,
            "removed": self.removed,
        }

    @staticmethod
    def from_json(d: Any) -> FileChange:
        return FileChange(
            str(d["path"]),
            Version.from_json(d.get("before")),
            Version.from_json(d.get("after")),
            "tool" if d.get("captured_by") == "tool" else "scan",
            int(d.get("added", 0)),
            int(d.get("removed", 0)),
        )


@dataclass(frozen=True, slots=True)
class NotCaptured:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class ChangeSet:
    session_id: str
    turn_id: str
    #: 1-based, in the order the session's change sets were recorded.
    number: int
    prompt: str
    created_at: float
    cwd: str
    files: tuple[FileChange, ...]
    not_captured: tuple[NotCaptured, ...] = ()
    #: Directories the turn created (removed again by undo when left empty).
    new_dirs: tuple[str, ...] = ()
    #: The turn was cancelled: this is what it changed up to the cut.
    cancelled: bool = False
    state: State = "applied"
    undone_at: float | None = None
    notes: tuple[str, ...] = field(default=())
    #: Set while an undo or redo writes the files; still set after a crash, when the
    #: working tree may hold some files of each side.
    pending: Pending | None = None

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    def summary(self) -> str:
        """ "3 files changed (+41 −7)", the line front ends show at a turn's end."""
        n = len(self.files)
        text = f"{n} file{'s' if n != 1 else ''} changed (+{self.added} \u2212{self.removed})"
        if self.not_captured:
            text += f"; {len(self.not_captured)} not captured"
        return text

    def flags(self) -> str:
        """ "applied", "undone, cancelled", "applied, undo interrupted …" for listings."""
        flags = [self.state] + (["cancelled"] if self.cancelled else [])
        if self.pending is not None:
            flags.append(f"{self.pending} interrupted: the next undo or redo finishes it")
        return ", ".join(flags)

    def with_state(self, state: State, at: float | None) -> ChangeSet:
        return replace(self, state=state, undone_at=at, pending=None)

    def with_pending(self, pending: Pending) -> ChangeSet:
        return replace(self, pending=pending)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "number": self.number,
            "prompt": self.prompt,
            "created_at": self.created_at,
            "cwd": self.cwd,
            "files": [f.to_json() for f in self.files],
            "not_captured": [{"path": n.path, "reason": n.reason} for n in self.not_captured],
            "new_dirs": list(self.new_dirs),
            "cancelled": self.cancelled,
            "state": self.state,
            "undone_at": self.undone_at,
            "notes": list(self.notes),
            "pending": self.pending,
        }

    @staticmethod
    def from_json(d: Any) -> ChangeSet:
        return ChangeSet(
            session_id=str(d["session_id"]),
            turn_id=str(d["turn_id"]),
            number=int(d["number"]),
            prompt=str(d.get("prompt", "")),
            created_at=float(d["created_at"]),
            cwd=str(d["cwd"]),
            files=tuple(FileChange.from_json(f) for f in d["files"]),
            not_captured=tuple(
                NotCaptured(str(n["path"]), str(n["reason"])) for n in d.get("not_captured", ())
            ),
            new_dirs=tuple(str(p) for p in d.get("new_dirs", ())),
            cancelled=bool(d.get("cancelled")),
            state="undone" if d.get("state") == "undone" else "applied",
            undone_at=d.get("undone_at"),
            notes=tuple(str(n) for n in d.get("notes", ())),
            pending=d["pending"] if d.get("pending") in ("undo", "redo") else None,
        )
