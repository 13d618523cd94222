"""The transcript: one widget per thing the user sees, built from session events.

`Transcript.apply(event)` is the only way in, for live events and for the display history
of a resumed session alike, so a resumed chat looks as it did. It folds the event into the
session's transcript view (`rawtrio.runtime.view`) and redraws the blocks of the items that
changed; the lifecycle of a tool call (announced, awaiting approval, running, finished) is
the view's, a `ToolBlock` only draws it. The widgets sit in a
`urwid.ListBox` over a list walker: only the rows on screen are rendered, so a history of
thousands of messages scrolls as fast as a short one. A block that changes (streamed text,
a tool's elapsed time) is rendered again only while it is on screen.

Tool calls are one line each — tool, key argument, spinner and elapsed time while it runs —
that settles to its outcome. Ctrl-O shows the details of every tool call and thinking block
(input, output, diff). One call can be selected (`Transcript.select_tool`, Alt-Up/Alt-Down in
the app) — its line is highlighted — and its details shown or hidden on their own
(`Transcript.toggle_selected`); Ctrl-O then applies to every call again.

A `task` call's child session is a `ChildBlock` right under the call's line, live: collapsed
to one line ("agent reader (read the config): 3 tools, running…", then done / cancelled /
failed), or expanded — with the call's details (the same Enter on the selected call, or
Ctrl-O) — to the child's own prompt, its text (a few lines of each message) and one line per
tool call, indented; a grandchild nests again inside it. It is drawn from the child's own
events, which reach the parent as `subagent_event`s (folded into a `TranscriptView` of the
child's), so a resumed session whose history holds them shows it as it was.
"""

from __future__ import annotations

import abc
import json
import time
from collections.abc import Mapping
from typing import Any

import urwid

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus
from rawtrio.frozen import thaw
from rawtrio.runtime.view import (
    ApprovalView,
    Change,
    ChangeKind,
    CompactionView,
    HookView,
    MessageView,
    ModeView,
    NoticeView,
    PlanEntry,
    PlanView,
    ThinkingView,
    ToolCallView,
    ToolPhase,
    TranscriptView,
    TurnEndView,
    UserView,
)
from rawtrio.tui import markdown
from rawtrio.tui.layout import EndFollowingListBox

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
#: Lines of a tool's output shown when details are on.
DETAIL_LINES = 40
#: Arguments that name what a call works on, in order of preference.
KEY_ARGUMENTS = (
    "command",
    "path",
    "pattern",
    "file_path",
    "url",
    "query",
    "name",
    "skill",
    "description",
)
#: The events about a `task` call's child (`Nesting.subagent`).
SUBAGENT_EVENTS = frozenset({ev.SubagentStarted, ev.SubagentEvent, ev.SubagentEnded})
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
#: A child whose outcome never arrived, by its `task` call's status (a crashed session's
#: history: the call recovered as `outcome_unknown`).
_CHILD_OUTCOME_BY_CALL = {
    ToolStatus.OK: "completed",
    ToolStatus.CANCELLED: "cancelled",
    ToolStatus.OUTCOME_UNKNOWN: "interrupted",
}

_OUTCOME = {
    ToolStatus.OK: ("✓", "tool ok"),
    ToolStatus.ERROR: ("✗", "tool error"),
    ToolStatus.INVALID_ARGUMENTS: ("✗", "tool error"),
    ToolStatus.UNKNOWN_TOOL: ("✗", "tool error"),
    ToolStatus.DENIED: ("⊘", "tool denied"),
    ToolStatus.NOT_RUN: ("·", "tool denied"),
    ToolStatus.CANCELLED: ("✂", "tool cancelled"),
    ToolStatus.TIMED_OUT: ("⏱", "tool error"),
    ToolStatus.OUTCOME_UNKNOWN: ("?", "tool cancelled"),
}


def key_argument(arguments: Mapping[str, Any]) -> str:
    """The argument that says what a call is about, on one line."""
    for name in KEY_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str) and value:
            return _one_line(value)
    for value in arguments.values():
        if isinstance(value, str) and value:
            return _one_line(value)
    return ""


