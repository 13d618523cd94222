"""The transcript: one widget per thing the user sees, built from session events.

`Transcript.apply(event)` is the only way in, for live events and for the display history
of a resumed session alike, so a resumed chat looks as it did. The widgets sit in a
`urwid.ListBox` over a list walker: only the rows on screen are rendered, so a history of
thousands of messages scrolls as fast as a short one. A block that changes (streamed text,
a tool's elapsed time) is rendered again only while it is on screen.

Tool calls are one line each — tool, key argument, spinner and elapsed time while it runs —
that settles to its outcome. Ctrl-O shows the details of every tool call and thinking block
(input, output, diff). One call can be selected (`Transcript.select_tool`, Alt-Up/Alt-Down in
the app) — its line is highlighted — and its details shown or hidden on their own
(`Transcript.toggle_selected`); Ctrl-O then applies to every call again.
"""

from __future__ import annotations

import abc
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import urwid

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus
from rawtrio.frozen import thaw
from rawtrio.tui import markdown

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
#: Lines of a tool's output shown when details are on.
DETAIL_LINES = 40
#: Arguments that name what a call works on, in order of preference.
KEY_ARGUMENTS = ("command", "path", "pattern", "file_path", "url", "query", "name", "skill")

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

    def append(self, text: str) -> None:
        self.text += text
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
    def __init__(self, call_id: str, name: str, details: DetailsToggle) -> None:
        self.call_id = call_id
        self.name = name
        self.details = details
        #: This call's own choice (Enter on the selected call); None: follow Ctrl-O.
        self.expanded: bool | None = None
        #: The call is selected (its line highlighted).
        self.selected = False
        self.arguments: Mapping[str, Any] = {}
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.status: ToolStatus | None = None
        self.denied_by: str | None = None
        self.output = ""
        self.content = ""
        self.waiting_approval = False
        self.spin = 0
        super().__init__()

    @property
    def running(self) -> bool:
        return self.status is None

    @property
    def shows_details(self) -> bool:
        return self.details.on if self.expanded is None else self.expanded

    def elapsed(self, now: float | None = None) -> float | None:
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return max(0.0, end - self.started_at)

    def tick(self) -> None:
        self.spin += 1
        self.changed()

    def markup(self) -> list[markdown.Markup]:
        arg = key_argument(self.arguments)
        head: list[markdown.Markup]
        elapsed = self.elapsed()
        took = f"  {elapsed:.1f}s" if elapsed is not None else ""
        if self.status is None:
            if self.waiting_approval:
                state = ("tool wait", "? awaiting approval")
            elif self.started_at is None:
                state = ("tool run", SPINNER[self.spin % len(SPINNER)] + " preparing")
            else:
                state = ("tool run", SPINNER[self.spin % len(SPINNER)] + " running")
            head = [("tool name", f"{self.name}"), " ", ("tool arg", arg), "  ", state, took]
        else:
            mark, attr = _OUTCOME.get(self.status, ("?", "tool error"))
            label = self.status.value
            if self.status is ToolStatus.DENIED and self.denied_by:
                label = f"denied by {self.denied_by}"
            head = [
                (attr, f"{mark} "),
                ("tool name", self.name),
                " ",
                ("tool arg", arg),
                "  ",
                (attr, label),
                took,
            ]
        if self.selected:
            text = "".join(m if isinstance(m, str) else m[1] for m in head)
            head = [("tool selected", "▸ " + text)]
        if not self.shows_details:
            last = self.output.rstrip().rsplit("\n", 1)[-1] if self.running else ""
            return [*head, "\n", ("dim", "  " + _one_line(last, 100))] if last.strip() else head
        body: list[markdown.Markup] = ["\n", ("dim", "  input: ")]
        body.append(("dim", json.dumps(self.arguments, ensure_ascii=False, indent=None)))
        shown = self.content or self.output
        if shown:
            lines = shown.rstrip("\n").splitlines()
            if len(lines) > DETAIL_LINES:
                lines = [*lines[:DETAIL_LINES], f"… ({len(lines) - DETAIL_LINES} more lines)"]
            body += ["\n", *diff_markup("\n".join("  " + line for line in lines))]
        return head + body


