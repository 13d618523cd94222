"""A `task` call's child session in the chat: a live block under the call's line.

Collapsed (the default) the block is one line — "└ agent reader (read the config): 3
tools, running…" and the call the child runs now — settling to done / cancelled / failed /
interrupted. Expanded, with its call's details (Enter on the selected `task` call, or
Ctrl-O), the child's own transcript follows, indented: its prompt, a few lines of each of
its messages, one line per tool call (`ToolBlock`, selectable and expandable like the
parent's), and its own children's blocks nested again (`Nesting`).

The block is drawn from the child's events as its parent relays them (`subagent_event`,
each the child's stream-json object), folded into a `TranscriptView` of the child's own:
the same fold as every front end's, so a resumed session whose display history holds the
relays shows the block as it was. The parent's `subagent_ended`, or the child's own
`turn_ended`, settles it; a child whose ending never came (a crashed session's history)
settles with its `task` call's status.
"""

from __future__ import annotations

from collections.abc import Mapping

import urwid

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus
from rawtrio.frozen import thaw
from rawtrio.runtime.view import (
    ApprovalView,
    Change,
    ChangeKind,
    MessageView,
    NoticeView,
    ToolCallView,
    TranscriptView,
    TurnEndView,
    UserView,
)
from rawtrio.store.codec import event_from_json
from rawtrio.tui import markdown
from rawtrio.tui.blocks import (
    SPINNER,
    SUBAGENT_EVENTS,
    Block,
    DetailsToggle,
    Nesting,
    TextBlock,
    ToolBlock,
    key_argument,
    one_line,
)

#: Lines of each message of a `task` child shown in its expanded block.
CHILD_TEXT_LINES = 3
#: How a child's turn outcome reads in its block's summary line: (mark, attribute, label).
_CHILD_OUTCOME = {
    "completed": ("✓", "tool ok", "done"),
    "cancelled": ("✂", "tool cancelled", "cancelled"),
    "interrupted": ("?", "tool cancelled", "interrupted"),
    "max_steps": ("✗", "tool error", "failed (max steps)"),
    "error": ("✗", "tool error", "failed"),
}
#: A child whose ending never arrived, by its `task` call's status (a crashed session's
#: history: the call recovered as `outcome_unknown`).
_CHILD_OUTCOME_BY_CALL = {
    ToolStatus.OK: "completed",
    ToolStatus.CANCELLED: "cancelled",
    ToolStatus.OUTCOME_UNKNOWN: "interrupted",
}


def child_event(e: ev.SubagentEvent) -> ev.Event | None:
    """The child's event a `subagent_event` carries (None: a type this version does not
    know). Text deltas, most of them, are read without copying the whole object."""
    data = e.event
    if not isinstance(data, Mapping):
        return None
    if data.get("type") == "text_delta":
        step, text = data.get("step"), data.get("text")
        if isinstance(step, int) and isinstance(text, str):
            turn_id = data.get("turn_id")
            return ev.TextDelta(
                session_id=e.child_session_id,
                seq=int(data.get("seq") or 0),
                turn_id=turn_id if isinstance(turn_id, str) else None,
                step=step,
                text=text,
            )
    plain = thaw(data)
    return event_from_json(plain) if isinstance(plain, dict) else None


