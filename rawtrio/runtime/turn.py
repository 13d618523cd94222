"""The state of one running turn: what the cancellation path needs to record honestly.

The loop updates this state in the same synchronous stretch as each commit (no
checkpoint in between), so whenever a cancellation lands the state says exactly what is
committed, what is streaming and which call is running. The results a cut or unrun call
gets (`cancelled_result`, `not_run`) are made from this state, here; a call that finished
but whose result is not committed yet (a read-only group commits in listed order) keeps
its real result (`Turn.finished`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import trio

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze, thaw
from rawtrio.messages import ToolCall, ToolResult
from rawtrio.tools.base import ToolContext


@dataclass
class StreamState:
    step: int
    #: Text deltas so far; joined only when a cut stream needs its partial text.
    parts: list[str] = field(default_factory=list)
    announced: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass
class RunningCall:
    call: ToolCall
    ctx: ToolContext
    started_at: float = field(default_factory=time.monotonic)


@dataclass
class Turn:
    id: str
    text: str
    client_request_id: str | None
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    done: trio.Event = field(default_factory=trio.Event)
    step: int = 0
    #: Set while a model response streams; None once it is committed or dropped.
    streaming: StreamState | None = None
    #: Calls of the committed batch that have no committed result yet, in order.
    pending: list[ToolCall] = field(default_factory=list)
    #: The calls running now, by call id (several in a read-only group).
    running: dict[str, RunningCall] = field(default_factory=dict)
    #: Results of calls that finished but are not committed yet (a group commits in
    #: listed order): a cancellation commits these, not a `cancelled` result.
    finished: dict[str, ToolResult] = field(default_factory=dict)
    cancel_reason: str = ""
    final_text: str = ""
    #: Set when a Claude Code hook answered `continue: false`: the turn ends after the
    #: call being run; the rest of its batch is not run (docs/hooks.md).
    halt_reason: str | None = None

    def cancel(self, reason: str) -> None:
        if not self.scope.cancel_called:
            self.cancel_reason = reason
            self.scope.cancel(reason=reason)


def result(call: ToolCall, status: ToolStatus, content: str) -> ToolResult:
    """The result of a call that never started."""
    return ToolResult(call.id, call.name, status, content, started=False)


def not_run(call: ToolCall, max_steps: int) -> ToolResult:
    return result(
        call,
        ToolStatus.NOT_RUN,
        f"not run: the turn reached its limit of {max_steps} model requests",
    )


def halted(call: ToolCall, reason: str) -> ToolResult:
    return result(call, ToolStatus.NOT_RUN, f"not run: a hook ended the turn ({reason})")


def cancelled_result(call: ToolCall, running: RunningCall | None, reason: str) -> ToolResult:
    """The honest result of a call a cancellation cut (I5)."""
    if running is None or running.call.id != call.id:
        return result(
            call,
            ToolStatus.CANCELLED,
            f"not run: the turn was cancelled ({reason}) before this call started",
        )
    elapsed = round(time.monotonic() - running.started_at, 3)
    report = running.ctx.cancel_report
    if report is not None:
        details = {"elapsed_s": elapsed, **thaw(report.details)}
        # A handler cancelled before it started anything says so (`started=False`).
        started = bool(details.pop("started", True))
        return ToolResult(
            call.id,
            call.name,
            ToolStatus.CANCELLED,
            report.content,
            started=started,
            details=freeze(details),
        )
    return ToolResult(
        call.id,
        call.name,
        ToolStatus.CANCELLED,
        f"started, then cancelled after {elapsed} s ({reason}); it may have had partial effects",
        started=True,
        details=freeze({"elapsed_s": elapsed}),
    )
