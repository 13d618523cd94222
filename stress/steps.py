"""Counting a session's task steps, and cancelling its turn right after step k.

One `StepInstrument` (a `trio.abc.Instrument`) is installed for the whole stress run; each
run registers its session with `watch()`. A task belongs to a watched session when its
parent-nursery chain reaches the session's nursery (`session._nursery`): the turn task and
everything started under it (the provider's SDK/anyio tasks, process readers, …). The
membership is decided once, in `task_spawned`, from the parent nursery and the task that
opened it, so the per-step hooks are a dictionary lookup.

A *step* is one run of a task between two scheduling points (`before_task_step` →
`after_task_step`). Cancel injection is synchronous: `after_task_step` of step k calls
`session.cancel(reason)` from inside the scheduler, after trio processed what the task
yielded and before any other task runs. So the cancel lands exactly at the scheduling point
that ended step k — the same as if a front end had called `cancel()` at that moment, with
zero latency. The phase is read from the turn state (`session._turn`) in the same hook.

Hooks never raise: trio would uninstall an instrument that raised. Errors are kept in
`SessionSteps.errors` and reported as harness failures.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from rawtrio.contracts import TurnOutcome
from rawtrio.messages import AssistantMessage, Message, ToolResult
from rawtrio.runtime.session import Session
from rawtrio.runtime.turn import Turn
from rawtrio.store.memory import MemoryStore
from stress.scenarios import Phase


@dataclass(frozen=True)
class CancelMoment:
    """What the harness saw when it cancelled the turn after step `k`."""

    k: int
    phase: str
    #: The turn's step (model request number) at the cancel; 0 before the first.
    step: int
    #: The last event sequence number emitted before the cancel.
    seq: int
    #: Whether `session.cancel()` found a running turn.
    landed: bool
    #: Wall-clock time (comparable with `Event.ts`).
    at: float


@dataclass(eq=False)
class SessionSteps:
    """The step count of one watched session, and its pending cancel."""

    session: Session
    cancel_at: int | None = None
    record_phases: bool = False
    reason: str = ""
    steps: int = 0
    counting: bool = True
    cpu_s: float = 0.0
    #: Tasks of the session that have not exited yet → the session-nursery child they
    #: descend from (the turn task, for everything a turn starts).
    live: dict[trio.lowlevel.Task, trio.lowlevel.Task] = field(default_factory=dict)
    #: With `record_phases`: the phase after each step (index k-1).
    phases: list[str] = field(default_factory=list)
    cancel: CancelMoment | None = None
    errors: list[str] = field(default_factory=list)
    turn: Turn | None = None
    #: Cancel at the n-th step that ends in phase P instead of after step `cancel_at`
    #: (`(P, n)`): a phase a wait spends one scheduling point in (a permission wait, a
    #: retry wait) moves between reruns with the stream's timing; this finds it.
    cancel_in: tuple[str, int] | None = None
    seen_in: int = 0
    #: Hook processes of the session running now (counted by a wrapper `watch` installs).
    hooks_running: int = 0
    #: Whether the model request made last failed and its retry was not sent yet (the
    #: harness reads its fake model server's request log).
    failed_request: Callable[[], bool] | None = None
    _step_started: float = 0.0

    def turn_tasks(self) -> list[str]:
        """Names of the live tasks that descend from the measured turn's task."""
        if self.turn is None:
            return []
        name = f"turn {self.turn.id}"
        return sorted(t.name for t, root in self.live.items() if root.name == name)

    def stop(self) -> None:
        """Stop counting (the measured turn is over); later tasks are not tracked."""
        self.counting = False

    def phase(self) -> str:
        turn = self.turn if self.turn is not None else self.session._turn
        if turn is None or turn.done.is_set() or self.session._turn is not turn:
            return Phase.AFTER_END
        return phase_of(self.session, turn, self)

    def _inject(self) -> None:
        phase = self.phase()
        seq = self.session.recorder.seq
        step = self.turn.step if self.turn is not None else 0
        landed = self.session.cancel(self.reason)
        self.cancel = CancelMoment(self.steps, phase, step, seq, landed, time.time())


