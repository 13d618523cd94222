"""The state of one running turn: what the cancellation path needs to record honestly.

The loop updates this state in the same synchronous stretch as each commit (no
checkpoint in between), so whenever a cancellation lands the state says exactly what is
committed, what is streaming and which call is running.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import trio

from rawtrio.messages import ToolCall
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
    running: RunningCall | None = None
    cancel_reason: str = ""
    final_text: str = ""

    def cancel(self, reason: str) -> None:
        if not self.scope.cancel_called:
            self.cancel_reason = reason
            self.scope.cancel(reason=reason)
