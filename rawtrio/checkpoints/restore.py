"""Undo and redo a change set, never overwriting a change made outside rawtrio silently.

Undo puts each file back to its `before` (content and mode; a file the turn created is
removed, one it deleted is written again, directories the turn created are removed when
left empty). Redo puts each file to its `after`. Before either writes anything, every
file is compared with what the change set expects to find (`after` for undo, `before` for
redo); a file that differs was changed since, outside the turn: that is a conflict, and
nothing is written unless the caller forces it (`force=True`).

A rewind (`plan_rewind`, `apply_rewind`) undoes several change sets, newest first, and
checks every file of all of them before the first is written.

Each file is written as a temporary file in its folder, given its mode, and renamed over
the target, so a reader never sees half a file.

An undo or redo first marks the record `pending` (written durably), then writes the files,
then records the new state. A crash in between leaves the record saying so: the next undo
or redo of that session picks that record first and completes it — a file found at either
side of the change is then no conflict, and the temporaries the killed writer left beside
the files are removed — and says it completed an interrupted one.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rawtrio.checkpoints.model import ChangeSet, FileChange, Version
from rawtrio.checkpoints.objects import blob_id, remove_stale_temporaries
from rawtrio.checkpoints.store import CheckpointStore, now


class CheckpointError(Exception):
    """Nothing to undo or redo, or a change set whose content is gone."""


@dataclass(frozen=True, slots=True)
class Conflict:
    path: str
    expected: str
    found: str

    def describe(self) -> str:
        return f"{self.path}: expected {self.expected}, found {self.found}"


@dataclass(frozen=True, slots=True)
class Outcome:
    change_set: ChangeSet
    #: Conflicts found; when not forced, nothing was written.
    conflicts: tuple[Conflict, ...]
    applied: bool
    restored: tuple[str, ...] = ()
    #: The undo or redo a crash interrupted that this one completed ("undo" / "redo").
    resumed: str | None = None

    def describe(self, action: str) -> str:
        cs = self.change_set
        head = f"checkpoint {cs.number} of session {cs.session_id[:8]} ({cs.summary()})"
        if not self.applied:
            lines = [f"{action} refused: {len(self.conflicts)} file(s) changed since the turn"]
            lines += [f"  {c.describe()}" for c in self.conflicts]
            lines.append("nothing was written; use --force to overwrite them")
            return "\n".join(lines)
        lines = [f"{action} {head}: {len(self.restored)} file(s) put back"]
        if self.resumed is not None:
            lines.insert(0, f"completed an interrupted {self.resumed} of checkpoint {cs.number}")
        lines += [f"  {p}" for p in self.restored]
        if self.conflicts:
            lines.append(f"overwrote {len(self.conflicts)} file(s) changed outside the turn")
        if cs.not_captured:
            lines.append("not captured, so not restored:")
            lines += [f"  {n.path}: {n.reason}" for n in cs.not_captured]
        return "\n".join(lines)


def current(path: Path) -> Version | None:
    """What is at `path` now, as a Version (blob id computed, nothing stored)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        data = os.fsencode(os.readlink(path))
        return Version(blob_id(data), mode, len(data), symlink=True)
    if stat.S_ISDIR(st.st_mode):
        return Version("directory", mode, 0)
    data = path.read_bytes()
    return Version(blob_id(data), mode, len(data))


def _same(a: Version | None, b: Version | None) -> bool:
    if a is None or b is None:
        return a is b
    if a.symlink or b.symlink:
        return a.symlink == b.symlink and a.blob == b.blob
    return a.blob == b.blob and a.mode == b.mode


def _show(v: Version | None) -> str:
    if v is None:
        return "no file"
    if v.blob == "directory":
        return "a directory"
    return f"{v.size} bytes, mode {v.mode:o}" + (" (symlink)" if v.symlink else "")


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}.rawtrio-restore-"


