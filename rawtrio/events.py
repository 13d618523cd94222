"""Session events: what subscribers (TUI, headless, ACP, dashboard) receive.

Every event is a frozen value carrying the session id, the session's sequence number
(`seq`, strictly increasing without gaps per session) and, for turn events, the turn id.
Data inside is deep-frozen (`rawtrio.frozen`), so a renderer cannot change what was
authorized or stored (turn contract §3.7). `event_to_json` gives the stream-json form
(`{"v": 1, "seq": N, "type": "...", ...}`), documented in docs/contracts.md.

A turn emits, in order: `user_message` → (`step_started` → deltas / `tool_call_announced`
… → `assistant_message` → per call: `tool_call_started` → `tool_output_delta`* →
`tool_call_finished`)* → exactly one `turn_ended`. An automatic compaction shows up
before a step as `compaction_started` → (`usage` of its summary requests)* →
`compaction_ended`; a manual one (`Session.compact`) outside any turn.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from rawtrio.contracts import STREAM_JSON_VERSION, DeniedBy, ToolStatus, TurnOutcome
from rawtrio.frozen import FrozenJSON, empty, thaw


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    type: ClassVar[str] = "event"
    session_id: str
    seq: int = 0
    turn_id: str | None = None
    ts: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageCommitted(Event):
    type: ClassVar[str] = "user_message"
    text: str
    #: The host note prepended for the model (interrupted previous turn, …), if any.
    note: str | None = None
    client_request_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStarted(Event):
    type: ClassVar[str] = "step_started"
    step: int
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    step: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta(Event):
    type: ClassVar[str] = "thinking_delta"
    step: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallAnnounced(Event):
    """The model streamed the start of a tool call. It has not run, and may never."""

    type: ClassVar[str] = "tool_call_announced"
    step: int
    call_id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessageCommitted(Event):
    """The step's stream finished and the assistant message is in the model context."""

    type: ClassVar[str] = "assistant_message"
    step: int
    text: str
    #: (call_id, provider name, arguments or None if malformed), in the order listed.
    tool_calls: tuple[tuple[str, str, FrozenJSON], ...] = ()
    stop_reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamInterrupted(Event):
    """A stream was cut (cancel, error): nothing of it entered the model context."""

    type: ClassVar[str] = "stream_interrupted"
    step: int
    partial_text: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted(Event):
    type: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str
    tool_id: str
    arguments: FrozenJSON = field(default_factory=empty)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutputDelta(Event):
    type: ClassVar[str] = "tool_output_delta"
    call_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished(Event):
    type: ClassVar[str] = "tool_call_finished"
    call_id: str
    name: str
    status: ToolStatus
    content: str
    started: bool
    denied_by: DeniedBy | None = None
    details: FrozenJSON = field(default_factory=empty)


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRequested(Event):
    type: ClassVar[str] = "permission_requested"
    request_id: str
    call_id: str
    tool_id: str
    arguments: FrozenJSON = field(default_factory=empty)
    #: One line for people: what the call would do ("bash: rm -rf build").
    summary: str = ""
    options: tuple[str, ...] = ("allow_once", "allow_always", "deny")


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionAnswered(Event):
    type: ClassVar[str] = "permission_answered"
    request_id: str
    call_id: str
    decision: str  # one of the offered options, or "cancelled"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage(Event):
    type: ClassVar[str] = "usage"
    step: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    #: The size of this request's prompt (system, tools, model context), as reported.
    context_tokens: int = 0
    #: The model's context window, when known (configured or a well-known default).
    context_window: int | None = None
    #: What this request cost, and the session so far; None when the model has no prices.
    cost_usd: float | None = None
    session_cost_usd: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionStarted(Event):
    """The model context is being compacted (`reason`: manual or auto)."""

    type: ClassVar[str] = "compaction_started"
    reason: str  # "manual" | "auto"
    tokens_before: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionEnded(Event):
    """A compaction ended. Only `compacted` changed the model context; the display
    history keeps everything either way."""

    type: ClassVar[str] = "compaction_ended"
    outcome: str  # "compacted" | "unchanged" | "cancelled" | "error"
    tokens_before: int
    tokens_after: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeChanged(Event):
    """The session's permission mode changed (`Session.set_mode`)."""

    type: ClassVar[str] = "mode_changed"
    mode: str  # default | accept-edits | plan | bypass


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChanged(Event):
    """The session switched model (`Session.set_model`), from its next request on."""

    type: ClassVar[str] = "model_changed"
    #: The configured model name; `model_id` and `provider` are what requests will use.
    model: str
    model_id: str
    provider: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice(Event):
    type: ClassVar[str] = "notice"
    level: str  # "info" | "warning" | "error"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HookRan(Event):
    """A hook ran: its receipt, for the display history only (never the model context)."""

    type: ClassVar[str] = "hook_ran"
    hook: str
    event: str
    subject: str | None
    decision: str  # continue | block | deny | warn | cancelled
    ended_by: str  # exit | timeout | cancel | spawn_error
    exit_code: int | None
    signal: int | None
    elapsed_s: float
    stdout: str
    stderr: str
    summary: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanUpdated(Event):
    """The session's task list changed (todo_write); front ends show it as a plan."""

    type: ClassVar[str] = "plan_updated"
    #: ({"id", "content", "status"}, …); status is pending | in_progress | completed.
    items: FrozenJSON = field(default_factory=empty)


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStarted(Event):
    """A `task` call started a child session (docs/contracts.md, The `task` tool)."""

    type: ClassVar[str] = "subagent_started"
    call_id: str
    child_session_id: str
    description: str
    agent: str | None
    depth: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentEvent(Event):
    """One event of a child session, on its parent, as the child's stream-json object."""

    type: ClassVar[str] = "subagent_event"
    call_id: str
    child_session_id: str
    event: FrozenJSON = field(default_factory=empty)


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentEnded(Event):
    type: ClassVar[str] = "subagent_ended"
    call_id: str
    child_session_id: str
    outcome: TurnOutcome
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnded(Event):
    """The one terminal event of a turn (I2)."""

    type: ClassVar[str] = "turn_ended"
    outcome: TurnOutcome
    reason: str
    steps: int
    final_text: str = ""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        UserMessageCommitted,
        StepStarted,
        TextDelta,
        ThinkingDelta,
        ToolCallAnnounced,
        AssistantMessageCommitted,
        StreamInterrupted,
        ToolCallStarted,
        ToolOutputDelta,
        ToolCallFinished,
        PermissionRequested,
        PermissionAnswered,
        Usage,
        CompactionStarted,
        CompactionEnded,
        ModeChanged,
        ModelChanged,
        Notice,
        HookRan,
        PlanUpdated,
        SubagentStarted,
        SubagentEvent,
        SubagentEnded,
        TurnEnded,
    )
}


def event_to_json(event: Event) -> dict[str, Any]:
    """The stream-json object of an event: `{"v": 1, "seq": N, "type": ..., ...}`."""
    out: dict[str, Any] = {"v": STREAM_JSON_VERSION, "seq": event.seq, "type": event.type}
    for f in dataclasses.fields(event):
        if f.name == "seq":
            continue
        value = getattr(event, f.name)
        out[f.name] = thaw(value) if not isinstance(value, str) else value
    return out


E = TypeVar("E", bound=Event)


def with_seq(event: E, seq: int) -> E:
    return dataclasses.replace(event, seq=seq)