class ChildBlock(urwid.WidgetWrap[urwid.Pile], Nesting):
    """A `task` call's child session, under the call's line, live.

    Collapsed (the default), one line: "└ agent NAME (DESCRIPTION): N tools, running…" —
    and what it runs now — settling to done / cancelled / failed. Expanded (with its call's
    details: Enter on the selected call, or Ctrl-O) the child's own transcript follows,
    indented: its prompt, a few lines of each of its messages, one line per tool call (its
    own details with Ctrl-O), and its children's blocks nested again."""

    def __init__(
        self,
        owner: ToolBlock | None,
        details: DetailsToggle,
        *,
        description: str,
        agent: str | None,
    ) -> None:
        #: The `task` call's line (its details and this block expand together).
        self.owner = owner
        self.details = details
        self.description = description
        self.agent = agent
        #: The child's transcript, folded from its events.
        self.view = TranscriptView()
        self.tools = {}
        self.children = {}
        self._texts: dict[str, ChildText] = {}  # the child's messages, by item key
        #: The child block this one is inside (None: under a call of the transcript).
        self.container: ChildBlock | None = None
        #: The child's turn outcome ("completed", "cancelled", …); None while it runs.
        self.outcome: str | None = None
        self.reason = ""
        self.spin = 0
        self._header = urwid.Text("", wrap="ellipsis")
        self._body = urwid.Pile([])
        self._indented = urwid.Padding(self._body, left=4)
        self._pile = urwid.Pile([self._header])
        self._shown_expanded = False
        self._dirty = True
        super().__init__(self._pile)

    @property
    def expanded(self) -> bool:
        if self.owner is not None:
            return self.owner.shows_details
        return self.details.on

    # --- the child's events ------------------------------------------------------------

    def apply(self, e: ev.Event) -> None:
        """Show one event of the child session."""
        if type(e) in SUBAGENT_EVENTS:
            self.subagent(e)
        for change in self.view.apply(e):
            self._draw(change)
        self.touch()

    def as_container(self) -> ChildBlock:
        return self

    def call_finished(self, status: ToolStatus) -> None:
        """Its `task` call finished: the child's own ending normally came first; without
        one (a crashed session's history) the call's status says how it ended."""
        self.settle(_CHILD_OUTCOME_BY_CALL.get(status, "error"))

    def settle(self, outcome: str, reason: str = "") -> None:
        """The child's turn ended with `outcome` (the first word on it is kept)."""
        if self.outcome is None:
            self.outcome, self.reason = outcome, reason
            self.touch()

    def _draw(self, change: Change) -> None:
        item = change.item
        if isinstance(item, ToolCallView):
            self._tool(change, item)
        elif isinstance(item, MessageView):
            text = self._texts.get(item.key)
            if text is None:
                if not item.text.strip():
                    return
                text = self._texts[item.key] = ChildText()
                self._append(text)
            text.show(item)
        elif isinstance(item, UserView):
            self._append(TextBlock([("dim", "prompt: "), ("tool arg", one_line(item.text))]))
        elif isinstance(item, ApprovalView):
            self._append(TextBlock([("dim", f"permission: {item.decision.replace('_', ' ')}")]))
        elif isinstance(item, NoticeView):
            attr = {"warning": "warning", "error": "error"}.get(item.level, "notice")
            self._append(TextBlock([(attr, item.text)]))
        elif isinstance(item, TurnEndView):
            self.settle(str(item.outcome), item.reason)

    def _tool(self, change: Change, item: ToolCallView) -> None:
        block = self.tools.get(item.call_id)
        if change.kind is ChangeKind.REMOVED:
            if block is not None:
                self._remove(block)
                del self.tools[item.call_id]
        elif block is None:
            block = self.tools[item.call_id] = ToolBlock(item, self.details)
            block.container = self
            self._append(block)
        else:
            block.show(item)

    # --- the body ----------------------------------------------------------------------

    def _append(self, block: urwid.Widget) -> None:
        self._body.contents.append((block, self._body.options()))

    def _remove(self, block: urwid.Widget) -> None:
        for n, (widget, _) in enumerate(self._body.contents):
            if widget is block:
                del self._body.contents[n]
                return

    def insert_after(self, anchor: urwid.Widget | None, block: urwid.Widget) -> None:
        for n, (widget, _) in enumerate(self._body.contents):
            if widget is anchor:
                self._body.contents.insert(n + 1, (block, self._body.options()))
                return
        self._append(block)

    # --- drawing -----------------------------------------------------------------------

    def changed(self) -> None:
        self._dirty = True
        self._invalidate()

    def touch(self) -> None:
        """Redraw this block and the child blocks it is inside."""
        block: ChildBlock | None = self
        while block is not None:
            block.changed()
            block = block.container

    def tick(self) -> None:
        self.spin += 1
        for tool in self.tools.values():
            if tool.running:
                tool.tick()
        self.tick_children()
        self.changed()

    @property
    def label(self) -> str:
        """Who the child is: "agent NAME (DESCRIPTION)", or "subagent (…)" when it runs
        the parent's agent."""
        label = f"agent {self.agent}" if self.agent else "subagent"
        return f"{label} ({one_line(self.description, 60)})" if self.description else label

    def summary(self) -> list[markdown.Markup]:
        """The one line that stands for the child collapsed (and heads it expanded)."""
        n = len(self.tools)
        line: list[markdown.Markup] = [
            ("dim", "  └ "),
            ("tool name", self.label),
            ": ",
            f"{n} tool{'' if n == 1 else 's'}, ",
        ]
        if self.outcome is None:
            line.append(("tool run", SPINNER[self.spin % len(SPINNER)] + " running…"))
            running = [t for t in self.tools.values() if t.running]
            if running and not self.expanded:
                now = running[-1].view
                arguments = now.arguments if isinstance(now.arguments, Mapping) else {}
                line += ["  ", ("dim", f"{now.name} {key_argument(arguments)}".rstrip())]
            return line
        mark, attr, text = _CHILD_OUTCOME.get(self.outcome, ("✗", "tool error", self.outcome))
        line.append((attr, f"{mark} {text}"))
        if self.outcome not in ("completed", "cancelled") and self.reason:
            line += [": ", ("dim", one_line(self.reason, 80))]
        return line

    def _refresh(self) -> None:
        expanded = self.expanded
        if expanded != self._shown_expanded:
            self._shown_expanded = expanded
            if expanded:
                self._pile.contents.append((self._indented, self._pile.options()))
            else:
                del self._pile.contents[1:]
            self._dirty = True
        if self._dirty:
            self._dirty = False
            self._header.set_text(self.summary())

    def render(
        self, size: tuple[()] | tuple[int] | tuple[int, int], focus: bool = False
    ) -> urwid.Canvas:
        self._refresh()
        return super().render(size, focus)

    def rows(self, size: tuple[int], focus: bool = False) -> int:  # flow widget
        self._refresh()
        return int(super().rows(size, focus))

    def text(self, cols: int = 100) -> str:
        """What the block shows now, as plain text (for tests and logs)."""
        canvas = self.render((cols,))
        return "\n".join(line.decode().rstrip() for line in canvas.text)


class ChildText(Block):
    """A few lines of a child's message: its first ones once final, its last while it
    streams (laid out only when drawn: a collapsed child costs nothing per delta)."""

    def __init__(self) -> None:
        self.item: MessageView | None = None
        super().__init__()

    def show(self, item: MessageView) -> None:
        self.item = item
        self.changed()

    def markup(self) -> list[markdown.Markup]:
        if self.item is None:
            return []
        text = self.item.text
        lines = [one_line(line, 160) for line in text.strip().splitlines() if line.strip()]
        if len(lines) > CHILD_TEXT_LINES:
            if self.item.final:
                more = len(lines) - CHILD_TEXT_LINES
                lines = [*lines[:CHILD_TEXT_LINES], f"… ({more} more lines)"]
            else:
                lines = ["…", *lines[-CHILD_TEXT_LINES:]]
        return [("dim", "\n".join(lines))]