class EndFollowingListBox(urwid.ListBox[int]):
    """A list box that, while it follows the end, shows the last row of the last block.

    urwid keeps the focus block where it was when it grows, so a block that gains rows
    after it was scrolled into view — a running tool's output line, a reply taller than
    the screen — would grow below the bottom edge once the transcript fills the screen.
    Anchoring at each render (with the size known) keeps whatever changed last in view.
    """

    def __init__(
        self, walker: urwid.SimpleFocusListWalker[Any], following: Callable[[], bool]
    ) -> None:
        super().__init__(walker)
        self._walker = walker
        self._following = following

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:  # type: ignore[override]
        cols, rows = size
        last = len(self._walker) - 1
        if self._following() and last >= 0 and rows > 0:
            # Whatever scrolling was asked for since the last render, the end wins.
            self.set_focus_pending = self.set_focus_valign_pending = None
            self._walker.set_focus(last)
            height = self._walker[last].rows((cols,), focus)
            offset, inset = self.get_focus_offset_inset(size)
            if offset - inset != rows - height:
                self.shift_focus(size, rows - height)
        return super().render(size, focus)


class Transcript:
    """Blocks built from session events, in a list box that renders only what is on screen."""

    def __init__(self) -> None:
        self.walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.listbox = EndFollowingListBox(self.walker, lambda: self.follow)
        self.details = DetailsToggle()
        self.follow = True
        self._assistant: dict[tuple[str | None, int], AssistantBlock] = {}
        self._thinking: dict[tuple[str | None, int], ThinkingBlock] = {}
        self.tools: dict[str, ToolBlock] = {}
        #: The selected tool call (None: the prompt has the keys).
        self.selected: ToolBlock | None = None
        self._follow_before_select = True

    # --- building --------------------------------------------------------------------

    def add(self, block: urwid.Widget) -> None:
        self.walker.append(block)
        if self.follow:
            self.scroll_to_end()

    def scroll_to_end(self) -> None:
        if self.walker:
            self.listbox.set_focus(len(self.walker) - 1, coming_from="above")
            self.listbox.set_focus_valign("bottom")
        self.follow = True

    def note(self, text: str, attr: str = "notice") -> None:
        self.add(TextBlock([(attr, text)]))

    def clear(self) -> None:
        self.selected = None
        self.walker.clear()
        self._assistant.clear()
        self._thinking.clear()
        self.tools.clear()

    def running_tools(self) -> list[ToolBlock]:
        return [t for t in self.tools.values() if t.running]

    def toggle_details(self) -> None:
        """Show or hide the details of every tool call (and thinking block)."""
        self.details.on = not self.details.on
        for tool in self.tools.values():
            tool.expanded = None
        for w in self.walker:
            if isinstance(w, ToolBlock | ThinkingBlock):
                w.changed()

    # --- selecting one tool call -------------------------------------------------------

    def select_tool(self, direction: int) -> ToolBlock | None:
        """Select the tool call before (-1) or after (+1) the selected one; with none
        selected, the last one. Stays on the first/last call at either end."""
        tools = list(self.tools.values())
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
            self.selected.changed()
        self.selected = block
        if block is not None:
            block.selected = True
            block.changed()
            self._show(block)

    def _show(self, block: ToolBlock) -> None:
        """Scroll so that `block` is on screen, and stop following the end."""
        self.follow = False
        try:
            index = self.walker.index(block)
        except ValueError:
            return
        self.listbox.set_focus(index)

    def toggle_selected(self) -> bool:
        """Show or hide the details of the selected call only; False with none selected."""
        block = self.selected
        if block is None:
            return False
        block.expanded = not block.shows_details
        block.changed()
        self._show(block)
        return True

    def deselect(self) -> None:
        """Nothing selected any more; the view follows the end again if it did before."""
        if self.selected is None:
            return
        self._select(None)
        if self._follow_before_select:
            self.scroll_to_end()

    def _tool(self, call_id: str, name: str) -> ToolBlock:
        block = self.tools.get(call_id)
        if block is None:
            block = ToolBlock(call_id, name, self.details)
            self.tools[call_id] = block
            self.add(block)
        return block

    def _text_block(self, turn_id: str | None, step: int) -> AssistantBlock:
        key = (turn_id, step)
        block = self._assistant.get(key)
        if block is None:
            block = AssistantBlock()
            self._assistant[key] = block
            self.add(block)
        return block

    def apply(self, e: ev.Event) -> None:
        """Show one session event (live or from the display history)."""
        if isinstance(e, ev.UserMessageCommitted):
            self.add(UserBlock(e.text))
        elif isinstance(e, ev.TextDelta):
            self._text_block(e.turn_id, e.step).append(e.text)
            self._changed_last()
        elif isinstance(e, ev.ThinkingDelta):
            key = (e.turn_id, e.step)
            thinking = self._thinking.get(key)
            if thinking is None:
                thinking = self._thinking[key] = ThinkingBlock(self.details)
                self.add(thinking)
            thinking.append(e.text)
        elif isinstance(e, ev.ToolCallAnnounced):
            self._tool(e.call_id, e.name)
        elif isinstance(e, ev.AssistantMessageCommitted):
            key = (e.turn_id, e.step)
            if e.text or key in self._assistant:
                self._text_block(e.turn_id, e.step).finish(e.text)
            for call_id, name, arguments in e.tool_calls:
                tool = self._tool(call_id, name)
                if isinstance(arguments, Mapping):
                    tool.arguments = thaw(arguments)
                tool.changed()
        elif isinstance(e, ev.StreamInterrupted):
            if e.partial_text or (e.turn_id, e.step) in self._assistant:
                self._text_block(e.turn_id, e.step).finish(e.partial_text, cut=e.reason)
            for block in self.running_tools():  # announced, never committed: they never ran
                if block.started_at is None:
                    if block is self.selected:
                        self.selected = None
                    self.walker.remove(block)
                    del self.tools[block.call_id]
        elif isinstance(e, ev.ToolCallStarted):
            tool = self._tool(e.call_id, e.name)
            tool.arguments = thaw(e.arguments) if isinstance(e.arguments, Mapping) else {}
            tool.started_at = e.ts
            tool.waiting_approval = False
            tool.changed()
        elif isinstance(e, ev.ToolOutputDelta):
            tool = self.tools.get(e.call_id) or self._tool(e.call_id, "tool")
            tool.output += e.text
            tool.changed()
        elif isinstance(e, ev.ToolCallFinished):
            tool = self._tool(e.call_id, e.name)
            tool.status = ToolStatus(e.status)
            tool.denied_by = str(e.denied_by) if e.denied_by else None
            tool.content = e.content
            tool.ended_at = e.ts if tool.started_at is not None else None
            tool.waiting_approval = False
            tool.changed()
        elif isinstance(e, ev.PermissionRequested):
            tool = self._tool(e.call_id, e.tool_id)
            if not tool.arguments and isinstance(e.arguments, Mapping):
                tool.arguments = thaw(e.arguments)
            tool.waiting_approval = True
            tool.changed()
        elif isinstance(e, ev.PermissionAnswered):
            if e.call_id in self.tools:
                self.tools[e.call_id].waiting_approval = False
                self.tools[e.call_id].changed()
            self.note(f"  permission: {e.decision.replace('_', ' ')}", "dim")
        elif isinstance(e, ev.Notice):
            attr = {"warning": "warning", "error": "error"}.get(e.level, "notice")
            self.note(f"  {e.text}", attr)
        elif isinstance(e, ev.HookRan):
            self.note(f"  hook {e.hook} ({e.event}): {e.summary}", "dim")
        elif isinstance(e, ev.PlanUpdated):
            self.add(TextBlock(_plan_markup(thaw(e.items))))
        elif isinstance(e, ev.TurnEnded):
            self._turn_ended(e)
        elif isinstance(e, ev.CompactionStarted):
            self.note(f"  compacting the context ({e.reason}, {e.tokens_before} tokens)…", "dim")
        elif isinstance(e, ev.CompactionEnded):
            self.note(f"  compaction {e.outcome}: {e.tokens_before} → {e.tokens_after} tokens")
        elif isinstance(e, ev.ModeChanged):
            self.note(f"  permission mode: {e.mode}", "dim")

    def _changed_last(self) -> None:
        if self.follow and self.walker:
            self.listbox.set_focus(len(self.walker) - 1)
            self.listbox.set_focus_valign("bottom")

    def _turn_ended(self, e: ev.TurnEnded) -> None:
        for key, block in list(self._assistant.items()):
            if key[0] == e.turn_id and not block.final:
                block.finish()
        for tool in self.running_tools():
            tool.status = ToolStatus.CANCELLED
            tool.ended_at = e.ts if tool.started_at is not None else None
            tool.changed()
        outcome = str(e.outcome)
        if outcome == "completed":
            return
        attr = "tool cancelled" if outcome in ("cancelled", "interrupted") else "error"
        self.note(f"── turn {outcome}: {e.reason} ──", attr)


def _plan_markup(items: Any) -> list[markdown.Markup]:
    out: list[markdown.Markup] = [("dim", "plan:")]
    marks = {"completed": "☑", "in_progress": "▶", "pending": "☐"}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            status = str(item.get("status", "pending"))
            out += ["\n", ("dim", f"  {marks.get(status, '☐')} {item.get('content', '')}")]
    return out