class ObservedStore(MemoryStore):
    """The in-memory store, telling the harness while a commit is in progress.

    A commit runs shielded; while it does, `turn.streaming` may still be set (the message
    is being committed), so the phase is `commit` rather than `streaming`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.committing = 0

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        self.committing += 1
        try:
            await super().commit(session_id, turn_id, messages)
        finally:
            self.committing -= 1

    async def end_turn(
        self, session_id: str, turn_id: str, outcome: TurnOutcome, reason: str
    ) -> None:
        self.committing += 1
        try:
            await super().end_turn(session_id, turn_id, outcome, reason)
        finally:
            self.committing -= 1


def phase_of(session: Session, turn: Turn, steps: SessionSteps | None = None) -> str:
    """The phase of a running turn (see `Phase`), from the state the loop keeps honest."""
    store = session.store
    if getattr(store, "fired", None) is not None:  # stress.faults.FaultyStore
        return Phase.STORE_ERROR
    if isinstance(store, ObservedStore) and store.committing:
        return Phase.COMMIT
    if steps is not None and steps.failed_request is not None and steps.failed_request():
        return Phase.RETRY_WAIT
    if session.approvals.pending():
        return Phase.PERMISSION_WAIT
    if steps is not None and steps.hooks_running:
        return Phase.HOOK
    last = session.compactions.last
    if session.compactions.auto_turn == turn.id and (last is None or last.turn_id != turn.id):
        return Phase.COMPACTION
    if turn.streaming is not None:
        return Phase.STREAMING_TOOL_CALL if turn.streaming.announced else Phase.STREAMING
    if turn.running:
        return _child_phase(session) or Phase.TOOL_RUNNING
    if turn.step == 0:
        return Phase.START
    tail = session.context[-1] if session.context else None
    if turn.pending:
        return Phase.BETWEEN_CALLS if isinstance(tail, ToolResult) else Phase.BATCH_COMMITTED
    if isinstance(tail, AssistantMessage) and not tail.tool_calls:
        return Phase.FINISHING
    if isinstance(tail, ToolResult):
        return Phase.BETWEEN_STEPS
    # The user message is committed and the first request is being prepared.
    return Phase.START


def _child_phase(session: Session) -> str | None:
    """Where a running `task` child of the session is, if one is (its own turn state)."""
    for child in list(session.subagents.live.values()):
        turn = getattr(child, "_turn", None)
        if not isinstance(turn, Turn):
            continue
        if turn.streaming is not None:
            return Phase.CHILD_STREAMING
        if turn.running:
            return Phase.CHILD_TOOL_RUNNING
    return None


def _count_hooks(session: Session, steps: SessionSteps) -> None:
    """Count the session's running hook processes in `steps.hooks_running`.

    Wraps the session's `HookRunner._run_one` (one hook process, from spawn to reaped)."""
    run_one: Callable[..., Awaitable[Any]] = session.hooks._run_one

    async def counted(*args: Any, **kwargs: Any) -> Any:
        steps.hooks_running += 1
        try:
            return await run_one(*args, **kwargs)
        finally:
            steps.hooks_running -= 1

    setattr(session.hooks, "_run_one", counted)  # noqa: B010 (a method, set on the instance)


class StepInstrument(trio.abc.Instrument):
    def __init__(self) -> None:
        self._by_nursery: dict[trio.Nursery, SessionSteps] = {}
        self._owner: dict[trio.lowlevel.Task, SessionSteps] = {}

    def watch(
        self,
        session: Session,
        *,
        cancel_at: int | None = None,
        cancel_in: tuple[str, int] | None = None,
        record_phases: bool = False,
        reason: str = "stress cancel",
    ) -> SessionSteps:
        """Count the steps of `session`'s tasks from now on; cancel after step `cancel_at`."""
        nursery = session._nursery
        if nursery is None:
            raise RuntimeError("the session has no nursery (not started, or closed)")
        steps = SessionSteps(session, cancel_at, record_phases, reason, cancel_in=cancel_in)
        self._by_nursery[nursery] = steps
        _count_hooks(session, steps)
        return steps

    def unwatch(self, steps: SessionSteps) -> None:
        steps.stop()
        for nursery, owner in list(self._by_nursery.items()):
            if owner is steps:
                del self._by_nursery[nursery]
        for task in [t for t, o in self._owner.items() if o is steps]:
            del self._owner[task]

    # --- trio hooks (must never raise) ----------------------------------------------------

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        parent = task.parent_nursery
        if parent is None:
            return
        owner = self._by_nursery.get(parent)
        root: trio.lowlevel.Task | None = task
        if owner is None and parent.parent_task is not None:
            owner = self._owner.get(parent.parent_task)
            root = None if owner is None else owner.live.get(parent.parent_task)
        if owner is not None and owner.counting and root is not None:
            self._owner[task] = owner
            owner.live[task] = root

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        # The task's final step is still reported to `after_task_step`, which forgets it.
        owner = self._owner.get(task)
        if owner is not None:
            owner.live.pop(task, None)

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        owner = self._owner.get(task)
        if owner is not None and owner.counting:
            owner._step_started = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        owner = self._owner.get(task)
        if owner is None:
            return
        if task not in owner.live:
            del self._owner[task]
        if not owner.counting:
            return
        try:
            owner.cpu_s += time.perf_counter() - owner._step_started
            owner.steps += 1
            if owner.turn is None:
                owner.turn = owner.session._turn
            if owner.record_phases:
                owner.phases.append(owner.phase())
            if owner.cancel_in is not None and owner.cancel is None:
                target, n = owner.cancel_in
                if owner.phase() == target:
                    owner.seen_in += 1
                    if owner.seen_in == n:
                        owner._inject()
            elif owner.cancel_at == owner.steps and owner.cancel is None:
                owner._inject()
        except Exception as exc:  # a hook must not raise; report it instead
            owner.errors.append(f"instrument error after step {owner.steps}: {exc!r}")
