"""`task` children: a child session run as one turn inside the parent's `task` call.

The child is a `Session` of its own (own context, own store record linked to the parent,
own recorder and sequence numbers), started in a nursery of the call's handler — so it
lives inside the parent turn's cancel scope, and a cancellation of the parent turn is a
cancellation of the child (docs/contracts.md, The `task` tool):

- the parent's `Turn.cancel(reason)` cancels the child's turn with the same reason in the
  same synchronous stretch (`Turn.on_cancel`), so the child records the parent's reason;
- the child's turn end records a result for each of its unfinished calls and one outcome
  (its own `finish_turn`), its processes are stopped when its session's jobs close;
- the parent's call then records `cancelled` with what the child had done.

The child's effective permission decision is the stricter of its own and the parent's
(`NarrowedPolicy`); its approvals go through the parent's broker, and its permission
events are shown on the parent, labelled with the child, so the parent's front ends can
answer them. Every child event reaches the parent's subscribers as `subagent_event`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import trio

from rawtrio import events as ev
from rawtrio.context.accounting import UsageTotals
from rawtrio.contracts import CLEANUP_DEADLINE_S, ToolStatus, TurnOutcome
from rawtrio.errors import RawtrioError
from rawtrio.frozen import freeze
from rawtrio.groups import collapse_group
from rawtrio.hooks import HookEvent, payloads
from rawtrio.permissions.policy import PermissionPolicy
from rawtrio.permissions.rules import Decision, Effect
from rawtrio.store.base import ParentLink
from rawtrio.tools.base import ToolContext, ToolOutput

if TYPE_CHECKING:
    from rawtrio.hooks import HookOutcome
    from rawtrio.permissions.approval import ApprovalBroker
    from rawtrio.runtime.options import SessionOptions
    from rawtrio.runtime.recorder import Recorder


class ChildSession(Protocol):
    """What a parent does with its child (a `Session`)."""

    @property
    def id(self) -> str: ...
    @property
    def recorder(self) -> Recorder: ...
    @property
    def usage(self) -> UsageTotals: ...

    async def run(self, *, task_status: trio.TaskStatus[None] = ...) -> None: ...
    async def submit(self, text: str) -> str: ...
    async def wait_turn(self, turn_id: str) -> ev.TurnEnded: ...
    async def close(self, reason: str = ...) -> None: ...
    def cancel(self, reason: str = ...) -> bool: ...


class Session(ChildSession, Protocol):
    """What the children need of their parent (a `Session`; named so for reading)."""

    @property
    def options(self) -> SessionOptions: ...
    @property
    def policy(self) -> PermissionPolicy: ...
    @property
    def approvals(self) -> ApprovalBroker: ...
    @property
    def running_turn(self) -> str | None: ...

    async def new_child(
        self, options: SessionOptions, child_of: ChildOf, *, title: str, inherit_prompt: bool
    ) -> ChildSession: ...
    def on_turn_cancel(self, callback: Callable[[str], object]) -> Callable[[], None]: ...
    def turn_cancel_reason(self) -> str | None: ...
    def add_child_usage(self, usage: UsageTotals) -> None: ...
    def after_turn(self, event: HookEvent, payload: Mapping[str, Any]) -> None: ...
    async def run_hooks(self, event: HookEvent, payload: Mapping[str, Any]) -> HookOutcome: ...


#: How strict each effect is: the stricter of two decisions wins.
_STRICTNESS = {Effect.ALLOW: 0, Effect.ASK: 1, Effect.DENY: 2}
#: How many of the child's calls the parent's result lists.
_LISTED_CALLS = 20


class NarrowedPolicy(PermissionPolicy):
    """A child's policy: its own rules, never more permissive than the parent's."""

    def __init__(self, own: PermissionPolicy, parent: PermissionPolicy) -> None:
        super().__init__(own.rules, mode=own.mode, headless=own.headless, assume_yes=own.assume_yes)
        self.parent = parent

    def hidden(self, tool_ids: Any) -> frozenset[str]:
        ids = tuple(tool_ids)
        return super().hidden(ids) | self.parent.hidden(ids)

    def evaluate(
        self,
        tool_id: str,
        arguments: Mapping[str, Any],
        *,
        read_only: bool,
        hook: str | None = None,
    ) -> Decision:
        """The stricter of the child's decision and the parent's for the same call, a
        Claude Code hook's answer (`hook`) weighed by both."""
        own = super().evaluate(tool_id, arguments, read_only=read_only, hook=hook)
        theirs = self.parent.evaluate(tool_id, arguments, read_only=read_only, hook=hook)
        if _STRICTNESS[theirs.effect] > _STRICTNESS[own.effect]:
            return dataclasses.replace(
                theirs, reason=f"the parent session's rules: {theirs.reason}"
            )
        return own


@dataclasses.dataclass(frozen=True)
class ChildOf:
    """What a child session takes from its parent."""

    link: ParentLink
    description: str
    policy: PermissionPolicy
    approvals: ApprovalBroker
    #: Called with each event the child emits (after it is recorded in the child).
    forward: Callable[[ev.Event], None]


