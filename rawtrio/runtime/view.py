"""The transcript view: one pure fold from a session's events to what a person is shown.

Every front end — the terminal chat, the line chat, headless text output, ACP updates,
`rawtrio sessions show` — renders the same frozen view states instead of re-deriving the
tool-call lifecycle from events itself. `TranscriptView.apply(event)` takes one event (live,
or replayed from the store's display history: the fold is the same, so a replay gives what
the live stream gave) and returns the changes it made, one `Change` per item added, updated
or removed, so a renderer redraws only those items. The view never does I/O and never
looks at the clock; time comes from the events' `ts`.

Items, in the order they first appeared, and a tool call's phases (`ANNOUNCED` →
`AWAITING_APPROVAL` → `ANNOUNCED` once answered → `RUNNING` → `FINISHED`; a call announced
by a stream that was cut is removed) are listed in docs/contracts.md, "Transcript view".

Per-delta cost matters (the chat renders thousands of deltas a second; the budget is
30 µs per delta from adapter to subscriber): a text delta costs one dict look-up, one new
frozen `MessageView` and one `Change`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from rawtrio import events as ev
from rawtrio.contracts import DeniedBy, ToolStatus, TurnOutcome
from rawtrio.frozen import EMPTY, FrozenJSON, empty, thaw


class ToolPhase(enum.StrEnum):
    ANNOUNCED = "announced"
    AWAITING_APPROVAL = "awaiting_approval"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class UserView:
    key: str
    turn_id: str | None
    text: str
    #: The host note sent to the model with the message (interrupted previous turn, …).
    note: str | None = None


@dataclass(frozen=True, slots=True)
class MessageView:
    """The model's text of one step. Exists once text streamed, or the step's message was
    committed or its stream cut (then possibly with empty text: renderers skip those)."""

    key: str
    turn_id: str | None
    step: int
    text: str
    #: No more text comes (committed, cut, or the turn ended).
    final: bool = False
    #: Why the stream was cut (nothing of it entered the model context), or None.
    cut: str | None = None
    #: The step's message is in the model context (its stream finished).
    committed: bool = False


@dataclass(frozen=True, slots=True)
class ThinkingView:
    key: str
    turn_id: str | None
    step: int
    text: str


@dataclass(frozen=True, slots=True)
class PermissionView:
    """An open permission request for a call."""

    request_id: str
    tool_id: str
    #: One line for people: what the call would do.
    summary: str
    options: tuple[str, ...]
    #: The arguments as the request shows them (secrets redacted).
    arguments: FrozenJSON


@dataclass(frozen=True, slots=True)
class DiffView:
    """What a successful file edit changed (`old_text` None: the whole file was written)."""

    path: str
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True)
class ToolCallView:
    key: str
    call_id: str
    turn_id: str | None
    #: The name the model used.
    name: str
    phase: ToolPhase
    #: The registry's tool id once known (permission request, start); the name before.
    tool_id: str
    #: The call's arguments; None while only announced, or when the model's were malformed.
    arguments: FrozenJSON = None
    #: The call is in the committed assistant message (a stream that was cut never was).
    committed: bool = False
    permission: PermissionView | None = None
    #: The answer to the last permission request ("allow_once", …, "cancelled").
    decision: str | None = None
    #: Live output so far (bounded by the runtime).
    output: str = ""
    status: ToolStatus | None = None
    #: The result the model reads (FINISHED).
    content: str = ""
    started: bool = False
    denied_by: DeniedBy | None = None
    details: FrozenJSON = field(default_factory=empty)
    #: Unix times from the events: started, and finished (None if it never started).
    started_at: float | None = None
    ended_at: float | None = None
    diff: DiffView | None = None
    #: Why the call was removed: the stream that announced it was cut.
    dropped: str | None = None

    @property
    def args(self) -> dict[str, Any]:
        """The arguments as a plain dict ({} when unknown, malformed or not an object)."""
        value = thaw(self.arguments)
        return value if isinstance(value, dict) else {}

    @property
    def duration(self) -> float | None:
        """Seconds from start to finish; None unless it started and finished."""
        if self.started_at is None or self.ended_at is None:
            return None
        return max(0.0, self.ended_at - self.started_at)

    def elapsed(self, now: float) -> float | None:
        """Seconds it has run by `now` (its duration once finished); None if not started."""
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else now
        return max(0.0, end - self.started_at)


@dataclass(frozen=True, slots=True)
class ApprovalView:
    key: str
    turn_id: str | None
    call_id: str
    request_id: str
    decision: str


@dataclass(frozen=True, slots=True)
class NoticeView:
    key: str
    turn_id: str | None
    seq: int
    level: str  # info | warning | error
    text: str


@dataclass(frozen=True, slots=True)
class HookView:
    key: str
    turn_id: str | None
    hook: str
    event: str
    decision: str
    summary: str


@dataclass(frozen=True, slots=True)
class PlanEntry:
    content: str
    #: pending | in_progress | completed as the tool wrote it (renderers map others).
    status: str


@dataclass(frozen=True, slots=True)
class PlanView:
    key: str
    turn_id: str | None
    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True, slots=True)
class CompactionView:
    key: str
    turn_id: str | None
    trigger: str  # manual | auto
    tokens_before: int
    #: None while it runs; then compacted | unchanged | cancelled | error.
    outcome: str | None = None
    tokens_after: int | None = None
    #: What the compaction did or why it failed (the ended event's reason).
    summary: str = ""


@dataclass(frozen=True, slots=True)
class ModeView:
    key: str
    turn_id: str | None
    mode: str


@dataclass(frozen=True, slots=True)
class TurnEndView:
    key: str
    turn_id: str | None
    outcome: TurnOutcome
    reason: str
    steps: int
    final_text: str


Item: TypeAlias = (
    UserView
    | MessageView
    | ThinkingView
    | ToolCallView
    | ApprovalView
    | NoticeView
    | HookView
    | PlanView
    | CompactionView
    | ModeView
    | TurnEndView
)


class ChangeKind(enum.Enum):
    ADDED = "added"
    UPDATED = "updated"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class Change:
    """One item an event added, updated or removed, with its state before (None if new)."""

    kind: ChangeKind
    item: Item
    before: Item | None = None
    #: Text this event added at the end of the item (a text, thinking or output delta).
    appended: str = ""

    def entered(self, phase: ToolPhase) -> bool:
        """The item is a tool call that reached `phase` with this change."""
        item, before = self.item, self.before
        return (
            isinstance(item, ToolCallView)
            and item.phase is phase
            and not (isinstance(before, ToolCallView) and before.phase is phase)
        )

    @property
    def committed_now(self) -> bool:
        """The item is a tool call that this change put in a committed message."""
        item, before = self.item, self.before
        return (
            isinstance(item, ToolCallView)
            and item.committed
            and not (isinstance(before, ToolCallView) and before.committed)
        )


Changes: TypeAlias = tuple[Change, ...]


def message_key(turn_id: str | None, step: int) -> str:
    return f"message/{turn_id}/{step}"


def thinking_key(turn_id: str | None, step: int) -> str:
    return f"thinking/{turn_id}/{step}"


def tool_key(call_id: str) -> str:
    return f"tool/{call_id}"


class TranscriptView:
    """The fold. `apply` each event in order; `items()` is the transcript now.

    With `retain=False` (a renderer that only needs the changes: ACP, headless) settled
    items are forgotten at each turn's end, so a long session costs no memory here.
    """

    def __init__(self, *, retain: bool = True) -> None:
        self._retain = retain
        self._items: dict[str, Item] = {}
        #: Tool calls not finished yet (keys), in the order they appeared.
        self._open_tools: dict[str, None] = {}
        #: Messages not final yet (keys).
        self._open_messages: dict[str, None] = {}
        #: The compaction under way (key), if any.
        self._compaction: str | None = None
        self._handlers: dict[type[ev.Event], Callable[[Any], Changes]] = {
            ev.TextDelta: self._text,
            ev.ToolOutputDelta: self._output,
            ev.SubagentEvent: self._subagent,
            ev.ThinkingDelta: self._thinking,
            ev.UserMessageCommitted: self._user,
            ev.ToolCallAnnounced: self._announced,
            ev.AssistantMessageCommitted: self._committed,
            ev.StreamInterrupted: self._interrupted,
            ev.ToolCallStarted: self._started,
            ev.ToolCallFinished: self._finished,
            ev.PermissionRequested: self._permission_requested,
            ev.PermissionAnswered: self._permission_answered,
            ev.Notice: self._notice,
            ev.HookRan: self._hook,
            ev.PlanUpdated: self._plan,
            ev.CompactionStarted: self._compaction_started,
            ev.CompactionEnded: self._compaction_ended,
            ev.ModeChanged: self._mode,
            ev.TurnEnded: self._turn_ended,
        }

    @classmethod
    def replay(cls, events: Iterable[ev.Event]) -> TranscriptView:
        """The view after `events` (a stored display history, say)."""
        view = cls()
        for event in events:
            view.apply(event)
        return view

    def apply(self, event: ev.Event) -> Changes:
        """Fold one event in; return what it changed (nothing for events that show nothing:
        usage, step starts, model changes)."""
        handler = self._handlers.get(type(event))
        return handler(event) if handler is not None else ()

    def items(self) -> list[Item]:
        return list(self._items.values())

    def tool(self, call_id: str) -> ToolCallView | None:
        item = self._items.get(tool_key(call_id))
        return item if isinstance(item, ToolCallView) else None

    def open_tools(self) -> list[ToolCallView]:
        """Calls not finished yet, in the order they appeared."""
        return [t for k in self._open_tools if isinstance(t := self._items[k], ToolCallView)]

    # --- helpers ---------------------------------------------------------------------------

    def _put(self, item: Item, appended: str = "") -> Change:
        before = self._items.get(item.key)
        self._items[item.key] = item
        if before is None:
            return Change(ChangeKind.ADDED, item, None, appended)
        return Change(ChangeKind.UPDATED, item, before, appended)

    def _add(self, item: Item) -> Changes:
        return (self._put(item),)

    def _tool_or_new(self, call_id: str, name: str, turn_id: str | None) -> ToolCallView:
        key = tool_key(call_id)
        item = self._items.get(key)
        if isinstance(item, ToolCallView):
            return item
        self._open_tools[key] = None
        return ToolCallView(key, call_id, turn_id, name, ToolPhase.ANNOUNCED, name)

    # --- streamed text ---------------------------------------------------------------------

    def _text(self, e: ev.TextDelta) -> Changes:
        key = f"message/{e.turn_id}/{e.step}"
        old = self._items.get(key)
        if isinstance(old, MessageView):
            new = MessageView(
                key, e.turn_id, e.step, old.text + e.text, old.final, old.cut, old.committed
            )
            self._items[key] = new
            return (Change(ChangeKind.UPDATED, new, old, e.text),)
        new = MessageView(key, e.turn_id, e.step, e.text)
        self._items[key] = new
        self._open_messages[key] = None
        return (Change(ChangeKind.ADDED, new, None, e.text),)

    def _thinking(self, e: ev.ThinkingDelta) -> Changes:
        key = thinking_key(e.turn_id, e.step)
        old = self._items.get(key)
        text = old.text + e.text if isinstance(old, ThinkingView) else e.text
        return (self._put(ThinkingView(key, e.turn_id, e.step, text), e.text),)

    def _settle_message(
        self,
        turn_id: str | None,
        step: int,
        text: str | None,
        cut: str | None,
        committed: bool = False,
    ) -> Change:
        key = message_key(turn_id, step)
        old = self._items.get(key)
        if isinstance(old, MessageView):
            committed = committed or old.committed
            if text is None:
                text = old.text
        self._open_messages.pop(key, None)
        return self._put(MessageView(key, turn_id, step, text or "", True, cut, committed))

    # --- tool calls ------------------------------------------------------------------------

    def _output(self, e: ev.ToolOutputDelta) -> Changes:
        tool = self._tool_or_new(e.call_id, "tool", e.turn_id)
        phase = tool.phase if tool.phase is ToolPhase.FINISHED else ToolPhase.RUNNING
        return (self._put(_replace_tool(tool, output=tool.output + e.text, phase=phase), e.text),)

    def _subagent(self, e: ev.SubagentEvent) -> Changes:
        """A `task` child's progress, as lines of its parent call's live output: its tool
        calls, its committed text and its ending (every front end shows them nested)."""
        text = subagent_line(e.event)
        if not text:
            return ()
        return self._output(
            ev.ToolOutputDelta(
                session_id=e.session_id, seq=e.seq, turn_id=e.turn_id, call_id=e.call_id, text=text
            )
        )

    def _announced(self, e: ev.ToolCallAnnounced) -> Changes:
        return self._add(self._tool_or_new(e.call_id, e.name, e.turn_id))

    def _committed(self, e: ev.AssistantMessageCommitted) -> Changes:
        changes: list[Change] = []
        key = message_key(e.turn_id, e.step)
        if e.text or key in self._items:
            changes.append(self._settle_message(e.turn_id, e.step, e.text, None, committed=True))
        else:  # a message of tool calls only: nothing to show, but the step is settled
            self._open_messages.pop(key, None)
        for call_id, name, arguments in e.tool_calls:
            tool = self._tool_or_new(call_id, name, e.turn_id)
            changes.append(self._put(_replace_tool(tool, arguments=arguments, committed=True)))
        return tuple(changes)

    def _interrupted(self, e: ev.StreamInterrupted) -> Changes:
        # The reply is what the user saw of it (possibly nothing), marked as cut.
        changes = [self._settle_message(e.turn_id, e.step, e.partial_text, e.reason)]
        for key in list(self._open_tools):
            tool = self._items[key]
            if isinstance(tool, ToolCallView) and not tool.committed:
                # Announced by the cut stream: it was never committed, so it never runs.
                del self._items[key], self._open_tools[key]
                changes.append(
                    Change(ChangeKind.REMOVED, _replace_tool(tool, dropped=e.reason), tool)
                )
        return tuple(changes)

    def _started(self, e: ev.ToolCallStarted) -> Changes:
        tool = self._tool_or_new(e.call_id, e.name, e.turn_id)
        new = _replace_tool(
            tool,
            phase=ToolPhase.RUNNING,
            tool_id=e.tool_id,
            arguments=e.arguments if isinstance(e.arguments, Mapping) else EMPTY,
            started_at=e.ts,
            permission=None,
        )
        return (self._put(new),)

    def _finished(self, e: ev.ToolCallFinished) -> Changes:
        tool = self._tool_or_new(e.call_id, e.name, e.turn_id)
        self._open_tools.pop(tool.key, None)
        new = _replace_tool(
            tool,
            phase=ToolPhase.FINISHED,
            status=ToolStatus(e.status),
            content=e.content,
            started=e.started,
            denied_by=e.denied_by,
            details=e.details,
            ended_at=e.ts if tool.started_at is not None else None,
            permission=None,
            diff=_diff(tool.tool_id, tool.args) if e.status is ToolStatus.OK else None,
        )
        return (self._put(new),)

    def _permission_requested(self, e: ev.PermissionRequested) -> Changes:
        tool = self._tool_or_new(e.call_id, e.tool_id, e.turn_id)
        arguments = tool.arguments
        if arguments is None and isinstance(e.arguments, Mapping):
            arguments = e.arguments
        new = _replace_tool(
            tool,
            phase=ToolPhase.AWAITING_APPROVAL,
            # A running `task` call relays its child's request: it stays the `task` call.
            tool_id=e.tool_id if tool.started_at is None else tool.tool_id,
            arguments=arguments,
            permission=PermissionView(e.request_id, e.tool_id, e.summary, e.options, e.arguments),
        )
        return (self._put(new),)

    def _permission_answered(self, e: ev.PermissionAnswered) -> Changes:
        changes: list[Change] = []
        tool = self.tool(e.call_id)
        if tool is not None:
            waiting = tool.phase is ToolPhase.AWAITING_APPROVAL
            # A running `task` call whose child asked goes on running.
            after = ToolPhase.RUNNING if tool.started_at is not None else ToolPhase.ANNOUNCED
            new = _replace_tool(
                tool,
                phase=after if waiting else tool.phase,
                permission=None,
                decision=e.decision,
            )
            changes.append(self._put(new))
        approval = ApprovalView(
            f"approval/{e.request_id}/{e.seq}", e.turn_id, e.call_id, e.request_id, e.decision
        )
        changes.append(self._put(approval))
        return tuple(changes)

    # --- everything else -------------------------------------------------------------------

    def _user(self, e: ev.UserMessageCommitted) -> Changes:
        return self._add(UserView(f"user/{e.seq}", e.turn_id, e.text, e.note))

    def _notice(self, e: ev.Notice) -> Changes:
        return self._add(NoticeView(f"notice/{e.seq}", e.turn_id, e.seq, e.level, e.text))

    def _hook(self, e: ev.HookRan) -> Changes:
        return self._add(
            HookView(f"hook/{e.seq}", e.turn_id, e.hook, e.event, e.decision, e.summary)
        )

    def _plan(self, e: ev.PlanUpdated) -> Changes:
        items = e.items if isinstance(e.items, tuple) else ()
        entries = tuple(
            PlanEntry(str(item.get("content", "")), str(item.get("status", "pending")))
            for item in items
            if isinstance(item, Mapping)
        )
        return self._add(PlanView(f"plan/{e.seq}", e.turn_id, entries))

    def _compaction_started(self, e: ev.CompactionStarted) -> Changes:
        key = f"compaction/{e.seq}"
        self._compaction = key
        return self._add(CompactionView(key, e.turn_id, e.reason, e.tokens_before))

    def _compaction_ended(self, e: ev.CompactionEnded) -> Changes:
        started = self._items.get(self._compaction) if self._compaction is not None else None
        self._compaction = None
        if isinstance(started, CompactionView):
            key, trigger = started.key, started.trigger
        else:  # a history that begins after the start
            key, trigger = f"compaction/{e.seq}", ""
        return self._add(
            CompactionView(
                key, e.turn_id, trigger, e.tokens_before, e.outcome, e.tokens_after, e.reason
            )
        )

    def _mode(self, e: ev.ModeChanged) -> Changes:
        return self._add(ModeView(f"mode/{e.seq}", e.turn_id, e.mode))

    def _turn_ended(self, e: ev.TurnEnded) -> Changes:
        changes: list[Change] = []
        for key in list(self._open_messages):
            old = self._items.get(key)
            if isinstance(old, MessageView) and old.turn_id == e.turn_id:
                changes.append(self._settle_message(old.turn_id, old.step, None, old.cut))
        for key in list(self._open_tools):
            tool = self._items[key]
            assert isinstance(tool, ToolCallView)
            # Only a store's repaired history ends a turn with a call open; say it was cut.
            del self._open_tools[key]
            new = _replace_tool(
                tool,
                phase=ToolPhase.FINISHED,
                status=ToolStatus.CANCELLED,
                started=tool.started_at is not None,
                ended_at=e.ts if tool.started_at is not None else None,
                permission=None,
            )
            changes.append(self._put(new))
        end = TurnEndView(f"end/{e.seq}", e.turn_id, e.outcome, e.reason, e.steps, e.final_text)
        changes.append(self._put(end))
        if not self._retain:
            self._forget_settled()
        return tuple(changes)

    def _forget_settled(self) -> None:
        keep = {**self._open_tools, **self._open_messages}
        if self._compaction is not None:
            keep[self._compaction] = None
        self._items = {k: v for k, v in self._items.items() if k in keep}


def _replace_tool(tool: ToolCallView, **changes: Any) -> ToolCallView:
    fields = {name: getattr(tool, name) for name in _TOOL_FIELDS}
    fields.update(changes)
    return ToolCallView(**fields)


_TOOL_FIELDS = tuple(ToolCallView.__dataclass_fields__)


def _diff(tool_id: str, args: Mapping[str, Any]) -> DiffView | None:
    """What a successful write_file / edit_file changed, from its arguments."""
    path = args.get("path")
    if not isinstance(path, str):
        return None
    if tool_id == "write_file" and isinstance(args.get("content"), str):
        return DiffView(path, None, args["content"])
    if tool_id == "edit_file" and isinstance(args.get("new_text"), str):
        old = args.get("old_text")
        return DiffView(path, old if isinstance(old, str) else None, args["new_text"])
    return None


def subagent_line(child: Any) -> str:
    """The line(s) a child's event adds to its parent's `task` call ("" for most)."""
    if not isinstance(child, Mapping):
        return ""
    kind = child.get("type")
    if kind == "tool_call_started":
        args = child.get("arguments")
        summary = _short_args(thaw(args) if isinstance(args, Mapping) else {})
        return f"→ {child.get('name')} {summary}".rstrip() + "\n"
    if kind == "tool_call_finished":
        return f"← {child.get('name')} {child.get('status')}\n"
    if kind == "assistant_message" and child.get("text"):
        return f"{child.get('text')}\n"
    if kind == "turn_ended":
        return f"[subagent {child.get('outcome')}: {child.get('reason')}]\n"
    return ""


def _short_args(args: Mapping[str, Any], limit: int = 80) -> str:
    text = " ".join(f"{k}={v}" for k, v in args.items() if isinstance(v, str | int | float))
    return text if len(text) <= limit else text[: limit - 1] + "…"