def _one_line(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def diff_markup(text: str) -> list[markdown.Markup]:
    """Output with unified-diff lines coloured."""
    out: list[markdown.Markup] = []
    for n, line in enumerate(text.splitlines()):
        if n:
            out.append("\n")
        if line.startswith("+") and not line.startswith("+++"):
            out.append(("diff add", line))
        elif line.startswith("-") and not line.startswith("---"):
            out.append(("diff del", line))
        elif line.startswith("@@"):
            out.append(("diff hunk", line))
        else:
            out.append(("dim", line))
    return out


class Block(urwid.WidgetWrap[urwid.Text]):
    """A transcript entry whose markup is computed when it is drawn, not on every change."""

    def __init__(self) -> None:
        self._text = urwid.Text("")
        self._dirty = True
        super().__init__(self._text)

    def changed(self) -> None:
        self._dirty = True
        self._invalidate()

    @abc.abstractmethod
    def markup(self) -> list[markdown.Markup]:
        """What the block shows now; every block class says (computed when drawn)."""

    def render(
        self, size: tuple[()] | tuple[int] | tuple[int, int], focus: bool = False
    ) -> urwid.Canvas:
        self._refresh()
        return super().render(size, focus)

    def rows(self, size: tuple[int], focus: bool = False) -> int:  # flow widget
        self._refresh()
        return int(super().rows(size, focus))

    def _refresh(self) -> None:
        if self._dirty:
            self._dirty = False
            self._text.set_text(self.markup() or "")


class TextBlock(Block):
    def __init__(self, items: list[markdown.Markup]) -> None:
        self.items = items
        super().__init__()

    def markup(self) -> list[markdown.Markup]:
        return self.items


class UserBlock(TextBlock):
    def __init__(self, text: str) -> None:
        super().__init__([("user prefix", "› "), ("user", text)])
        self.text = text


class AssistantBlock(urwid.WidgetWrap[urwid.Pile]):
    """A reply, rendered as Markdown while it streams.

    Paragraphs that are complete (before the last blank line outside a code fence) do not
    change any more: each becomes a text widget of its own whose rendering urwid keeps, and
    only the paragraph still streaming is laid out again on the next frame, so a long
    reply costs about the same per delta as a short one."""

    def __init__(self) -> None:
        self.text = ""
        self.final = False
        self.cut: str | None = None
        self._settled = 0  # characters of `text` in the paragraph widgets
        self._paragraphs: list[list[markdown.Markup]] = []
        self._tail = urwid.Text("")
        self._tail_markup: list[markdown.Markup] = []
        self._pile = urwid.Pile([self._tail])
        self._dirty = True
        super().__init__(self._pile)

    def append(self, text: str) -> None:
        self.text += text
        self.changed()

    def finish(self, text: str | None = None, cut: str | None = None) -> None:
        if text is not None and text != self.text:
            self.text = text
            self._settled = 0
            self._paragraphs = []
            del self._pile.contents[:-1]
        self.final = True
        self.cut = cut
        self.changed()

    def changed(self) -> None:
        self._dirty = True
        self._invalidate()

    def render(
        self, size: tuple[()] | tuple[int] | tuple[int, int], focus: bool = False
    ) -> urwid.Canvas:
        self._refresh()
        return super().render(size, focus)

    def rows(self, size: tuple[int], focus: bool = False) -> int:  # flow widget
        self._refresh()
        return int(super().rows(size, focus))

    def markup(self) -> list[markdown.Markup]:
        """The whole reply's markup (what the widgets show, joined)."""
        self._refresh()
        out: list[markdown.Markup] = []
        for paragraph in self._paragraphs:
            out += [*paragraph, "\n\n"]
        return out + self._tail_markup

    def _refresh(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        end = self.text.rfind("\n\n")
        if end > self._settled and markdown.fences_balanced(self.text[:end]):
            paragraph = markdown.render(self.text[self._settled : end], final=True)
            self._paragraphs.append(paragraph)
            widget = urwid.Text([*paragraph, "\n"])
            self._pile.contents.insert(len(self._pile.contents) - 1, (widget, self._pile.options()))
            self._settled = end + 2
        rest = self.text[self._settled :]
        tail = markdown.render(rest, final=self.final) if rest else []
        if self.cut is not None:
            tail += ["\n" if tail else "", ("tool cancelled", f"[reply cut off: {self.cut}]")]
        self._tail_markup = tail
        self._tail.set_text(tail or "")


class ThinkingBlock(Block):
    def __init__(self, details: DetailsToggle) -> None:
        self.text = ""
        self.details = details
        super().__init__()

    def show(self, text: str) -> None:
        self.text = text
        self.changed()

    def markup(self) -> list[markdown.Markup]:
        if self.details.on:
            return [("thinking", f"✻ thinking\n{self.text.strip()}")]
        lines = self.text.strip().splitlines()
        first = _one_line(lines[0], 70) if lines else ""
        return [("thinking", f"✻ thinking: {first}  (Ctrl-O shows it)")]


class DetailsToggle:
    """Whether tool and thinking blocks show their details (Ctrl-O flips it)."""

    def __init__(self) -> None:
        self.on = False


class ToolBlock(Block):
    """One tool call, drawn from its view (`ToolCallView`)."""

    def __init__(self, view: ToolCallView, details: DetailsToggle) -> None:
        self.view = view
        self.details = details
        #: This call's own choice (Enter on the selected call); None: follow Ctrl-O.
        self.expanded: bool | None = None
        #: The call is selected (its line highlighted).
        self.selected = False
        self.spin = 0
        #: A `task` call's child session, shown under this line (its expansion is ours).
        self.child: ChildBlock | None = None
        #: The child block this line is inside (None: the transcript's own calls).
        self.container: ChildBlock | None = None
        super().__init__()

    @property
    def call_id(self) -> str:
        return self.view.call_id

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def running(self) -> bool:
        return self.view.phase is not ToolPhase.FINISHED

    @property
    def shows_details(self) -> bool:
        return self.details.on if self.expanded is None else self.expanded

    def show(self, view: ToolCallView) -> None:
        self.view = view
        if self.child is not None and view.status is not None:
            # The child's own ending normally came first; a call that ended without one
            # (a crashed session's history) settles its child by the call's status.
            self.child.settle(_CHILD_OUTCOME_BY_CALL.get(view.status, "error"))
        self.changed()

    def touch(self) -> None:
        """Redraw this line, its child's block, and the child blocks it is inside."""
        self.changed()
        if self.child is not None:
            self.child.changed()
        container = self.container
        while container is not None:
            container.changed()
            container = container.container

    def elapsed(self, now: float | None = None) -> float | None:
        return self.view.elapsed(now or time.time())

    def tick(self) -> None:
        self.spin += 1
        self.changed()

    def markup(self) -> list[markdown.Markup]:
        view = self.view
        arguments = view.arguments if isinstance(view.arguments, Mapping) else {}
        arg = key_argument(arguments)
        head: list[markdown.Markup]
        elapsed = self.elapsed()
        took = f"  {elapsed:.1f}s" if elapsed is not None else ""
        if view.status is None:
            if view.phase is ToolPhase.AWAITING_APPROVAL:
                state = ("tool wait", "? awaiting approval")
            elif view.started_at is None:
                state = ("tool run", SPINNER[self.spin % len(SPINNER)] + " preparing")
            else:
                state = ("tool run", SPINNER[self.spin % len(SPINNER)] + " running")
            head = [("tool name", f"{view.name}"), " ", ("tool arg", arg), "  ", state, took]
        else:
            mark, attr = _OUTCOME.get(view.status, ("?", "tool error"))
            label = view.status.value
            if view.status is ToolStatus.DENIED and view.denied_by:
                label = f"denied by {view.denied_by}"
            head = [
                (attr, f"{mark} "),
                ("tool name", view.name),
                " ",
                ("tool arg", arg),
                "  ",
                (attr, label),
                took,
            ]
        if self.selected:
            text = "".join(m if isinstance(m, str) else m[1] for m in head)
            head = [("tool selected", "▸ " + text)]
        # A `task` call's live output is its child's progress: the child block shows it.
        output = "" if self.child is not None else view.output
        if not self.shows_details:
            last = output.rstrip().rsplit("\n", 1)[-1] if self.running else ""
            return [*head, "\n", ("dim", "  " + _one_line(last, 100))] if last.strip() else head
        body: list[markdown.Markup] = ["\n", ("dim", "  input: ")]
        body.append(("dim", json.dumps(view.args, ensure_ascii=False, indent=None)))
        shown = view.content or output
        if shown:
            lines = shown.rstrip("\n").splitlines()
            if len(lines) > DETAIL_LINES:
                lines = [*lines[:DETAIL_LINES], f"… ({len(lines) - DETAIL_LINES} more lines)"]
            body += ["\n", *diff_markup("\n".join("  " + line for line in lines))]
        return head + body


class Nesting:
    """What holds `task` calls — the transcript, and a child block for its grandchildren —
    and so the blocks of their children: each right under its call's line."""

    details: DetailsToggle
    #: The tool calls held here, by call id, in the order they appeared.
    tools: dict[str, ToolBlock]
    #: The `task` children of those calls, by the call's id.
    children: dict[str, ChildBlock]

    @abc.abstractmethod
    def insert_after(self, anchor: urwid.Widget | None, block: urwid.Widget) -> None:
        """Put `block` right after `anchor` (at the end without one)."""

    def subagent(self, e: ev.Event) -> None:
        """A `subagent_started` / `subagent_event` / `subagent_ended` of one of the `task`
        calls held here: its child block is made, fed the child's event, or ended."""
        if isinstance(e, ev.SubagentStarted):
            self.child_block(e.call_id, e.description, e.agent)
        elif isinstance(e, ev.SubagentEvent):
            event = child_event(e)
            if event is not None:  # None: a type this version does not know
                self.child_block(e.call_id).apply(event)
        elif isinstance(e, ev.SubagentEnded):
            self.child_block(e.call_id).settle(str(e.outcome), e.reason)

    def child_block(
        self, call_id: str, description: str | None = None, agent: str | None = None
    ) -> ChildBlock:
        """The block of the child of call `call_id`, made (under the call's line) if new."""
        child = self.children.get(call_id)
        if child is not None:
            return child
        owner = self.tools.get(call_id)
        args = owner.view.args if owner is not None else {}
        if description is None:  # a history that begins after the child started
            description = str(args.get("description") or "")
            agent = args.get("agent") if isinstance(args.get("agent"), str) else None
        child = ChildBlock(owner, self.details, description=description, agent=agent)
        child.container = self if isinstance(self, ChildBlock) else None
        self.children[call_id] = child
        if owner is not None:
            owner.child = child
            owner.touch()
        self.insert_after(owner, child)
        return child

    def selectable_calls(self) -> list[ToolBlock]:
        """The tool calls that can be selected, in the order shown: these, and those of the
        children that are expanded."""
        out: list[ToolBlock] = []
        for tool in self.tools.values():
            out.append(tool)
            if tool.child is not None and tool.child.expanded:
                out += tool.child.selectable_calls()
        return out

    def tick_children(self) -> None:
        """Animate the running children (their summary and their running calls)."""
        for child in self.children.values():
            if child.outcome is None:
                child.tick()


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
    from rawtrio.store.codec import event_from_json  # loaded with the first child

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
            self._append(TextBlock([("dim", "prompt: "), ("tool arg", _one_line(item.text))]))
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
        return f"{label} ({_one_line(self.description, 60)})" if self.description else label

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
            line += [": ", ("dim", _one_line(self.reason, 80))]
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
        lines = [_one_line(line, 160) for line in text.strip().splitlines() if line.strip()]
        if len(lines) > CHILD_TEXT_LINES:
            if self.item.final:
                more = len(lines) - CHILD_TEXT_LINES
                lines = [*lines[:CHILD_TEXT_LINES], f"… ({more} more lines)"]
            else:
                lines = ["…", *lines[-CHILD_TEXT_LINES:]]
        return [("dim", "\n".join(lines))]


class Transcript(Nesting):
    """Blocks built from session events, in a list box that renders only what is on screen."""

    def __init__(self, listbox: EndFollowingListBox | None = None) -> None:
        """A new transcript, in `listbox` (which may hold a banner already) or a new one."""
        self.listbox = listbox or EndFollowingListBox(urwid.SimpleFocusListWalker([]))
        self.walker = self.listbox.walker
        self.details = DetailsToggle()
        #: The transcript as view states; the blocks draw its items.
        self.view = TranscriptView()
        self._assistant: dict[str, AssistantBlock] = {}  # by item key
        self._thinking: dict[str, ThinkingBlock] = {}  # by item key
        self.tools: dict[str, ToolBlock] = {}  # by call id
        self.children: dict[str, ChildBlock] = {}  # by the `task` call's id
        #: The selected tool call (None: the prompt has the keys).
        self.selected: ToolBlock | None = None
        self._follow_before_select = True

    # --- building --------------------------------------------------------------------

    @property
    def follow(self) -> bool:
        """Whether the list box shows the end (False once scrolled up or a call is selected)."""
        return self.listbox.follow

    @follow.setter
    def follow(self, value: bool) -> None:
        self.listbox.follow = value

    def add(self, block: urwid.Widget) -> None:
        self.listbox.append(block)

    def insert_after(self, anchor: urwid.Widget | None, block: urwid.Widget) -> None:
        index = self._index(anchor) if anchor is not None else None
        if index is None or index == len(self.walker) - 1:
            self.add(block)
        else:
            self.walker.insert(index + 1, block)

    def _index(self, block: urwid.Widget) -> int | None:
        try:
            return self.walker.index(block)
        except ValueError:
            return None

    def scroll_to_end(self) -> None:
        self.listbox.scroll_to_end()

    def note(self, text: str, attr: str = "notice") -> None:
        self.add(TextBlock([(attr, text)]))

    def clear(self) -> None:
        self.selected = None
        self.walker.clear()
        self.view = TranscriptView()
        self._assistant.clear()
        self._thinking.clear()
        self.tools.clear()
        self.children.clear()

    def asker(self, call_id: str, request_id: str | None = None) -> str | None:
        """Who asks when call `call_id` asks for approval while it runs: its `task` child,
        and when request `request_id` comes from deeper down, the whole chain — "agent A ›
        agent B" — each child whose own `task` call carries the same request (the child's
        events reach the chat before the request's copy on the parent's call). None when
        the call has no child."""
        child = self.children.get(call_id)
        if child is None:
            return None
        chain = [child.label]
        while request_id is not None:
            inner = next(
                (
                    child.children[cid]
                    for cid, tool in child.tools.items()
                    if cid in child.children
                    and tool.view.permission is not None
                    and tool.view.permission.request_id == request_id
                ),
                None,
            )
            if inner is None:
                break
            chain.append(inner.label)
            child = inner
        return " \u203a ".join(chain)

    def running_tools(self) -> list[ToolBlock]:
        return [t for t in self.tools.values() if t.running]

    def tick(self) -> None:
        """Animate what runs: tool lines, and the `task` children (theirs inside)."""
        for block in self.running_tools():
            block.tick()
        self.tick_children()

    def toggle_details(self) -> None:
        """Show or hide the details of every tool call (and thinking block), and every
        `task` child's block."""
        self.details.on = not self.details.on
        holders: list[Nesting] = [self]
        while holders:
            holder = holders.pop()
            for tool in holder.tools.values():
                tool.expanded = None
                tool.changed()
            for child in holder.children.values():
                child.changed()
                holders.append(child)
        for w in self.walker:
            if isinstance(w, ThinkingBlock):
                w.changed()
        if self.selected is not None:  # a call in a child now collapsed: its `task` call
            shown = self.selectable_calls()
            block: ToolBlock | None = self.selected
            while block is not None and block not in shown:
                block = block.container.owner if block.container is not None else None
            self._select(block)

    # --- selecting one tool call -------------------------------------------------------

    def select_tool(self, direction: int) -> ToolBlock | None:
        """Select the tool call before (-1) or after (+1) the selected one; with none
        selected, the last one. Stays on the first/last call at either end."""
        tools = self.selectable_calls()
        if not tools:
            return None
        current = self.selected
        if current is None or current not in tools:
            target = tools[-1]
            self._follow_before_select = self.follow
        else:
            n = tools.index(current) + direction
            target = tools[max(0, min(len(tools) - 1, n))]
        self._select(target)
        return target

    def _select(self, block: ToolBlock | None) -> None:
        if self.selected is not None and self.selected is not block:
            self.selected.selected = False
            self.selected.touch()
        self.selected = block
        if block is not None:
            block.selected = True
            block.touch()
            self._show(block)

    def _show(self, block: ToolBlock) -> None:
        """Scroll so that `block` (or the child block it is inside) is on screen, and stop
        following the end."""
        self.follow = False
        top: ToolBlock | ChildBlock = block
        while top.container is not None:
            top = top.container
        index = self._index(top)
        if index is not None:
            self.listbox.set_focus(index)

    def toggle_selected(self) -> bool:
        """Show or hide the details of the selected call only; False with none selected."""
        block = self.selected
        if block is None:
            return False
        block.expanded = not block.shows_details
        block.touch()  # a `task` call's child block expands with it
        self._show(block)
        return True

    def deselect(self) -> None:
        """Nothing selected any more; the view follows the end again if it did before."""
        if self.selected is None:
            return
        self._select(None)
        if self._follow_before_select:
            self.scroll_to_end()

    def apply(self, e: ev.Event) -> tuple[Change, ...]:
        """Show one session event (live or from the display history); return what changed
        in the view."""
        if type(e) in SUBAGENT_EVENTS:
            self.subagent(e)
        changes = self.view.apply(e)
        for change in changes:
            self._draw(change)
        return changes

    def _draw(self, change: Change) -> None:
        item = change.item
        if isinstance(item, MessageView):
            self._message(item, change.appended)
        elif isinstance(item, ToolCallView):
            self._tool(change, item)
        elif isinstance(item, ThinkingView):
            thinking = self._thinking.get(item.key)
            if thinking is None:
                thinking = self._thinking[item.key] = ThinkingBlock(self.details)
                self.add(thinking)
            thinking.show(item.text)
        elif isinstance(item, UserView):
            self.add(UserBlock(item.text))
        elif isinstance(item, ApprovalView):
            self.note(f"  permission: {item.decision.replace('_', ' ')}", "dim")
        elif isinstance(item, NoticeView):
            attr = {"warning": "warning", "error": "error"}.get(item.level, "notice")
            self.note(f"  {item.text}", attr)
        elif isinstance(item, HookView):
            self.note(f"  hook {item.hook} ({item.event}): {item.summary}", "dim")
        elif isinstance(item, PlanView):
            self.add(TextBlock(_plan_markup(item.entries)))
        elif isinstance(item, TurnEndView):
            self._turn_ended(item)
        elif isinstance(item, CompactionView):
            if item.outcome is None:
                self.note(
                    f"  compacting the context ({item.trigger}, {item.tokens_before} tokens)…",
                    "dim",
                )
            else:
                self.note(
                    f"  compaction {item.outcome}: {item.tokens_before} → {item.tokens_after} "
                    "tokens"
                )
        elif isinstance(item, ModeView):
            self.note(f"  permission mode: {item.mode}", "dim")

    def _message(self, item: MessageView, appended: str) -> None:
        block = self._assistant.get(item.key)
        if not item.final:  # streaming
            if block is None:
                block = self._assistant[item.key] = AssistantBlock()
                self.add(block)
            block.append(appended)
            self._changed_last()
            return
        if block is None:
            if not item.text:  # tool calls only, or cut before any text: nothing to show
                return
            block = self._assistant[item.key] = AssistantBlock()
            self.add(block)
        block.finish(item.text, cut=item.cut)

    def _tool(self, change: Change, item: ToolCallView) -> None:
        block = self.tools.get(item.call_id)
        if change.kind is ChangeKind.REMOVED:
            # Announced by a stream that was cut: never committed, so it never ran.
            if block is not None:
                if block is self.selected:
                    self.selected = None
                self.walker.remove(block)
                del self.tools[item.call_id]
        elif block is None:
            block = self.tools[item.call_id] = ToolBlock(item, self.details)
            self.add(block)
        else:
            block.show(item)

    def _changed_last(self) -> None:
        if self.follow and self.walker:
            self.listbox.set_focus(len(self.walker) - 1)
            self.listbox.set_focus_valign("bottom")

    def _turn_ended(self, end: TurnEndView) -> None:
        outcome = str(end.outcome)
        if outcome == "completed":
            return
        attr = "tool cancelled" if outcome in ("cancelled", "interrupted") else "error"
        self.note(f"── turn {outcome}: {end.reason} ──", attr)


def _plan_markup(entries: tuple[PlanEntry, ...]) -> list[markdown.Markup]:
    out: list[markdown.Markup] = [("dim", "plan:")]
    marks = {"completed": "☑", "in_progress": "▶", "pending": "☐"}
    for entry in entries:
        out += ["\n", ("dim", f"  {marks.get(entry.status, '☐')} {entry.content}")]
    return out