class Subagents:
    """The `task` children of one session (`ToolContext.subagents` of its calls)."""

    def __init__(self, parent: Session) -> None:
        self.parent = parent
        self.slots = trio.CapacityLimiter(max(1, parent.options.max_concurrent_subagents))
        #: The children running now, by the parent's `task` call id.
        self.live: dict[str, ChildSession] = {}

    async def run(
        self, ctx: ToolContext, *, description: str, prompt: str, agent: str | None
    ) -> ToolOutput:
        parent = self.parent
        depth = parent.options.subagent_depth + 1
        if depth > parent.options.max_subagent_depth:
            return ToolOutput.error(
                f"not run: subagents nest at most {parent.options.max_subagent_depth} deep "
                "(max_subagent_depth); do this task yourself"
            )
        # Waiting for a slot starts nothing: a cancel here is an unstarted call.
        ctx.report_cancelled(
            "not started: cancelled before its subagent began (waiting for a slot, or "
            "setting the child session up)",
            started=False,
        )
        async with self.slots:
            try:
                options = await self._options_for(agent, depth)
            except (KeyError, ValueError, RawtrioError) as exc:
                return ToolOutput.error(f"not run: {exc}")
            return await self._run_child(ctx, options, description, prompt, agent, depth)

    async def _options_for(self, agent: str | None, depth: int) -> SessionOptions:
        o = self.parent.options
        if agent is None:
            options = o
        elif o.options_for_agent is None:
            raise KeyError(f"unknown agent {agent!r}: no agents are configured here")
        else:
            options = await o.options_for_agent(agent)
        # The child runs where the parent does (its rules anchored there) and can ask no
        # more than the parent can.
        return dataclasses.replace(
            options.in_directory(o.cwd),
            env=o.env,
            headless=o.headless,
            assume_yes=o.assume_yes and options.assume_yes,
            subagent_depth=depth,
            max_subagent_depth=min(o.max_subagent_depth, options.max_subagent_depth),
            options_for_agent=o.options_for_agent,
        )

    async def _run_child(
        self,
        ctx: ToolContext,
        options: SessionOptions,
        description: str,
        prompt: str,
        agent: str | None,
        depth: int,
    ) -> ToolOutput:
        parent = self.parent
        turn_id = parent.running_turn
        bridge = Bridge(parent, turn_id, ctx.call_id, description)
        link = ParentLink(parent.id, ctx.call_id, depth)
        child = await parent.new_child(
            options,
            ChildOf(
                link=link,
                description=description,
                policy=parent.policy,
                approvals=parent.approvals,
                forward=bridge.forward,
            ),
            title=description,
            inherit_prompt=agent is None,
        )
        bridge.child_id = child.id
        # The child session exists from here on (stored, linked): a cut now is a cut call.
        ctx.report_cancelled(
            f"subagent {description!r} was cancelled before its turn began "
            f"(child session {child.id})",
            child_session_id=child.id,
            outcome="cancelled",
        )
        self.live[ctx.call_id] = child
        try:
            return await self._run(ctx, child, bridge, description, prompt, agent, depth)
        finally:
            self.live.pop(ctx.call_id, None)

    async def _run(
        self,
        ctx: ToolContext,
        child: ChildSession,
        bridge: Bridge,
        description: str,
        prompt: str,
        agent: str | None,
        depth: int,
    ) -> ToolOutput:
        parent = self.parent
        details: dict[str, Any] = {"child_session_id": child.id, "agent": agent, "depth": depth}
        parent.recorder.emit(
            ev.SubagentStarted(
                session_id=parent.id,
                turn_id=bridge.turn_id,
                call_id=ctx.call_id,
                child_session_id=child.id,
                description=description,
                agent=agent,
                depth=depth,
            )
        )
        start = payloads.subagent_start(
            call_id=ctx.call_id,
            description=description,
            agent=agent,
            child_session_id=child.id,
            depth=depth,
        )
        await parent.run_hooks(HookEvent.SUBAGENT_START, start)
        started = time.monotonic()
        ended: ev.TurnEnded | None = None
        child_turn: str | None = None
        try:
            with collapse_group():
                async with trio.open_nursery() as nursery:
                    await nursery.start(child.run)
                    cancel = parent.on_turn_cancel(child.cancel)
                    try:
                        child_turn = await child.submit(prompt)
                        ended = await child.wait_turn(child_turn)
                    finally:
                        cancel()
                        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                            cleanup.shield = True
                            reason = parent.turn_cancel_reason() or "the parent's turn ended"
                            await child.close(reason if ended is None else "subagent finished")
        except trio.Cancelled:
            elapsed = round(time.monotonic() - started, 3)
            ended = child.recorder.ended.get(child_turn or "")
            self._ended(bridge, ended, "cancelled")
            # SubagentStop runs after the turn, owned by the session (like Interrupt).
            parent.after_turn(HookEvent.SUBAGENT_STOP, self._stop_payload(bridge, ended))
            ctx.report_cancelled(
                f"subagent {description!r} was cancelled after {elapsed} s "
                f"(child session {child.id}).\n{bridge.summary(ended)}",
                **details,
                outcome="cancelled",
                **self._usage(child.usage),
            )
            raise
        finally:
            parent.add_child_usage(child.usage)
        assert ended is not None  # wait_turn returned
        await parent.run_hooks(HookEvent.SUBAGENT_STOP, self._stop_payload(bridge, ended))
        self._ended(bridge, ended, ended.reason)
        details |= {"outcome": str(ended.outcome), "steps": ended.steps}
        details |= {"tool_calls": len(bridge.calls), **self._usage(child.usage)}
        if ended.outcome is TurnOutcome.COMPLETED:
            return ToolOutput(ToolStatus.OK, capped(ended.final_text, ctx), freeze(details))
        return ToolOutput(
            ToolStatus.ERROR,
            capped(
                f"the subagent's turn ended with {ended.outcome} ({ended.reason}).\n"
                f"{bridge.summary(ended)}",
                ctx,
            ),
            freeze(details),
        )

    def _ended(self, bridge: Bridge, ended: ev.TurnEnded | None, fallback: str) -> None:
        parent = self.parent
        parent.recorder.emit(
            ev.SubagentEnded(
                session_id=parent.id,
                turn_id=bridge.turn_id,
                call_id=bridge.call_id,
                child_session_id=bridge.child_id,
                outcome=ended.outcome if ended is not None else TurnOutcome.CANCELLED,
                reason=ended.reason if ended is not None else fallback,
            )
        )

    @staticmethod
    def _stop_payload(bridge: Bridge, ended: ev.TurnEnded | None) -> dict[str, Any]:
        return payloads.subagent_stop(
            call_id=bridge.call_id,
            child_session_id=bridge.child_id,
            outcome=str(ended.outcome) if ended is not None else "cancelled",
            reason=ended.reason if ended is not None else "cancelled",
        )

    @staticmethod
    def _usage(u: UsageTotals) -> dict[str, Any]:
        return {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cost_usd": u.cost_usd,
        }


