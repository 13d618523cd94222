"""A live session: a trio nursery that owns everything its turns start.

Front ends call the operations (`submit`, `cancel`, `subscribe`, `close`, …) and read
events; they never run the loop themselves. One `Session` object per session id per
process (the `Runtime` enforces it).

Exception-group policy: a turn task catches every `Exception` it can raise (a provider
failure, a store fault or a bug ends the turn with outcome `error`), so the session
nursery only ever sees `trio.Cancelled`, and never raises an `ExceptionGroup` to its
owner. Should anything else still fail once the session runs, `run` logs it and the
session ends on its own: one session never takes the runtime (and every other session
in the process) down. Nurseries inside tools (process readers) unwrap their own groups
before returning.

Store faults (disk full, I/O error, a lock held too long): a commit point that fails
ends the turn with `error` and the store's message, and the turn's ending is still
emitted to every subscriber. The writes of a turn's ending that failed (results for cut
calls, the outcome, the usage totals, the note) are kept in order and written before
the next turn begins; until they are, `submit` raises the store's error and nothing
else changes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from rawtrio import events as ev
from rawtrio.context.accounting import (
    Accountant,
    ModelPrices,
    UsageTotals,
    usage_from_json,
    usage_to_json,
)
from rawtrio.context.compaction import CompactionSettings
from rawtrio.context.models import limits_for
from rawtrio.contracts import (
    CLEANUP_DEADLINE_S,
    DEFAULT_MAX_STEPS,
    ToolStatus,
    TurnOutcome,
)
from rawtrio.errors import (
    ProviderError,
    SessionClosed,
    TurnInProgress,
    UsageError,
)
from rawtrio.frozen import freeze
from rawtrio.hooks import HookEvent, HookOutcome, HookReceipt, HookRunner, HookSpec, payloads
from rawtrio.messages import Message, ToolCall, ToolResult, UserMessage
from rawtrio.permissions.approval import ApprovalBroker, ApprovalDecision
from rawtrio.permissions.policy import PermissionPolicy
from rawtrio.permissions.rules import PermissionMode, Rule
from rawtrio.providers.base import ModelRequest, Provider, ProviderSettings, StreamDone, UsageInfo
from rawtrio.runtime import compaction, loop, tooldefs
from rawtrio.runtime.subscribers import DEFAULT_BUFFER, SubscriberHub, Subscription
from rawtrio.runtime.turn import Turn
from rawtrio.skills import Skill
from rawtrio.store.base import SessionRecord, SessionStore
from rawtrio.store.errors import StoreError
from rawtrio.tools.background import BackgroundJobs, open_background_jobs
from rawtrio.tools.base import Tool, ToolSettings
from rawtrio.tools.todo import STATE_KEY as PLAN_STATE_KEY
from rawtrio.tools.todo import Plan, TodoItem, plan_from_json, plan_to_json

if TYPE_CHECKING:
    from rawtrio.config.schema import McpServerConfig
    from rawtrio.config.variables import VariableResolver
    from rawtrio.mcp.manager import McpServers
    from rawtrio.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
#: Session state key of the note for the next user message, so it survives a restart.
PENDING_NOTE_KEY = "pending_note"
#: Session state key of the usage and cost totals, so `/cost` covers every run of it.
USAGE_STATE_KEY = "usage_totals"
#: Turn endings kept for `wait_turn` after the turn ended (a bound, not a history).
REMEMBER_ENDED = 64
E = TypeVar("E", bound=ev.Event)
Write = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class SessionOptions:
    cwd: Path
    provider: ProviderSettings
    max_steps: int = DEFAULT_MAX_STEPS
    max_output_tokens: int = 8192
    tools: ToolSettings = field(default_factory=ToolSettings)
    #: Replaces the built-in base prompt when set (fixed at session creation).
    system_prompt: str | None = None
    #: Permission rules in order (last match wins) and the starting mode. The library
    #: default is `bypass` with no rules: front ends pass what the configuration says.
    permission_rules: tuple[Rule, ...] = ()
    permission_mode: PermissionMode = PermissionMode.BYPASS
    #: Headless runs cannot ask: `ask` becomes a policy denial unless `assume_yes`.
    headless: bool = False
    assume_yes: bool = False
    #: Saves an "allow always for this project" rule (the config layer provides it).
    save_allow_rule: Callable[[Rule], None] | None = None
    hooks: tuple[HookSpec, ...] = ()
    #: Tools beyond the built-ins (e.g. `load_skill`), registered the same way.
    extra_tools: tuple[Tool, ...] = ()
    #: The tool ids the agent selected, in order; None selects every tool.
    tool_selection: tuple[str, ...] | None = None
    #: The skills listed in the system prompt; a resumed session is told when they changed.
    skills: tuple[Skill, ...] = ()
    #: The configured model names this session may switch to (`set_model`), the one in
    #: use (None: a built-in default or a raw `--model` id), and how to derive the options
    #: for another one (the config layer provides it; reading its API key may run a command).
    model_name: str | None = None
    model_names: tuple[str, ...] = ()
    options_for_model: Callable[[str], Awaitable[SessionOptions]] | None = None
    #: The model's context window (None: a well-known model's default, else unknown),
    #: its prices (None: cost unknown) and when and how to compact (rawtrio.context).
    context_window: int | None = None
    prices: ModelPrices | None = None
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    #: The MCP servers the agent selected (docs/mcp.md) and the agent's tool globs, which
    #: also select among their tools (`mcp/<server>/<tool>` ids).
    mcp_servers: Mapping[str, McpServerConfig] = field(default_factory=dict)
    mcp_tool_patterns: tuple[str, ...] = ("*",)
    #: Where MCP tool lists are cached (None: no cache; every server starts with the session).
    mcp_cache_dir: Path | None = None
    #: Resolves `{var = ...}` in MCP servers' env and headers (None: literals and env only).
    variables: VariableResolver | None = None


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
    ) -> None:
        self.record = record
        self.id = record.id
        self.options = options
        self.cwd = options.cwd
        self.store = store
        self.provider = provider
        self._provider_factory = provider_factory
        self.registry = registry
        self.context = context
        self._seq = last_seq
        self._hub = SubscriberHub()
        self._turn: Turn | None = None
        self._turns: dict[str, ev.TurnEnded] = {}
        #: Writes of earlier turns' endings that a store fault stopped, oldest first.
        self._unsaved: list[Write] = []
        #: Host note for the next user message (§3.8); kept in the store until sent.
        self._note = note
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
        self.approvals = ApprovalBroker()
        self.redactor = options.tools.redactor
        self.hooks = HookRunner(
            options.hooks,
            session_id=self.id,
            cwd=self.cwd,
            grace_s=options.tools.sigterm_grace_s,
            strip_env=options.tools.strip_env,
            redactor=self.redactor,
            on_receipt=self._hook_receipt,
        )
        # The model-facing tool list is fixed for the session (modes never change it, so
        # the prompt cache survives): unconditionally denied tools are never shown.
        hidden = self.policy.hidden(t.id for t in registry.tools())
        self.tool_specs = tuple(
            spec
            for tool, spec in zip(registry.tools(), registry.specs(), strict=True)
            if tool.id not in hidden
        )
        #: A hash of the tool definitions: part of the prompt-cache key, so the key changes
        #: exactly when the tools do (set by `run`).
        self.tools_digest = ""
        self.jobs: BackgroundJobs | None = None
        #: The session's MCP servers while it runs (None: none selected).
        self.mcp: McpServers | None = None
        self.plan: Plan | None = None
        # Context management (rawtrio.context, rawtrio.runtime.compaction).
        limits = limits_for(
            options.provider.model,
            context_window=options.context_window,
            max_output_tokens=options.max_output_tokens,
        )
        self.accountant = Accountant(limits.context_window)
        self.output_limit = limits.max_output_tokens
        self._usage = UsageTotals(context_window=limits.context_window)
        self._compaction: trio.CancelScope | None = None
        self.auto_compacted_turn: str | None = None
        self.compaction_no_help_at: int | None = None
        self.compaction_futile = 0
        self.last_compaction: ev.CompactionEnded | None = None

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
                    self._usage = usage_from_json(
                        await self.store.get_state(self.id, USAGE_STATE_KEY), self._usage
                    )
                    self._nursery = nursery
                    start = payloads.session_start("resume" if self.context else "startup")
                    await self.run_hooks(HookEvent.SESSION_START, start)
                    await self._add_mcp_tools(mcp)
                    await self._check_tool_definitions()
                    task_status.started()
                    started = True
                    await self._close_requested.wait()
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
                await self.provider.aclose()
                await self.store.close_session(self.id)
            self._hub.close_all()
            self._finished.set()

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
        self.tool_specs += tuple(s for s in self.registry.specs() if s.name in names)

    def _mcp_notice(self, level: str, text: str) -> None:
        self.emit(ev.Notice(session_id=self.id, turn_id=self.running_turn, level=level, text=text))

    async def _check_tool_definitions(self) -> None:
        """Tell the model (once) when its tools changed since the session last ran."""
        now = tooldefs.fingerprints(self.tool_specs)
        self.tools_digest = tooldefs.digest(now)
        before = await self.store.get_state(self.id, tooldefs.STATE_KEY)
        if before == now:
            return
        await self.store.set_state(self.id, tooldefs.STATE_KEY, now)
        note = tooldefs.changes(before, now)
        if note is None:
            return
        self._note = f"{self._note}\n\n{note}" if self._note else note
        await self.store.set_state(self.id, PENDING_NOTE_KEY, self._note)
        self.emit(ev.Notice(session_id=self.id, level="info", text=note))

    async def _plan_changed(self, items: tuple[TodoItem, ...]) -> None:
        value = plan_to_json(items)
        await self.store.set_state(self.id, PLAN_STATE_KEY, value)
        self.emit(
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
            turn.cancel(reason)
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
            await self._write_unsaved()
            await self.store.begin_turn(self.id, turn.id, client_request_id)
        except BaseException:
            self._turn = None  # nothing started: the session takes the next submit
            raise
        self._nursery.start_soon(self._turn_task, turn, name=f"turn {turn.id}")
        return turn.id

    async def _write_unsaved(self) -> None:
        """Write what a store fault kept from earlier turns' endings, in order (raises the
        store's error while it persists; what is still unsaved stays kept)."""
        while self._unsaved:
            await self._store_call(self._unsaved[0])
            self._unsaved.pop(0)

    def cancel(self, reason: str = "cancelled by the user") -> bool:
        """Cancel the running turn (or compaction), if any. Returns whether there was one."""
        if self._compaction is not None and self._turn is None:
            self._compaction.cancel(reason=reason)
            return True
        if self._turn is None:
            return False
        self._turn.cancel(reason)
        return True

    async def wait_turn(self, turn_id: str) -> ev.TurnEnded:
        """Wait for a turn of this session (running or among the last `REMEMBER_ENDED`
        ended) to end."""
        while turn_id not in self._turns:
            turn = self._turn
            if turn is None or turn.id != turn_id:
                raise KeyError(
                    f"turn {turn_id} of session {self.id} is not running and its ending is "
                    "not kept in this process: read it from the session's history"
                )
            await turn.done.wait()
        return self._turns[turn_id]

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
        self.emit(ev.ModeChanged(session_id=self.id, mode=self.policy.mode.value))

    @property
    def model_name(self) -> str:
        """The configured name of the model in use, else its model id."""
        return self.options.model_name or self.options.provider.model

    @property
    def model_names(self) -> tuple[str, ...]:
        return self.options.model_names

    async def set_model(self, name: str) -> None:
        """Switch to the configured model `name` from the next request on.

        Raises `UsageError` for a name that is not configured, `TurnInProgress` while a
        turn or compaction runs, and what reading the model's API key raises
        (`NoCredentials`, `VariableError`); the session keeps its model then."""
        derive = self.options.options_for_model
        if derive is None or self._provider_factory is None or name not in self.model_names:
            known = ", ".join(self.model_names) or "none"
            raise UsageError(f"unknown model {name!r}; configured models: {known}")
        if self._turn is not None or self._compaction is not None:
            raise TurnInProgress(f"session {self.id} is busy; switch models between turns")
        options = await derive(name)
        # Building a client may import an SDK (~1 s the first time): off the event loop.
        provider = await trio.to_thread.run_sync(self._provider_factory, options.provider)
        if self._turn is not None or self._compaction is not None:  # started meanwhile
            await provider.aclose()
            raise TurnInProgress(f"session {self.id} is busy; switch models between turns")
        old, self.provider, self.options = self.provider, provider, options
        limits = limits_for(
            options.provider.model,
            context_window=options.context_window,
            max_output_tokens=options.max_output_tokens,
        )
        self.accountant.window = limits.context_window
        self.output_limit = limits.max_output_tokens
        self._usage = dataclasses.replace(self._usage, context_window=limits.context_window)
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            await old.aclose()
        self.emit(
            ev.ModelChanged(
                session_id=self.id,
                model=name,
                model_id=options.provider.model,
                provider=options.provider.kind,
            )
        )

    async def run_hooks(self, event: HookEvent, payload: Mapping[str, Any]) -> HookOutcome:
        """Run the hooks of `event`; warnings go to the user as notices."""
        outcome = await self.hooks.run(event, payload)
        for warning in outcome.warnings:
            self.emit(
                ev.Notice(
                    session_id=self.id, turn_id=self.running_turn, level="warning", text=warning
                )
            )
        return outcome

    def _hook_receipt(self, r: HookReceipt) -> None:
        self.emit(
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

    def subscribe(self, buffer: int = DEFAULT_BUFFER) -> Subscription:
        return self._hub.subscribe(buffer)

    async def events_since(self, seq: int) -> list[ev.Event]:
        return await self.store.events_since(self.id, seq)

    # --- used by the loop ---------------------------------------------------------------

    def emit(self, event: E) -> E:
        """Number, record and publish an event; returns it as subscribers got it.

        Secret values are redacted here, so no event reaches a subscriber or the display
        history with one in it."""
        self._seq += 1
        event = ev.with_seq(self.redactor.scrub(event), self._seq)
        self.store.record_event(event)
        self._hub.publish(event)
        return event

    def build_request(self) -> ModelRequest:
        return ModelRequest(
            system=self.record.system_prompt,
            messages=tuple(self.context),
            tools=self.tool_specs,
            model=self.options.provider.model,
            max_tokens=self.options.max_output_tokens,
        )

    async def _store_call(self, call: Callable[[], Awaitable[None]]) -> None:
        """Run a store write that a cancellation can neither tear nor hang."""
        with trio.move_on_after(CLEANUP_DEADLINE_S) as scope:
            scope.shield = True
            await call()
        if scope.cancelled_caught:
            raise StoreError(f"the session store did not answer within {CLEANUP_DEADLINE_S} s")

    async def _durably(self, turn: Turn, messages: Sequence[Message]) -> None:
        """Commit messages to the model context in one transaction (secrets redacted: the
        tools already ran with what the model sent, the transcript never holds a secret)."""
        messages = [self.redactor.scrub(m) for m in messages]
        await self._store_call(lambda: self.store.commit(self.id, turn.id, messages))
        self.context.extend(messages)

    async def mark_started(self, turn: Turn, call: ToolCall) -> None:
        """Durably note a call is starting; a cancel that landed meanwhile stops it (I4)."""
        await self._store_call(lambda: self.store.mark_call_started(self.id, turn.id, call.id))
        await trio.lowlevel.checkpoint()

    async def commit_user_message(self, turn: Turn, hook_context: str | None = None) -> None:
        note = self._note
        text = "\n\n".join(t for t in (note, turn.text, hook_context) if t)
        await self._durably(turn, [UserMessage(text)])
        if note is not None:
            self._note = None
            await self._store_call(lambda: self.store.set_state(self.id, PENDING_NOTE_KEY, None))
        self.emit(
            ev.UserMessageCommitted(
                session_id=self.id,
                turn_id=turn.id,
                text=turn.text,
                note=note,
                client_request_id=turn.client_request_id,
            )
        )

    async def commit_note(self, turn: Turn, text: str) -> None:
        """A host message to the model in the middle of a turn (e.g. a Stop hook's reason)."""
        await self._durably(turn, [UserMessage(text)])
        self.emit(ev.Notice(session_id=self.id, turn_id=turn.id, level="info", text=text))

    async def commit_assistant(self, turn: Turn, done: StreamDone) -> None:
        msg = done.message
        sent = len(self.context)  # what the request carried: the provider counted it
        await self._durably(turn, [msg])
        turn.streaming = None
        turn.pending = list(msg.tool_calls)
        turn.final_text = msg.text
        self.emit(
            ev.AssistantMessageCommitted(
                session_id=self.id,
                turn_id=turn.id,
                step=turn.step,
                text=msg.text,
                tool_calls=tuple((c.id, c.name, c.arguments) for c in msg.tool_calls),
                stop_reason=done.stop_reason,
            )
        )
        self.accountant.reported(done.usage, sent)
        self.record_usage(done.usage, step=turn.step, turn_id=turn.id)

    async def commit_results(self, turn: Turn, results: Sequence[ToolResult]) -> None:
        await self._durably(turn, results)
        ids = {r.call_id for r in results}
        turn.pending = [c for c in turn.pending if c.id not in ids]
        if turn.running is not None and turn.running.call.id in ids:
            turn.running = None
        for r in results:
            self.emit(
                ev.ToolCallFinished(
                    session_id=self.id,
                    turn_id=turn.id,
                    call_id=r.call_id,
                    name=r.name,
                    status=r.status,
                    content=r.content,
                    started=r.started,
                    denied_by=r.denied_by,
                    details=r.details,
                )
            )

    # --- context: usage, cost, compaction (rawtrio.context) ------------------------------

    @property
    def usage(self) -> UsageTotals:
        """The session's running usage and cost totals, over every run of the session."""
        return self._usage

    def record_usage(self, u: UsageInfo, *, step: int, turn_id: str | None) -> None:
        """Add one request's usage to the totals and emit `usage` (step 0: a summary)."""
        cost = self.options.prices.cost(u) if self.options.prices is not None else None
        self._usage = self._usage.add(u, cost)
        self.emit(
            ev.Usage(
                session_id=self.id,
                turn_id=turn_id,
                step=step,
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cache_read_tokens=u.cache_read_tokens,
                cache_write_tokens=u.cache_write_tokens,
                context_tokens=u.total_input_tokens,
                context_window=self.accountant.window,
                cost_usd=cost,
                session_cost_usd=self._usage.cost_usd,
            )
        )

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
                saved = usage_to_json(self._usage)

                async def save_usage() -> None:
                    await self.store.set_state(self.id, USAGE_STATE_KEY, saved)

                try:
                    await self._store_call(save_usage)
                except StoreError as exc:  # kept for the next turn; the session goes on
                    log.warning("session %s: usage totals not saved yet: %s", self.id, exc)
                    self._unsaved.append(save_usage)
                self._compaction = None
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
        assert self.last_compaction is not None
        return self.last_compaction

    async def replace_context(self, turn_id: str | None, messages: Sequence[Message]) -> None:
        """Compaction's one change: the model context becomes `messages`, durably (the
        summary is model output: scrubbed like every committed message)."""
        batch = [self.redactor.scrub(m) for m in messages]
        await self._store_call(lambda: self.store.replace_context(self.id, turn_id, batch))
        self.context[:] = batch
        self.accountant.reset()
        size = self.accountant.request_tokens(self.build_request())
        self._usage = dataclasses.replace(self._usage, context_tokens=size)

    # --- the turn task ------------------------------------------------------------------

    async def _turn_task(self, turn: Turn) -> None:
        outcome, reason = TurnOutcome.ERROR, "internal error"
        try:
            with turn.scope:
                outcome, reason = await loop.run_steps(self, turn)
            if turn.scope.cancelled_caught:
                outcome, reason = TurnOutcome.CANCELLED, turn.cancel_reason or "cancelled"
        except trio.Cancelled:
            outcome, reason = TurnOutcome.CANCELLED, "session closed"
            raise
        except (ProviderError, StoreError) as exc:
            outcome, reason = TurnOutcome.ERROR, str(exc)
        except Exception as exc:  # a bug must end the turn, not the session
            log.exception("turn %s failed", turn.id)
            outcome, reason = TurnOutcome.ERROR, f"internal error: {type(exc).__name__}: {exc}"
        finally:
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                await self._finish_turn(turn, outcome, reason)
            if outcome is TurnOutcome.CANCELLED and not self._closing and self._nursery:
                # Interrupt hooks run after the turn, owned by the session, not the turn.
                interrupt = payloads.interrupt(turn_id=turn.id, reason=reason)
                self._nursery.start_soon(self.run_hooks, HookEvent.INTERRUPT, interrupt)

    async def _finish_turn(self, turn: Turn, outcome: TurnOutcome, reason: str) -> None:
        """Record what the turn cut, then its one outcome (I1, I2, I5). Runs shielded.

        Never raises: a store fault in any of these writes turns the outcome into `error`
        with the store's message, keeps the failed write (and every later one) for the
        next turn, and the `turn_ended` event is emitted all the same."""
        failed: list[StoreError] = []
        outcome_stored = False  # once it is, the event says what the store holds (I2)

        async def write(w: Write) -> None:
            nonlocal outcome, reason
            if failed:  # the store is failing: keep the order, try again next turn
                self._unsaved.append(w)
                return
            try:
                await w()
            except StoreError as exc:
                failed.append(exc)
                self._unsaved.append(w)
                if outcome is not TurnOutcome.ERROR and not outcome_stored:
                    outcome, reason = TurnOutcome.ERROR, str(exc)

        try:
            cut: list[str] = []
            if turn.streaming is not None:
                self.emit(
                    ev.StreamInterrupted(
                        session_id=self.id,
                        turn_id=turn.id,
                        step=turn.streaming.step,
                        partial_text=turn.streaming.text,
                        reason=reason,
                    )
                )
                cut.append("your reply was cut off while streaming and was not kept")
                turn.streaming = None
            if turn.pending:
                results = [loop.cancelled_result(c, turn.running, reason) for c in turn.pending]
                if outcome is not TurnOutcome.CANCELLED:
                    results = [_as_error(r, reason) for r in results]
                cut.extend(f"tool call {r.name} ({r.call_id}): {r.content}" for r in results)
                await write(lambda: self.commit_results(turn, results))
            usage = usage_to_json(self._usage)
            await write(lambda: self.store.set_state(self.id, USAGE_STATE_KEY, usage))
            # Late-bound: a retried outcome is the one the turn ended with.
            await write(lambda: self.store.end_turn(self.id, turn.id, outcome, reason))
            outcome_stored = not failed
            if cut and outcome in (TurnOutcome.CANCELLED, TurnOutcome.ERROR):
                note = self._note = _interruption_note(outcome, reason, cut)
                await write(lambda: self.store.set_state(self.id, PENDING_NOTE_KEY, note))
            if failed:
                self.emit(
                    ev.Notice(
                        session_id=self.id,
                        turn_id=turn.id,
                        level="error",
                        text=f"{failed[0]}. What was not saved is written before the next "
                        "turn starts; nothing saved before was lost.",
                    )
                )
        finally:
            ended = ev.TurnEnded(
                session_id=self.id,
                turn_id=turn.id,
                outcome=outcome,
                reason=reason,
                steps=turn.step,
                final_text=turn.final_text,
            )
            self._turns[turn.id] = self.emit(ended)
            while len(self._turns) > REMEMBER_ENDED:
                self._turns.pop(next(iter(self._turns)))
            self._turn = None
            turn.done.set()


def _as_error(r: ToolResult, reason: str) -> ToolResult:
    content = f"the turn ended with an error ({reason}); {r.content}"
    return dataclasses.replace(r, status=ToolStatus.ERROR, content=content)


def _interruption_note(outcome: TurnOutcome, reason: str, cut: list[str]) -> str:
    what = "was cancelled" if outcome is TurnOutcome.CANCELLED else "ended with an error"
    lines = [f"[rawtrio: the previous turn {what} ({reason}) at {time.strftime('%H:%M:%S')}."]
    lines += [f"- {c}" for c in cut]
    lines.append("Continue from the current state; do not assume cut work was done.]")
    return "\n".join(lines)