def _write(store: CheckpointStore, path: Path, v: Version) -> None:
    data = store.objects.get(v.blob)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{_tmp_prefix(path)}{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        if v.symlink:
            os.symlink(os.fsdecode(data), tmp)
        else:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, v.mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _apply(store: CheckpointStore, cs: ChangeSet, undo: bool, force: bool) -> Outcome:
    cwd = Path(cs.cwd)

    def at(rel: str) -> Path:
        return Path(rel) if os.path.isabs(rel) else cwd / rel

    def pair(f: FileChange) -> tuple[Version | None, Version | None]:
        return (f.after, f.before) if undo else (f.before, f.after)

    for f in cs.files:
        _expected, target = pair(f)
        if target is not None and not target.symlink and not store.objects.has(target.blob):
            raise CheckpointError(
                f"checkpoint {cs.number}: the saved content of {f.path} is gone "
                "(dropped by the size cap); nothing was written"
            )
    resumed = cs.pending  # a crash cut an undo or redo: files may be on either side
    conflicts = []
    done_already = set()
    for f in cs.files:
        expected, target = pair(f)
        if resumed is not None:
            prefix = _tmp_prefix(at(f.path))
            remove_stale_temporaries(at(f.path).parent.glob(f"{prefix}*"), prefix)
        try:
            found = current(at(f.path))
        except OSError as exc:
            conflicts.append(Conflict(f.path, _show(expected), f"unreadable ({exc.strerror})"))
            continue
        if resumed is not None and _same(found, target):
            done_already.add(f.path)
        elif not _same(found, expected):
            conflicts.append(Conflict(f.path, _show(expected), _show(found)))
    if conflicts and not force:
        return Outcome(cs, tuple(conflicts), applied=False, resumed=resumed)
    store.record(cs.with_pending("undo" if undo else "redo"))
    if not undo:
        for d in cs.new_dirs:
            at(d).mkdir(parents=True, exist_ok=True)
    restored = []
    for f in cs.files:
        _expected, target = pair(f)
        path = at(f.path)
        if f.path in done_already:  # put back by the interrupted undo or redo
            restored.append(f.path)
            continue
        if target is None:
            if path.is_dir() and not path.is_symlink():
                continue  # a directory stands there now: never removed by undo
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            _write(store, path, target)
        restored.append(f.path)
    if undo:
        for d in sorted(cs.new_dirs, key=lambda p: p.count("/"), reverse=True):
            with contextlib.suppress(OSError):
                at(d).rmdir()  # only when empty
    changed = cs.with_state("undone", now()) if undo else cs.with_state("applied", None)
    store.record(changed)
    return Outcome(
        changed, tuple(conflicts), applied=True, restored=tuple(restored), resumed=resumed
    )


def _interrupted(sets: list[ChangeSet]) -> ChangeSet | None:
    """The change set whose undo or redo a crash cut, if any: completed first."""
    return next((c for c in reversed(sets) if c.pending is not None), None)


def finish_interrupted(store: CheckpointStore, session_id: str) -> Outcome | None:
    """Complete the session's undo or redo a crash cut, as its next undo or redo would, so
    that a rewind plans from whole change sets (None when none was cut). A file that is on
    neither side is a conflict and nothing is written (the rewind's plan then shows it).
    Blocking: call from a worker thread."""
    cut = _interrupted(store.change_sets(session_id))
    if cut is None:
        return None
    return _apply(store, cut, undo=cut.pending == "undo", force=False)


def pick_undo(store: CheckpointStore, session_id: str | None, number: int | None) -> ChangeSet:
    sets = store.find(session_id, number)
    if (cut := _interrupted(sets)) is not None:
        return cut
    if number is not None:
        if not sets:
            raise CheckpointError(f"no checkpoint {number} in that session")
        if sets[-1].state == "undone":
            raise CheckpointError(f"checkpoint {number} is already undone; use redo")
        return sets[-1]
    applied = [c for c in sets if c.state == "applied"]
    if not applied:
        raise CheckpointError("nothing to undo: no turn that changed files is left applied")
    return applied[-1]


def pick_redo(store: CheckpointStore, session_id: str | None, number: int | None) -> ChangeSet:
    sets = store.find(session_id, number)
    if (cut := _interrupted(sets)) is not None:
        return cut
    undone = [c for c in sets if c.state == "undone"]
    if not undone:
        raise CheckpointError("nothing to redo: no undone checkpoint")
    return max(undone, key=lambda c: c.undone_at or 0.0)


def undo(
    store: CheckpointStore,
    session_id: str | None = None,
    number: int | None = None,
    *,
    force: bool = False,
) -> Outcome:
    """Undo the last applied change set (of a session, or the project), or checkpoint
    `number`. Blocking: call from a worker thread."""
    return _apply(store, pick_undo(store, session_id, number), undo=True, force=force)


def redo(
    store: CheckpointStore,
    session_id: str | None = None,
    number: int | None = None,
    *,
    force: bool = False,
) -> Outcome:
    """Re-apply the most recently undone change set."""
    return _apply(store, pick_redo(store, session_id, number), undo=False, force=force)


@dataclass(frozen=True, slots=True)
class RewindPlan:
    """What a rewind would undo: the applied change sets, newest first, and the files
    changed outside rawtrio that it would overwrite (checked before anything is written)."""

    change_sets: tuple[ChangeSet, ...]
    conflicts: tuple[Conflict, ...]

    @property
    def files(self) -> tuple[str, ...]:
        """The files the rewind puts back (each once)."""
        return tuple(sorted({f.path for cs in self.change_sets for f in cs.files}))


def plan_rewind(store: CheckpointStore, sets: Iterable[ChangeSet]) -> RewindPlan:
    """Plan undoing every applied change set of `sets`, newest first. A file is a
    conflict when it is not what the newest of them left, or when it was changed outside
    rawtrio between two of them (undoing the older one would overwrite that change).
    `CheckpointError` when saved content is gone. Blocking: call from a worker thread."""
    todo = sorted((c for c in sets if c.state == "applied"), key=lambda c: -c.number)
    for cs in todo:
        for f in cs.files:
            kept = f.before
            if kept is not None and not kept.symlink and not store.objects.has(kept.blob):
                raise CheckpointError(
                    f"checkpoint {cs.number}: the saved content of {f.path} is gone "
                    "(dropped by the size cap); nothing was written"
                )
    conflicts: dict[str, Conflict] = {}
    #: Per file: what it is now, then what each undo leaves it as (the older `before`).
    state: dict[str, Version | None] = {}
    for cs in todo:
        for f in cs.files:
            key = os.path.join(cs.cwd, f.path)
            if key in conflicts:
                continue
            if key in state:
                found = state[key]
                between = f" (changed outside rawtrio after checkpoint {cs.number})"
            else:
                try:
                    found = current(Path(key))
                except OSError as exc:
                    conflicts[key] = Conflict(
                        f.path, _show(f.after), f"unreadable ({exc.strerror})"
                    )
                    continue
                between = ""
            if not _same(found, f.after):
                conflicts[key] = Conflict(f.path, _show(f.after), _show(found) + between)
            state[key] = f.before
    return RewindPlan(tuple(todo), tuple(conflicts.values()))


def apply_rewind(store: CheckpointStore, plan: RewindPlan, *, force: bool) -> list[Outcome]:
    """Undo the plan's change sets newest first. With conflicts and no `force`, nothing is
    written (an empty list). Stops at a change set refused for a conflict that arose since
    the plan (its outcome is last, `applied` false). Blocking: call from a worker thread."""
    if plan.conflicts and not force:
        return []
    done: list[Outcome] = []
    for cs in plan.change_sets:
        outcome = _apply(store, cs, undo=True, force=force)
        done.append(outcome)
        if not outcome.applied:
            break
    return done


def rewind(
    store: CheckpointStore, session_id: str, number: int, *, force: bool = False
) -> list[Outcome]:
    """Put the files back to just before checkpoint `number` of the session: undo every
    applied change set from the newest down to `number`. Every file is checked first: with
    a conflict and no `force`, nothing is written and the one outcome returned (the newest
    change set's, `applied` false) lists the conflicts."""
    finish_interrupted(store, session_id)
    sets = store.change_sets(session_id)
    if not any(c.number == number for c in sets):
        raise CheckpointError(f"no checkpoint {number} in that session")
    plan = plan_rewind(store, [c for c in sets if c.number >= number])
    if not plan.change_sets:
        raise CheckpointError(f"checkpoint {number} and every later one are undone already")
    if plan.conflicts and not force:
        return [Outcome(plan.change_sets[0], plan.conflicts, applied=False)]
    return apply_rewind(store, plan, force=force)