def capped(text: str, ctx: ToolContext) -> str:
    cap = ctx.settings.output_cap
    if len(text) <= cap:
        return text
    return f"{text[:cap]}\n[subagent result cut: {cap} of {len(text)} characters kept]"


def add_usage(mine: UsageTotals, child: UsageTotals) -> UsageTotals:
    """A child's usage and cost added to its parent's totals (the context size stays)."""
    cost = mine.cost_usd
    if child.cost_usd is not None:
        cost = (cost or 0.0) + child.cost_usd
    return dataclasses.replace(
        mine,
        input_tokens=mine.input_tokens + child.input_tokens,
        output_tokens=mine.output_tokens + child.output_tokens,
        cache_read_tokens=mine.cache_read_tokens + child.cache_read_tokens,
        cache_write_tokens=mine.cache_write_tokens + child.cache_write_tokens,
        cost_usd=cost,
    )


class Bridge:
    """Carries a child's events to its parent, and remembers what the child did."""

    def __init__(self, parent: Session, turn_id: str | None, call_id: str, label: str) -> None:
        self.parent = parent
        self.label = label
        self.turn_id = turn_id
        self.call_id = call_id
        self.child_id = ""
        #: The child's finished calls: (name, status).
        self.calls: list[tuple[str, str]] = []
        self.text = ""

    def forward(self, event: ev.Event) -> None:
        parent = self.parent
        if isinstance(event, ev.ToolCallFinished):
            self.calls.append((event.name, str(event.status)))
        elif isinstance(event, ev.TextDelta):
            self.text += event.text
        elif isinstance(event, ev.AssistantMessageCommitted):
            self.text = event.text
        # The child's event first, then (a permission request or answer) its copy on the
        # parent's `task` call: a front end that shows the request on the parent's call
        # has then seen it in the child's own events too, and can name every child of the
        # chain that asks (a grandchild's request passes each level this way).
        parent.recorder.emit(
            ev.SubagentEvent(
                session_id=parent.id,
                turn_id=self.turn_id,
                call_id=self.call_id,
                child_session_id=event.session_id,
                event=freeze(ev.event_to_json(event)),
            )
        )
        if isinstance(event, ev.PermissionRequested | ev.PermissionAnswered):
            # The parent's front ends answer it (the broker is shared), labelled.
            if isinstance(event, ev.PermissionRequested):
                event = dataclasses.replace(
                    event, summary=f"[subagent {self.label}] {event.summary}"
                )
            # On the parent's `task` call: its front ends show it there.
            relayed = dataclasses.replace(
                event, session_id=parent.id, turn_id=self.turn_id, call_id=self.call_id, seq=0
            )
            parent.recorder.emit(relayed)

    def summary(self, ended: ev.TurnEnded | None) -> str:
        lines = [f"It made {len(self.calls)} tool call(s)" + (":" if self.calls else ".")]
        lines += [f"- {name}: {status}" for name, status in self.calls[:_LISTED_CALLS]]
        if len(self.calls) > _LISTED_CALLS:
            lines.append(f"- … and {len(self.calls) - _LISTED_CALLS} more")
        text = ended.final_text if ended is not None and ended.final_text else self.text
        if text:
            lines.append(f"Its last text:\n{text}")
        return "\n".join(lines)
