"""`TurnCheckpoints`: what the runtime calls around each tool call and at a turn's end.

The interface the runtime uses is three calls, nothing else:

- `before_call(turn_id, tool_id, args, read_only)` — before a handler starts. For the file
  tools (`write_file`, `edit_file`) the exact content of the target path is kept the first
  time the turn touches it. For any other tool that may write (`bash`, MCP tools) the
  project tree is snapshotted (rawtrio.checkpoints.tree). Read-only tools cost nothing.
- `after_call()` — after a handler returned: the tree is compared with the snapshot and
  each path that changed keeps its first "before" of the turn. It returns what this call
  changed, for the call's result details (`rawtrio.checkpoints.diff.call_changes`).
- `end_turn(turn_id, prompt, cancelled)` — at the turn's end, whatever ended it (called
  shielded, with a deadline). A call a cancellation cut is compared here, so the change set
  says what was changed up to the cut. Each path's "after" is what is on disk now; paths
  whose before and after agree are left out. The record is written after its blobs
  (rawtrio.checkpoints.store), then the project's size cap is applied.

Background jobs (`bash` with `background: true`) keep changing files after their call
returned. The snapshot taken before such a call is compared again at the turn's end, so
what the job changed during the turn is captured. What a job changes after the turn ended
is not: when a change set is recorded while jobs of the session still run (`jobs`, set by
the session), a `not_captured` entry names them, and the turn-end notice shows it.

Blocking work (reading files, walking the tree) runs in worker threads; the tree walk
stops when its caller is cancelled (before a call starts, that means the call never runs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from rawtrio.checkpoints.diff import PathChange, call_changes
from rawtrio.checkpoints.model import CapturedBy, ChangeSet, FileChange, NotCaptured, Version
from rawtrio.checkpoints.store import CheckpointStore, now
from rawtrio.checkpoints.tree import Budget, Seen, Snapshot, read_version, snapshot

if TYPE_CHECKING:
    from rawtrio.checkpoints.restore import Outcome
    from rawtrio.tools.background import BackgroundJobs

#: Tools that change exactly the file named by their `path` argument.
FILE_TOOLS: Final = frozenset({"write_file", "edit_file"})
#: Tools that are not read-only but never change the working tree themselves. `task` runs
#: a subagent: a child session with checkpoints of its own (and `task` calls run side by
#: side, which one tree comparison per call could not tell apart).
NO_FILE_CHANGES: Final = frozenset(
    {"todo_write", "todo_read", "bash_output", "bash_stop", "load_skill", "task"}
)
#: Files whose line counts are worked out for the summary (larger: counted as 0/0).
COUNT_LINES_UP_TO: Final = 1024 * 1024


@dataclass
class Before:
    version: Version | None
    captured_by: CapturedBy
    reason: str | None = None


@dataclass
class TurnState:
    turn_id: str
    budget: Budget
    before: dict[str, Before] = field(default_factory=dict)
    new_dirs: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    #: The snapshot taken before the call now running, when it is compared by scan.
    open_scan: Snapshot | None = None
    #: The snapshot before the turn's first call that started a background job: compared
    #: again at the turn's end (what the job changed meanwhile).
    job_scan: Snapshot | None = None
    #: The commands of the background jobs the turn started.
    jobs_started: list[str] = field(default_factory=list)
    #: Said when jobs still run at the turn's end: with the turn's change set, if it has
    #: one (a turn that changed nothing and started no job records nothing for it).
    jobs_note: str | None = None


@dataclass(frozen=True, slots=True)
class TurnChanges:
    """What `end_turn` gives the session: the change set, and a notice when the cap
    dropped older ones."""

    change_set: ChangeSet
    cap_notice: str | None


class TurnCheckpoints:
    def __init__(self, store: CheckpointStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.cwd = store.cwd
        self._turn: TurnState | None = None
        #: Snapshot cache across the session's turns (files unchanged are not read again).
        self._cache: dict[str, Seen] = {}
        #: The session's background jobs, for the turn-end note (None: no session's).
        self.jobs: Callable[[], BackgroundJobs | None] | None = None

    def _state(self, turn_id: str) -> TurnState:
        if self._turn is None or self._turn.turn_id != turn_id:
            self._turn = TurnState(turn_id, Budget(self.store.limits.max_turn_bytes))
        return self._turn

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.cwd).as_posix()
        except ValueError:
            return str(path)

    def abs(self, rel: str) -> Path:
        return Path(rel) if os.path.isabs(rel) else self.cwd / rel

    async def before_call(
        self, turn_id: str, tool_id: str, args: Mapping[str, Any], *, read_only: bool
    ) -> None:
        if read_only or tool_id in NO_FILE_CHANGES:
            return
        state = self._state(turn_id)
        try:
            if tool_id in FILE_TOOLS:
                raw = args.get("path")
                if isinstance(raw, str) and raw:
                    await trio.to_thread.run_sync(self._keep_file, state, raw)
                return
            state.open_scan = await trio.to_thread.run_sync(self._snapshot, state)
            if tool_id == "bash" and args.get("background"):
                state.jobs_started.append(str(args.get("command", ""))[:80])
                if state.job_scan is None:
                    state.job_scan = state.open_scan
        except OSError as exc:  # the store is unwritable: the call still runs, and it is said
            state.notes.append(f"a snapshot before {tool_id} failed: {exc}")

    async def after_call(self) -> dict[str, Any]:
        """Compare the tree after a scanned call; the `details` entries that say what the
        call changed (`call_changes`; {} for none, or for a call that was not scanned)."""
        state = self._turn
        if state is None or state.open_scan is None:
            return {}
        try:
            changed = await trio.to_thread.run_sync(self._compare, state)
            return await trio.to_thread.run_sync(call_changes, self.store.objects, changed)
        except OSError as exc:
            state.open_scan = None
            state.notes.append(f"comparing the tree after a call failed: {exc}")
            return {}

    async def end_turn(self, turn_id: str, prompt: str, *, cancelled: bool) -> TurnChanges | None:
        state = self._turn
        if state is None or state.turn_id != turn_id:
            return None
        self._turn = None
        if self.jobs is not None:  # a session's: the jobs that still run
            shown = self._running_jobs()
        else:  # no session to ask: the jobs this turn started
            shown = [f"started by `{c}`" for c in state.jobs_started]
        if shown:
            state.jobs_note = (
                "background job(s) may still be changing files ("
                + "; ".join(shown)
                + "): what they change after this turn ended is not captured"
            )
        return await trio.to_thread.run_sync(self._finish, state, prompt, cancelled)

    def _running_jobs(self) -> list[str]:
        jobs = self.jobs() if self.jobs is not None else None
        if jobs is None:
            return []
        return [f"{j.id}: `{j.command[:80]}`" for j in jobs.jobs() if j.running]

    async def undo(self, number: int | None = None, *, force: bool = False) -> Outcome:
        """Undo this session's last applied change set (or checkpoint `number`); between
        turns only (the caller checks). Raises `CheckpointError` when there is none."""
        return await trio.to_thread.run_sync(self._restore, True, number, force)

    async def redo(self, number: int | None = None, *, force: bool = False) -> Outcome:
        return await trio.to_thread.run_sync(self._restore, False, number, force)

    def _restore(self, is_undo: bool, number: int | None, force: bool) -> Outcome:
        from rawtrio.checkpoints.restore import redo, undo  # only for /undo and /redo

        self._cache.clear()  # the tree changes under the snapshot cache
        run = undo if is_undo else redo
        return run(self.store, self.session_id, number, force=force)

    # --- in worker threads ----------------------------------------------------------

    def _keep_file(self, state: TurnState, raw: str) -> None:
        path = Path(os.path.abspath(self.cwd / Path(raw).expanduser()))
        rel = self.rel(path)
        if rel in state.before:
            return
        self.store.ensure()
        try:
            got = read_version(path, self.store.objects, self.store.limits, state.budget)
        except OSError as exc:
            state.before[rel] = Before(None, "tool", f"unreadable: {exc.strerror}")
            return
        if got is None:
            state.before[rel] = Before(None, "tool")
            parent = path.parent
            while parent != self.cwd and self.cwd in parent.parents and not parent.exists():
                state.new_dirs.add(self.rel(parent))
                parent = parent.parent
            return
        _key, version, reason = got
        state.before[rel] = Before(version, "tool", reason)

    def _snapshot(self, state: TurnState) -> Snapshot:
        """The tree now, every new blob durable together at the end (objects.batch)."""
        self.store.ensure()
        objects = self.store.objects
        with objects.batch():
            return snapshot(
                self.cwd,
                objects,
                self.store.limits,
                state.budget,
                self._cache,
                skip=self.store.own_folders(),
            )

    def _compare(self, state: TurnState, old: Snapshot | None = None) -> list[PathChange]:
        """Note each changed path's first before of the turn, comparing the tree with the
        snapshot before the open call (or with `old`); what changed since that snapshot."""
        open_call = old is None
        old = state.open_scan if old is None else old
        assert old is not None
        new = self._snapshot(state)
        if open_call:
            state.open_scan = None
        if old.truncated or new.truncated:
            note = (
                f"the project has more than {self.store.limits.max_files} files: changes "
                "past that many were not compared"
            )
            if note not in state.notes:
                state.notes.append(note)
        changed: list[PathChange] = []
        for rel in old.files.keys() | new.files.keys():
            a, b = old.files.get(rel), new.files.get(rel)
            if a is not None and b is not None and a.key == b.key:
                continue
            if a is None or b is None or a.version is None or a.version != b.version:
                changed.append(PathChange(rel, a, b))
            if rel in state.before:
                continue
            if a is None:
                state.before[rel] = Before(None, "scan")
            else:
                state.before[rel] = Before(a.version, "scan", a.reason)
        state.new_dirs |= new.dirs - old.dirs
        return changed

    def _finish(self, state: TurnState, prompt: str, cancelled: bool) -> TurnChanges | None:
        if state.open_scan is not None:  # a call the cancellation cut
            self._compare(state)
        if state.job_scan is not None:  # what background jobs changed during the turn
            self._compare(state, state.job_scan)
        store = self.store
        with store.objects.batch():  # the "after" blobs: durable before the record names them
            cs = self._change_set(state, prompt, cancelled)
        if cs is None:
            return None
        store.record(cs)
        dropped = store.enforce_cap()
        if dropped is not None:
            self._cache.clear()
        return TurnChanges(cs, dropped.notice(store.limits.project_cap_bytes) if dropped else None)

    def _change_set(self, state: TurnState, prompt: str, cancelled: bool) -> ChangeSet | None:
        store, objects = self.store, self.store.objects
        after_budget = Budget(store.limits.max_turn_bytes)
        files: list[FileChange] = []
        missed: list[NotCaptured] = []
        for rel in sorted(state.before):
            b = state.before[rel]
            path = self.abs(rel)
            try:
                got = read_version(path, objects, store.limits, after_budget)
            except OSError as exc:
                missed.append(NotCaptured(rel, f"unreadable after the turn: {exc.strerror}"))
                continue
            after = got[1] if got is not None else None
            if b.reason is not None:
                if got is None or got[1] != b.version or b.version is None:
                    missed.append(NotCaptured(rel, f"its content before the turn: {b.reason}"))
                continue
            if got is not None and got[2] is not None:
                missed.append(NotCaptured(rel, f"its content after the turn: {got[2]}"))
                continue
            if b.version == after:
                continue
            if b.version is not None and not objects.has(b.version.blob):
                missed.append(NotCaptured(rel, "its snapshot was dropped by the size cap"))
                continue
            added, removed = count_lines(objects_get(store, b.version), objects_get(store, after))
            files.append(FileChange(rel, b.version, after, b.captured_by, added, removed))
        new_dirs = tuple(sorted(d for d in state.new_dirs if self.abs(d).is_dir()))
        missed += [NotCaptured("*", note) for note in state.notes]
        if state.jobs_note is not None and (files or missed or state.jobs_started):
            missed.append(NotCaptured("*", state.jobs_note))
        if not files and not missed:
            return None
        return ChangeSet(
            session_id=self.session_id,
            turn_id=state.turn_id,
            number=store.next_number(self.session_id),
            prompt=prompt[:500],
            created_at=now(),
            cwd=str(self.cwd),
            files=tuple(files),
            not_captured=tuple(missed),
            new_dirs=new_dirs,
            cancelled=cancelled,
            notes=tuple(state.notes),
        )


def objects_get(store: CheckpointStore, v: Version | None) -> bytes | None:
    if v is None or v.symlink or v.size > COUNT_LINES_UP_TO:
        return b"" if v is None else None
    try:
        return store.objects.get(v.blob)
    except OSError:
        return None


def count_lines(before: bytes | None, after: bytes | None) -> tuple[int, int]:
    """(+added, −removed) lines, as a unified diff counts them; (0, 0) for binary."""
    if before is None or after is None or b"\0" in before[:8192] or b"\0" in after[:8192]:
        return 0, 0
    import difflib  # loaded by the first changed text file, not by every turn

    a = before.decode("utf-8", "replace").splitlines()
    b = after.decode("utf-8", "replace").splitlines()
    added = removed = 0
    for line in difflib.unified_diff(a, b, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed
