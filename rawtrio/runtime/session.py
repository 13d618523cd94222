"""A live session: a trio nursery that owns everything its turns start.

Front ends call the operations (`submit`, `cancel`, `subscribe`, `close`, `compact`,
`set_mode`, `set_model`, `answer_permission`, …) and read events; they never run the loop
themselves. One `Session` object per session id per process (the `Runtime` enforces it).

The session is the lifecycle and the operations; its parts do the rest:

- `recorder` (rawtrio.runtime.recorder): the commit points, the events, the turn's end
  and what a store fault left unsaved;
- `model` (rawtrio.runtime.model): the provider, the request, accounting and usage,
  switching models;
- `compactions` (rawtrio.context.compaction_state): when automatic compaction is due.

A turn's code (rawtrio.runtime.loop, gate, compaction) sees the session only through the
`TurnHost` protocol (rawtrio.runtime.host), never this class.

Exception-group policy: a turn task catches every `Exception` it can raise (a provider
failure, a store fault or a bug ends the turn with outcome `error`), so the session
nursery only ever sees `trio.Cancelled`, and never raises an `ExceptionGroup` to its
owner. Should anything else still fail once the session runs, `run` logs it and the
session ends on its own: one session never takes the runtime (and every other session
in the process) down. Nurseries inside tools (process readers) unwrap their own groups
before returning.

Store faults: see rawtrio.runtime.recorder; until what a fault left unsaved is written,
`submit` raises the store's error and nothing else changes.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import trio

from rawtrio import events as ev
from rawtrio.context.accounting import UsageTotals
from rawtrio.context.compaction_state import CompactionState
from rawtrio.contracts import CLEANUP_DEADLINE_S, TurnOutcome
from rawtrio.errors import ProviderError, SessionClosed, TurnInProgress
from rawtrio.frozen import freeze
from rawtrio.hooks import HookEvent, HookOutcome, HookRunner, payloads
from rawtrio.messages import Message
from rawtrio.permissions.approval import ApprovalBroker, ApprovalDecision
from rawtrio.permissions.policy import PermissionPolicy
from rawtrio.permissions.rules import PermissionMode
from rawtrio.providers.base import Provider, ProviderSettings, ToolSpec
from rawtrio.runtime import compaction, loop, tooldefs
from rawtrio.runtime.model import ModelBinding
from rawtrio.runtime.options import SessionOptions
from rawtrio.runtime.prompt import system_prompt
from rawtrio.runtime.recorder import (
    PENDING_NOTE_KEY,
    REMEMBER_ENDED,
    USAGE_STATE_KEY,
    Recorder,
)
from rawtrio.runtime.subagents import ChildOf, NarrowedPolicy, Subagents, add_usage
from rawtrio.runtime.subscribers import DEFAULT_BUFFER, Subscription
from rawtrio.runtime.turn import Turn
from rawtrio.store.base import SessionRecord, SessionStore
from rawtrio.store.errors import StoreError
from rawtrio.tools.background import BackgroundJobs, open_background_jobs
from rawtrio.tools.base import Tool
from rawtrio.tools.task import TASK_TOOL_ID
from rawtrio.tools.todo import STATE_KEY as PLAN_STATE_KEY
from rawtrio.tools.todo import Plan, TodoItem, plan_from_json, plan_to_json

if TYPE_CHECKING:
    from rawtrio.checkpoints.capture import TurnCheckpoints
    from rawtrio.hooks import HookReceipt
    from rawtrio.mcp.manager import McpServers
    from rawtrio.tools.registry import ToolRegistry

__all__ = [
    "PENDING_NOTE_KEY",
    "REMEMBER_ENDED",
    "USAGE_STATE_KEY",
    "Session",
    "SessionOptions",
]
log = logging.getLogger(__name__)
#: How long recording a turn's change set may take of the turn's cleanup deadline.
CHECKPOINT_DEADLINE_S = CLEANUP_DEADLINE_S / 2


class Session:
    def __init__(
        self,
        *,
        record: SessionRecord,
        options: SessionOptions,
        store: SessionStore,
        provider: Provider,
        registry: ToolRegistry,
        context: list[Message],
        last_seq: int,
        note: str | None = None,
        provider_factory: Callable[[ProviderSettings], Provider] | None = None,
        registry_factory: Callable[[SessionOptions], ToolRegistry] | None = None,
        child_of: ChildOf | None = None,
    ) -> None:
        self.record = record
        #: Set for a `task` child: its parent's policy, approvals and event bridge.
        self.child_of = child_of
        self._provider_factory = provider_factory
        self._registry_factory = registry_factory
        self.id = record.id
        self.cwd = options.cwd
        self.store = store
        self.registry = registry
        self.redactor = options.tools.redactor
        self.recorder = Recorder(
            session_id=self.id,
            store=store,
            redactor=self.redactor,
            context=context,
            last_seq=last_seq,
            note=note,
            forward=child_of.forward if child_of is not None else None,
        )
        self.model = ModelBinding(
            options=options,
            provider=provider,
            provider_factory=provider_factory,
            recorder=self.recorder,
            system_prompt=record.system_prompt,
        )
        self.compactions = CompactionState()
        self._turn: Turn | None = None
        self._compaction: trio.CancelScope | None = None
        self._closing = False
        self._close_reason = "session closed"
        self._close_requested = trio.Event()
        self._finished = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.policy = PermissionPolicy(
            options.permission_rules,
            mode=options.permission_mode,
            headless=options.headless,
            assume_yes=options.assume_yes,
        )
        if child_of is not None:  # never more permissive than the parent; its approvals
            self.policy = NarrowedPolicy(self.policy, child_of.policy)
        self.approvals = child_of.approvals if child_of is not None else ApprovalBroker()
        self.subagents = Subagents(self)
        self._on_turn_cancel: list[Callable[[str], object]] = []
        self.hooks = HookRunner(
            options.hooks,
            session_id=self.id,
            cwd=self.cwd,
            grace_s=options.tools.sigterm_grace_s,
            env=options.env,
            strip_env=options.tools.strip_env,
            redactor=self.redactor,
            on_receipt=self._hook_receipt,
        )
        # The model-facing tool list is fixed for the session (modes never change it, so
        # the prompt cache survives): unconditionally denied tools are never shown.
        hidden = self.policy.hidden(t.id for t in registry.tools())
        if options.subagent_depth >= options.max_subagent_depth:
            hidden |= {TASK_TOOL_ID}  # children nest no deeper
        self.model.tool_specs = tuple(
            spec
            for tool, spec in zip(registry.tools(), registry.specs(), strict=True)
            if tool.id not in hidden
        )
        self.jobs: BackgroundJobs | None = None
        #: The session's MCP servers while it runs (None: none selected).
        self.mcp: McpServers | None = None
        self.plan: Plan | None = None
        #: Where the checkpoints go (None: off); `checkpoints` builds them when first used.
        self._checkpoint_dir = options.checkpoint_dir
        self._checkpoints: TurnCheckpoints | None = None

    # --- what the parts hold, read by front ends and tests ------------------------------

    @property
    def options(self) -> SessionOptions:
        """The options of the model in use (`set_model` replaces them)."""
        return self.model.options

    @property
    def checkpoints(self) -> TurnCheckpoints | None:
        """What each turn changed in the working tree (rawtrio.checkpoints); None: off.

        Built on first use (before a tool call that may write, at a turn's end), so the
        checkpoint modules load while the model answers, never before the first request
        (docs/benchmarks.md, the headless cold path)."""
        if self._checkpoints is None and self._checkpoint_dir is not None:
            from rawtrio.checkpoints.capture import TurnCheckpoints
            from rawtrio.checkpoints.store import CheckpointStore

            store = CheckpointStore(self._checkpoint_dir, self.cwd)
            self._checkpoints = TurnCheckpoints(store, self.id)
            self._checkpoints.jobs = lambda: self.jobs  # named in the turn-end note
        return self._checkpoints

    @property
    def context(self) -> list[Message]:
        """The model context as committed."""
        return self.recorder.context

    @property
    def usage(self) -> UsageTotals:
        """The session's running usage and cost totals, over every run of the session."""
        return self.model.usage

    @property
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return self.model.tool_specs

    @property
    def tools_digest(self) -> str:
        return self.model.tools_digest

    # --- lifecycle (owned by the Runtime's nursery) ----------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        started = False
        try:
            async with trio.open_nursery() as nursery:
                # Leaving the jobs block (session closing) stops every background process,
                # then ends any process still marked with this session's id.
                # MCP servers stop (bounded: stdin close, grace, SIGTERM, SIGKILL) before
                # the jobs block ends what is left of the session's processes.
                async with (
                    open_background_jobs(self.id, self.options.tools) as jobs,
                    self._open_mcp() as mcp,
                ):
                    self.jobs = jobs
                    saved = await self.store.get_state(self.id, PLAN_STATE_KEY)
                    self.plan = Plan(plan_from_json(saved), on_change=self._plan_changed)
                    self.model.load_usage(await self.store.get_state(self.id, USAGE_STATE_KEY))
                    self._nursery = nursery
                    start = payloads.session_start("resume" if self.context else "startup")
                    await self.run_hooks(HookEvent.SESSION_START, start)
                    await self._add_mcp_tools(mcp)
                    await self._check_tool_definitions()
                    task_status.started()
                    started = True
                    try:
                        await self._close_requested.wait()
                    finally:
                        await self._until_turn_ended()
                    with trio.move_on_after(CLEANUP_DEADLINE_S) as end_hooks:
                        end_hooks.shield = True
                        await self.run_hooks(
                            HookEvent.SESSION_END, payloads.session_end(self._close_reason)
                        )
                nursery.cancel_scope.cancel(reason="session closed")
        except Exception:
            if not started:  # the caller of `start` gets it: the session never ran
                raise
            # Exception-group policy (module docstring): logged, the session ends, the
            # runtime and the other sessions go on.
            log.exception("session %s failed and was closed", self.id)
        finally:
            self._closing = True
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                await self.model.provider.aclose()
                await self.store.close_session(self.id)
            self.recorder.hub.close_all()
            self._finished.set()

    async def _until_turn_ended(self) -> None:
        """Before the jobs block ends what is left of the session's processes: the running
        turn's own cleanup stops its calls and records its outcome. Only a `run` cancelled
        from outside finds one here (a `task` child whose parent's turn was cancelled, the
        runtime closing); `close` ends the turn before it asks `run` to finish. A sweep
        beside the turn's stop would signal its calls' processes first, and the cut calls
        would read as having finished on their own."""
        turn = self._turn
        if turn is None:
            return
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            await turn.done.wait()

    def _open_mcp(self) -> AbstractAsyncContextManager[McpServers | None]:
        """The session's MCP servers (None when the agent selected none)."""
        o = self.options
        if not o.mcp_servers:
            return contextlib.nullcontext(None)
        from rawtrio.mcp.connection import ConnectionSettings
        from rawtrio.mcp.manager import open_mcp_servers

        settings = ConnectionSettings(
            session_id=self.id,
            cwd=self.cwd,
            grace_s=o.tools.sigterm_grace_s,
            strip_env=o.tools.strip_env,
            env=o.env,
            resolve=o.variables.environment if o.variables is not None else None,
            notify=self._mcp_notice,
        )
        return open_mcp_servers(
            o.mcp_servers,
            settings,
            agent_patterns=o.mcp_tool_patterns,
            cache_dir=o.mcp_cache_dir,
            output_cap=o.tools.output_cap,
            redact=self.redactor.redact,
        )

    async def _add_mcp_tools(self, mcp: McpServers | None) -> None:
        """Register the selected MCP tools like any other and show them to the model."""
        self.mcp = mcp
        if mcp is None:
            return
        added: list[Tool] = []
        for tool in await mcp.prepare():
            try:
                self.registry.register(tool)
            except ValueError as exc:  # e.g. a schema that is not valid JSON Schema
                self._mcp_notice("warning", f"MCP tool {tool.id} left out: {exc}")
                continue
            added.append(tool)
        hidden = self.policy.hidden(t.id for t in added)
        names = {self.registry.provider_name(t.id) for t in added if t.id not in hidden}
        self.model.tool_specs += tuple(s for s in self.registry.specs() if s.name in names)

    def _mcp_notice(self, level: str, text: str) -> None:
        notice = ev.Notice(session_id=self.id, turn_id=self.running_turn, level=level, text=text)
        self.recorder.emit(notice)

    async def _check_tool_definitions(self) -> None:
        """Tell the model (once) when its tools changed since the session last ran."""
        now = tooldefs.fingerprints(self.tool_specs)
        self.model.tools_digest = tooldefs.digest(now)
        before = await self.store.get_state(self.id, tooldefs.STATE_KEY)
        if before == now:
            return
        await self.store.set_state(self.id, tooldefs.STATE_KEY, now)
        note = tooldefs.changes(before, now)
        if note is None:
            return
        await self.recorder.add_note(note)

    async def _plan_changed(self, items: tuple[TodoItem, ...]) -> None:
        value = plan_to_json(items)
        await self.store.set_state(self.id, PLAN_STATE_KEY, value)
        self.recorder.emit(
            ev.PlanUpdated(session_id=self.id, turn_id=self.running_turn, items=freeze(value))
        )

    async def close(self, reason: str = "session closed") -> None:
        """Cancel the running turn (it records its outcome), then stop everything."""
        self._closing = True
        self._close_reason = reason
        if self._compaction is not None:
            self._compaction.cancel(reason=reason)
        if self._turn is not None:
            turn = self._turn
            self._cancel_turn(turn, reason)
            await turn.done.wait()
        self._close_requested.set()
        await self._finished.wait()

    @property
    def closed(self) -> bool:
        return self._finished.is_set()

    # --- operations ---------------------------------------------------------------------

    async def submit(self, text: str, *, client_request_id: str | None = None) -> str:
        """Start a turn with `text`; return its id. A repeated request id returns the same id."""
        if self._closing or self._nursery is None:
            raise SessionClosed(f"session {self.id} is closed")
        if client_request_id is not None:
            known = await self.store.find_turn(self.id, client_request_id)
            if known is not None:
                return known.id
        if self._turn is not None:
            raise TurnInProgress(f"session {self.id} is already running turn {self._turn.id}")
        if self._compaction is not None:
            raise TurnInProgress(f"session {self.id} is compacting its context")
        turn = Turn(id=uuid.uuid4().hex, text=text, client_request_id=client_request_id)
        self._turn = turn
        try:
            await self.recorder.write_unsaved()
            await self.store.begin_turn(self.id, turn.id, client_request_id)
        except BaseException:
            self._turn = None  # nothing started: the session takes the next submit
            turn.done.set()  # and nobody waits for it (`_until_turn_ended`)
            raise
        self._nursery.start_soon(self._turn_task, turn, name=f"turn {turn.id}")
        return turn.id

    def cancel(self, reason: str = "cancelled by the user") -> bool:
        """Cancel the running turn (or compaction), if any. Returns whether there was one."""
        if self._compaction is not None and self._turn is None:
            self._compaction.cancel(reason=reason)
            return True
        if self._turn is None:
            return False
        self._cancel_turn(self._turn, reason)
        return True

    def _cancel_turn(self, turn: Turn, reason: str) -> None:
        turn.cancel(reason)
        for callback in list(self._on_turn_cancel):  # `task` children, same reason
            callback(reason)

    async def wait_turn(self, turn_id: str) -> ev.TurnEnded:
        """Wait for a turn of this session (running or among the last `REMEMBER_ENDED`
        ended) to end."""
        while turn_id not in self.recorder.ended:
            turn = self._turn
            if turn is None or turn.id != turn_id:
                raise KeyError(
                    f"turn {turn_id} of session {self.id} is not running and its ending is "
                    "not kept in this process: read it from the session's history"
                )
            await turn.done.wait()
        return self.recorder.ended[turn_id]

    async def run_turn(self, text: str, *, client_request_id: str | None = None) -> ev.TurnEnded:
        return await self.wait_turn(await self.submit(text, client_request_id=client_request_id))

    @property
    def running_turn(self) -> str | None:
        return self._turn.id if self._turn else None

    def answer_permission(self, request_id: str, decision: ApprovalDecision) -> None:
        """Answer a pending permission request; the first answer from any front end wins.

        Raises `ApprovalAlreadyResolved` (with the winning decision) or
        `UnknownApprovalRequest`."""
        self.approvals.answer(request_id, decision)

    def set_mode(self, mode: PermissionMode | str) -> None:
        """Switch the permission mode; it decides at call time, the tool list stays."""
        self.policy.set_mode(mode)
        self.recorder.emit(ev.ModeChanged(session_id=self.id, mode=self.policy.mode.value))

    @property
    def model_name(self) -> str:
        """The configured name of the model in use, else its model id."""
        return self.model.name

    @property
    def model_names(self) -> tuple[str, ...]:
        return self.options.model_names

    async def set_model(self, name: str) -> None:
        """Switch to the configured model `name` from the next request on.

        Raises `UsageError` for a name that is not configured, `TurnInProgress` while a
        turn or compaction runs, and what reading the model's API key raises
        (`NoCredentials`, `VariableError`); the session keeps its model then."""
        self.model.check(name)
        self._check_idle()
        options, provider = await self.model.prepare(name)
        try:
            self._check_idle()  # a turn may have started meanwhile
        except TurnInProgress:
            await provider.aclose()
            raise
        await self.model.bind(name, options, provider)

    def _check_idle(self) -> None:
        if self._turn is not None or self._compaction is not None:
            raise TurnInProgress(f"session {self.id} is busy; switch models between turns")

    async def run_hooks(self, event: HookEvent, payload: Mapping[str, Any]) -> HookOutcome:
        """Run the hooks of `event`; warnings go to the user as notices. A child's hooks
        also get their parent's session id."""
        if self.child_of is not None:
            payload = {**payload, "parent_session_id": self.child_of.link.parent_id}
        outcome = await self.hooks.run(event, payload)
        for warning in outcome.warnings:
            self.recorder.emit(
                ev.Notice(
                    session_id=self.id, turn_id=self.running_turn, level="warning", text=warning
                )
            )
        return outcome

    def _hook_receipt(self, r: HookReceipt) -> None:
        self.recorder.emit(
            ev.HookRan(
                session_id=self.id,
                turn_id=self.running_turn,
                hook=r.hook,
                event=str(r.event),
                subject=r.subject,
                decision=str(r.decision),
                ended_by=str(r.ended_by),
                exit_code=r.exit_code,
                signal=r.signal,
                elapsed_s=r.elapsed_s,
                stdout=r.stdout,
                stderr=r.stderr,
                summary=r.summary,
            )
        )

    # --- `task` children (rawtrio.runtime.subagents) ------------------------------------

    async def new_child(
        self, options: SessionOptions, child_of: ChildOf, *, title: str, inherit_prompt: bool
    ) -> Session:
        """A child session, stored under this one; the caller runs and closes it."""
        if self._provider_factory is None or self._registry_factory is None:
            raise SessionClosed(f"session {self.id} cannot start subagents")
        prompt = self.record.system_prompt if inherit_prompt else None
        if prompt is None:
            prompt = system_prompt(options.cwd, options.system_prompt)
        record = await self.store.create_session(
            session_id=uuid.uuid4().hex,
            cwd=str(options.cwd),
            system_prompt=prompt,
            provider=options.provider.kind,
            model=options.provider.model,
            title=title,
            parent=child_of.link,
        )
        return Session(
            record=record,
            options=options,
            store=self.store,
            provider=self._provider_factory(options.provider),
            registry=self._registry_factory(options),
            context=[],
            last_seq=0,
            provider_factory=self._provider_factory,
            registry_factory=self._registry_factory,
            child_of=child_of,
        )

    def on_turn_cancel(self, callback: Callable[[str], object]) -> Callable[[], None]:
        """Call `callback(reason)` when the running turn is cancelled, in the same
        synchronous stretch; returns the function that stops it."""
        self._on_turn_cancel.append(callback)
        return lambda: self._on_turn_cancel.remove(callback)

    def turn_cancel_reason(self) -> str | None:
        turn = self._turn
        return turn.cancel_reason or None if turn is not None else None

    def add_child_usage(self, usage: UsageTotals) -> None:
        self.model.usage = add_usage(self.model.usage, usage)

    def after_turn(self, event: HookEvent, payload: Mapping[str, Any]) -> None:
        """Run hooks owned by the session, not the (cancelled) turn."""
        if self._nursery is not None and not self._closing:
            self._nursery.start_soon(self.run_hooks, event, payload)

    def subscribe(self, buffer: int = DEFAULT_BUFFER) -> Subscription:
        return self.recorder.hub.subscribe(buffer)

    async def events_since(self, seq: int) -> list[ev.Event]:
        return await self.store.events_since(self.id, seq)

    async def compact(self, focus: str | None = None) -> ev.CompactionEnded:
        """Compact the model context now (`/compact [focus]`); cancellable with `cancel`.

        Raises `TurnInProgress` while a turn or another compaction runs."""
        if self._closing or self._nursery is None:
            raise SessionClosed(f"session {self.id} is closed")
        if self._turn is not None:
            raise TurnInProgress(f"session {self.id} is running turn {self._turn.id}")
        if self._compaction is not None:
            raise TurnInProgress(f"session {self.id} is already compacting its context")
        # Like a turn, it runs in the session nursery (closing the session ends it) in a
        # scope of its own; a caller that stops waiting cancels it too.
        scope = self._compaction = trio.CancelScope()
        done = trio.Event()
        result: list[ev.CompactionEnded] = []

        async def compaction_task() -> None:
            try:
                with scope:
                    result.append(await compaction.run_compaction(self, "manual", focus, None))
            finally:
                # Free before the usage write's await, as a turn is free once it ended: a
                # front end told `compaction_ended` may submit at once.
                self._compaction = None
                await self.recorder.save_usage(self.model.usage_json())
                done.set()

        self._nursery.start_soon(compaction_task, name="compaction")
        try:
            await done.wait()
        finally:
            if not done.is_set():
                scope.cancel(reason="the caller stopped waiting for the compaction")
                with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                    cleanup.shield = True
                    await done.wait()
        if result:
            return result[0]
        # Cancelled: run_compaction emitted its `cancelled` ending before unwinding.
        assert self.compactions.last is not None
        return self.compactions.last

    # --- the turn task ------------------------------------------------------------------

    async def _record_changes(self, turn: Turn, outcome: TurnOutcome) -> None:
        """Record the turn's change set (rawtrio.checkpoints) and say what it changed."""
        if self.checkpoints is None:
            return
        cancelled = outcome is TurnOutcome.CANCELLED
        problem = f"took longer than {CHECKPOINT_DEADLINE_S} s"
        changes = None
        # Bounded within the turn's cleanup, so the turn's ending is always recorded (I2).
        with trio.move_on_after(CHECKPOINT_DEADLINE_S):
            try:
                changes = await self.checkpoints.end_turn(turn.id, turn.text, cancelled=cancelled)
                problem = ""
            except OSError as exc:
                problem = str(exc)
        if problem:
            text = f"checkpoints: this turn's changes could not be recorded ({problem})"
            self.recorder.emit(
                ev.Notice(session_id=self.id, turn_id=turn.id, level="warning", text=text)
            )
            return
        if changes is None:
            return
        cs = changes.change_set
        text = f"{cs.summary()} — checkpoint {cs.number}; /diff shows them, /undo puts them back"
        if cs.cancelled:
            text += " (the turn was cancelled: this is what it changed up to the cut)"
        for miss in cs.not_captured:
            text += f"\n  not captured: {miss.path} ({miss.reason})"
        self.recorder.emit(ev.Notice(session_id=self.id, turn_id=turn.id, level="info", text=text))
        if changes.cap_notice is not None:
            self.recorder.emit(
                ev.Notice(
                    session_id=self.id, turn_id=turn.id, level="warning", text=changes.cap_notice
                )
            )

    async def _turn_task(self, turn: Turn) -> None:
        outcome, reason = TurnOutcome.ERROR, "internal error"
        try:
            with turn.scope:
                outcome, reason = await loop.run_steps(self, turn)
            if turn.scope.cancelled_caught:
                outcome, reason = TurnOutcome.CANCELLED, turn.cancel_reason or "cancelled"
        except trio.Cancelled:
            outcome, reason = TurnOutcome.CANCELLED, turn.cancel_reason or "session closed"
            raise
        except (ProviderError, StoreError) as exc:
            outcome, reason = TurnOutcome.ERROR, str(exc)
        except Exception as exc:  # a bug must end the turn, not the session
            log.exception("turn %s failed", turn.id)
            outcome, reason = TurnOutcome.ERROR, f"internal error: {type(exc).__name__}: {exc}"
        finally:
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                try:
                    await self._record_changes(turn, outcome)
                    usage = self.model.usage_json()
                    await self.recorder.finish_turn(turn, outcome, reason, usage)
                finally:
                    self._turn = None
                    turn.done.set()
            if outcome is TurnOutcome.CANCELLED and not self._closing and self._nursery:
                # Interrupt hooks run after the turn, owned by the session, not the turn.
                interrupt = payloads.interrupt(turn_id=turn.id, reason=reason)
                self._nursery.start_soon(self.run_hooks, HookEvent.INTERRUPT, interrupt)
