"""The chat's state and keys: the widgets, the session it talks to, and what each key does.

The app only renders events and calls session operations (docs/architecture.md). Everything it
starts runs in the nursery `run_app` gives it: the event pump of the current session, the
ticker that animates running tool calls, slash commands that wait on the runtime.

Keys (`on_key`, called before any widget sees the key):

- Ctrl-C while a turn runs (or a permission prompt is open): cancel the turn. The status
  bar says "cancelling…" at once; the outcome shows when the turn's terminal event comes.
  Esc does the same.
- Ctrl-C at an idle prompt clears the input; a second one within `DOUBLE_CTRL_C_S` leaves.
- Ctrl-D on an empty prompt leaves.
- Enter sends; while a turn runs the prompt is queued and sent when it ends (Up on an empty
  prompt takes the last queued prompt back for editing). After a cancel the queued prompts
  are not sent: they come back into the input box, since the user just said "stop".
- Alt-Up / Alt-Down (or Ctrl-Up / Ctrl-Down) select a tool call in the transcript (the last
  one first; the calls inside expanded `task` children too); while one is selected Enter
  shows / hides its details only (a `task` call's child block with them), PgUp/PgDn and
  Ctrl-O work as usual, and Esc or any other key (typing) deselects it and goes back to the
  prompt — that key then does what it always does (Esc during a turn still cancels it).

Why this module is longer than most (~650 lines): every key above reads and changes the same
few pieces of state (the running turn, the queue, the open prompt, the selection) in one
synchronous stretch, and keeping them on one object is what makes Ctrl-C always land the
same way. What does not touch that state lives elsewhere: drawing the transcript
(`blocks.py`), the slash commands (`commands.py`, through `host.ChatHost`), the permission
prompt (`permission.py`), the input editor (`editor.py`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
import urwid

from rawtrio import events as ev
from rawtrio.errors import RawtrioError
from rawtrio.heap import release_free_heap
from rawtrio.permissions.approval import ApprovalDecision
from rawtrio.runtime.view import (
    ApprovalView,
    PermissionView,
    ToolCallView,
    ToolPhase,
    TurnEndView,
    UserView,
)
from rawtrio.tui.blocks import Transcript
from rawtrio.tui.host import ChatSetup
from rawtrio.tui.layout import STARTING, Layout, status_line
from rawtrio.tui.permission import PermissionPrompt

if TYPE_CHECKING:
    from rawtrio.tui.host import ChatOptions, ChatRuntime, ChatSession
    from rawtrio.tui.trust import Answer, UntrustedFile

log = logging.getLogger(__name__)
#: A second Ctrl-C at an idle prompt within this many seconds leaves (as in the line chat;
#: not imported from `rawtrio.cli.repl`, which would load the runtime before the first frame).
DOUBLE_CTRL_C_S = 2.0
#: Keys inside a bracketed paste that stand for characters.
PASTED = {"enter": "\n", "tab": "\t", "ctrl j": "\n"}
#: How often running tool lines and the elapsed time are redrawn.
TICK_S = 0.1
#: How long after a turn ends the freed heap is given back: its last frames and the
#: runtime's clean-up come first (measured: at the turn's end most is not yet freed).
HEAP_RELEASE_DELAY_S = 0.25

#: Keys that move the tool-call selection (-1: towards the top).
SELECT_KEYS = {"meta up": -1, "ctrl up": -1, "meta down": 1, "ctrl down": 1}
#: Keys that leave a tool-call selection in place (and do what they always do).
KEEP_SELECTION = {"page up", "page down", "ctrl o", "window resize"}


@dataclass
class Usage:
    """What the status bar shows about tokens and cost (from `Usage` events)."""

    context_tokens: int = 0
    context_window: int | None = None
    session_cost_usd: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, e: ev.Usage) -> None:
        self.input_tokens += e.input_tokens
        self.output_tokens += e.output_tokens
        self.context_tokens = e.context_tokens or (
            e.input_tokens + e.cache_read_tokens + e.cache_write_tokens + e.output_tokens
        )
        self.context_window = e.context_window or self.context_window
        if e.session_cost_usd is not None:
            self.session_cost_usd = e.session_cost_usd


class ChatApp:
    def __init__(
        self, setup: ChatSetup, nursery: trio.Nursery, layout: Layout | None = None
    ) -> None:
        """`layout`: the widgets the chat's first frame was drawn from, banner included
        (`rawtrio.tui.layout`); without it the app makes its own, with `setup.banner`."""
        if layout is None:
            layout = Layout(setup.history_path, banner=setup.banner, agent=setup.agent)
        self.setup = setup
        self.nursery = nursery
        self.runtime = setup.runtime
        self.options = setup.options
        self.agent = setup.agent
        self.session: ChatSession | None = None
        self.created: set[str] = set()
        self.transcript = Transcript(layout.listbox)
        self.edit = layout.edit
        self.history = self.edit.history
        self.queue: list[str] = []
        self.queued_text = layout.queued_text
        self.hint = layout.hint
        self.status = layout.status
        self.status_map = layout.status_map
        self.usage = Usage()
        self.turn_started: float | None = None
        self.cancelling = False
        self.last_idle_ctrl_c = -DOUBLE_CTRL_C_S * 10
        self.prompt: PermissionPrompt | None = None
        self.pending_permissions: list[PermissionView] = []
        #: Which `task` child asks, by request id (a child's request is on its call).
        self.askers: dict[str, str] = {}
        self.in_paste = False
        self.exit_code = 0
        self.exit_requested = trio.Event()
        self.next_action: str | None = None
        self.script = list(setup.script)
        self._pump_scope: trio.CancelScope | None = None
        self._session_ready = trio.Event()
        self.screen: Any = None
        self.compacting = False
        self.startup_error: RawtrioError | None = None
        self.deleted: set[str] = set()
        #: Set when something starts running (wakes the ticker).
        self.activity = trio.Event()
        self.picker: Any = None
        self.frame = layout.frame
        self.loop: urwid.MainLoop | None = None
        self._top: urwid.Widget = self.frame
        #: True until the runtime is up (or it is known that no model is configured).
        self.booting = setup.runtime is None
        #: Set once the chat is done with the runtime (the boot task may then close it).
        self.closed = trio.Event()
        #: Whether to tell the user how to resume the session on the way out.
        self.resumable = True
        self.refresh_status()

    def configure(
        self,
        runtime: ChatRuntime,
        options: ChatOptions,
        agent: str,
        *,
        banner: list[Any] | None = None,
        script: list[str] | None = None,
        options_for_agent: Callable[[str], Any] | None = None,
        options_for_cwd: Callable[[Path], Any] | None = None,
    ) -> None:
        """The runtime is up: the chat can open sessions from now on."""
        self.runtime, self.options, self.agent = runtime, options, agent
        self.setup.options_for_agent = options_for_agent
        self.setup.options_for_cwd = options_for_cwd
        self.booting = False
        for line in banner or []:
            self.transcript.add(urwid.Text(line))
        self.script = list(script or [])
        self.refresh_status()

    def show_guide(self, banner: list[Any], script: list[str]) -> None:
        """No model is configured: say how to configure one, and offer the demo."""
        self.booting = False
        for line in banner:
            self.transcript.add(urwid.Text(line))
        if self.queue:
            self.transcript.note("  not sent (no model is configured): " + " / ".join(self.queue))
            self.queue.clear()
            self._show_queue()
        self.script = list(script)
        self._prefill_script()
        self.refresh_status()

    @property
    def top(self) -> urwid.Widget:
        return self._top

    @top.setter
    def top(self, widget: urwid.Widget) -> None:
        self._top = widget
        if self.loop is not None:
            self.loop.widget = widget

    # --- session lifecycle -------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.session is not None and self.session.running_turn is not None

    async def attach(self, session: ChatSession, *, created: bool, show_history: bool) -> None:
        """Make `session` the chat's session: show its history, follow its events."""
        if created:
            self.created.add(session.id)
        self.session = session
        self.usage = Usage()
        if self._pump_scope is not None:
            self._pump_scope.cancel(reason="switched session")
        scope = trio.CancelScope()
        self._pump_scope = scope
        await self.nursery.start(self._pump, session, scope, show_history)
        self._session_ready.set()
        self.refresh_status()
        self._prefill_script()

    async def _pump(
        self,
        session: ChatSession,
        scope: trio.CancelScope,
        show_history: bool,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Apply the session's events; after a cut-off (lag) resync from the store (I8)."""
        with scope:
            last = 0
            first = True
            while not session.closed:
                with session.subscribe() as sub:
                    if first and not show_history:
                        last = max(last, _last_seq(await session.events_since(0)))
                    for e in await session.events_since(last):
                        self.on_event(e, replay=first)
                        last = e.seq
                    if first:
                        first = False
                        task_status.started()
                    async for e in sub:
                        if e.seq <= last:
                            continue
                        self.on_event(e, replay=False)
                        last = e.seq
                    if not sub.lagged:
                        return

    async def leave_session(self) -> None:
        """Close the current session; a new one without a message is deleted."""
        session, self.session = self.session, None
        if self._pump_scope is not None:
            self._pump_scope.cancel(reason="leaving the session")
        if session is None or self.runtime is None:
            return
        try:
            await session.close("leaving the chat")
            if session.id in self.created:
                record = await self.runtime.get_session(session.id)
                if record.message_count == 0:
                    await self.runtime.delete_session(session.id)
                    self.deleted.add(session.id)
        except RawtrioError as exc:  # attached: the host went away meanwhile
            log.warning("leaving session %s: %s", session.id, exc)

    # --- events ------------------------------------------------------------------------

    def on_event(self, e: ev.Event, *, replay: bool) -> None:
        if isinstance(e, ev.Usage):  # the status bar's, not the transcript's
            self.usage.add(e)
        for change in self.transcript.apply(e):
            item = change.item
            if isinstance(item, UserView) and not replay:
                self.turn_started = time.monotonic()
                self.activity.set()
            elif (
                isinstance(item, ToolCallView)
                and item.permission is not None
                and change.entered(ToolPhase.AWAITING_APPROVAL)
                and not replay
            ):
                self.pending_permissions.append(item.permission)
                asker = self.transcript.asker(item.call_id, item.permission.request_id)
                if asker is not None:
                    self.askers[item.permission.request_id] = asker
                self._next_prompt()
            elif isinstance(item, ApprovalView):
                self.pending_permissions = [
                    p for p in self.pending_permissions if p.request_id != item.request_id
                ]
                self.askers.pop(item.request_id, None)
                if self.prompt is not None and self.prompt.request.request_id == item.request_id:
                    self._close_prompt()
                    self._next_prompt()
            elif isinstance(item, TurnEndView) and not replay:
                self._turn_ended(item)
        self.refresh_status()

    def _turn_ended(self, e: TurnEndView) -> None:
        self.turn_started = None
        was_cancelling, self.cancelling = self.cancelling, False
        self.pending_permissions.clear()
        self.askers.clear()
        self._close_prompt()
        if str(e.outcome) == "cancelled" and was_cancelling and self.queue:
            # The user said stop: queued prompts come back for editing instead of running.
            pending = "\n".join(self.queue)
            self.queue.clear()
            current = self.edit.edit_text
            self.edit.set(pending + ("\n" + current if current else ""))
            self._show_queue()
        elif self.queue:
            self.nursery.start_soon(self._send, self.queue.pop(0))
            self._show_queue()
            return
        else:
            self._prefill_script()
        self.nursery.start_soon(self._release_heap_when_settled)

    async def _release_heap_when_settled(self) -> None:
        """Idle after a turn: once its last frames are drawn and the runtime has dropped its
        buffers, the C heap they freed goes back to the OS (`rawtrio.heap`)."""
        await trio.sleep(HEAP_RELEASE_DELAY_S)
        if self.turn_started is None:
            release_free_heap()

    def _prefill_script(self) -> None:
        if self.script and not self.edit.edit_text and not self.busy:
            self.edit.set(self.script.pop(0))
            self.hint.set_text(("hint", "demo: press Enter to send the suggested prompt"))

    def _next_prompt(self) -> None:
        if self.prompt is not None or not self.pending_permissions or self.session is None:
            return
        request = self.pending_permissions[0]
        session = self.session

        def answer(decision: ApprovalDecision) -> None:
            try:
                session.answer_permission(request.request_id, decision)
            except RawtrioError as exc:  # answered elsewhere, or cancelled meanwhile
                self.transcript.note(f"  {exc}", "warning")
                self.pending_permissions = [
                    p for p in self.pending_permissions if p.request_id != request.request_id
                ]
                self._close_prompt()
                self._next_prompt()

        self.prompt = PermissionPrompt(request, answer, asker=self.askers.get(request.request_id))
        self.top = urwid.Overlay(
            self.prompt,
            self.frame,
            align="center",
            width=("relative", 90),
            valign="middle",
            height="pack",
        )

    def _close_prompt(self) -> None:
        if self.prompt is not None:
            self.prompt = None
            self.top = self.frame

    # --- keys --------------------------------------------------------------------------

    def on_keys(self, keys: list[Any], raw: list[int]) -> list[Any]:
        """urwid's input filter: the chat's own keys, before any widget sees them."""
        if "enter" in keys and 10 in raw and 13 not in raw:
            keys = ["ctrl j" if k == "enter" else k for k in keys]
        pasted: list[str] = []  # a paste is inserted in one piece, not key by key
        for key in keys:
            if not isinstance(key, str) or key == "window resize":  # mouse, resize
                continue
            if self.in_paste and key != "end paste":
                pasted.append(PASTED.get(key, key if len(key) == 1 else ""))
                continue
            if pasted:
                self.edit.insert_text("".join(pasted))
                pasted.clear()
            self.on_key(key)
        if pasted:
            self.edit.insert_text("".join(pasted))
        # urwid itself handles a resize (it measures the screen again).
        return [k for k in keys if k == "window resize"]

    def on_key(self, key: str) -> None:
        if key == "begin paste":
            self.in_paste = True
            return
        if key == "end paste":
            self.in_paste = False
            return
        if self.picker is not None and not (key == "ctrl c" and self.busy):
            self.picker.handle(key)
            if self.picker.closed:
                self.picker = None
                self.top = self.frame
            return
        if key == "ctrl c":
            self.ctrl_c()
            return
        if key == "esc" and self.prompt is not None and self.prompt.typing:
            self.prompt.handle(key)  # back from the message box to the options
            return
        if key == "esc":
            self.transcript.deselect()
            if self.busy:
                self.cancel_turn("cancelled by the user (Esc)")
            else:
                self.hint.set_text("")
            return
        if self.prompt is not None and self.prompt.handle(key):
            return
        if key in SELECT_KEYS:
            self.transcript.select_tool(SELECT_KEYS[key])
            return
        if self.transcript.selected is not None:
            if key == "enter":
                self.transcript.toggle_selected()
                return
            if key not in KEEP_SELECTION:
                self.transcript.deselect()  # typing goes back to the prompt
        if key == "ctrl d":
            if not self.edit.edit_text:
                self.request_exit()
            return
        if key in ("page up", "page down"):
            self._scroll(key)
            return
        if key == "ctrl o":
            self.transcript.toggle_details()
            return
        if key == "ctrl l":
            self.transcript.scroll_to_end()
            return
        if key == "enter":
            self.submit_input()
            return
        if key in ("meta enter", "ctrl j"):
            self.edit.newline()
            return
        if key == "tab":
            self.complete()
            return
        if key == "up" and not self.edit.edit_text and self.queue:
            self.edit.set(self.queue.pop())
            self._show_queue()
            return
        self.edit.keypress((max(10, self._cols() - 2),), key)

    def _cols(self) -> int:
        return self.screen_size()[0]

    def screen_size(self) -> tuple[int, int]:
        if self.screen is None:
            return (80, 24)
        cols, rows = self.screen.get_cols_rows()
        return (int(cols), int(rows))

    def _scroll(self, key: str) -> None:
        box = self.transcript.listbox
        cols, rows = self.screen_size()
        box.keypress((cols, max(3, rows - 4)), key)
        focus = box.focus_position if self.transcript.walker else 0
        self.transcript.follow = focus >= len(self.transcript.walker) - 1 and key == "page down"

    def open_picker(self, picker: Any) -> None:
        self.picker = picker
        self.top = urwid.Overlay(
            picker,
            self.frame,
            align="center",
            width=("relative", 90),
            valign="middle",
            height="pack",
        )

    async def ask_trust(self, files: list[UntrustedFile]) -> Answer:
        """Show the trust dialog for `files` (`rawtrio.tui.trust_prompt`) and wait for the
        answer: "trust", "skip" or "quit"."""
        from rawtrio.tui.trust_prompt import TrustPrompt

        answered = trio.Event()
        answer: Answer = "skip"

        def got(choice: Answer) -> None:
            nonlocal answer
            answer = choice
            answered.set()

        self.open_picker(TrustPrompt(files, got))
        await answered.wait()
        return answer

    def ctrl_c(self) -> None:
        """Ctrl-C as a key or as SIGINT: cancel the turn, else clear, else leave."""
        if self.compacting and self.session is not None:
            self.session.cancel("cancelled by the user (Ctrl-C)")
            return
        if self.busy:
            self.cancel_turn("cancelled by the user (Ctrl-C)")
            return
        now = time.monotonic()
        if now - self.last_idle_ctrl_c < DOUBLE_CTRL_C_S:
            self.request_exit()
            return
        self.last_idle_ctrl_c = now
        self.edit.set("")
        self.hint.set_text(("hint", "press Ctrl-C again to exit"))

    def cancel_turn(self, reason: str) -> None:
        if self.session is not None and self.session.cancel(reason):
            self.cancelling = True
            self.refresh_status()

    def request_exit(self, code: int = 0) -> None:
        self.exit_code = code
        self.exit_requested.set()

    def complete(self) -> None:
        from rawtrio.tui.commands import COMMAND_NAMES

        cwd = self.options.cwd if self.options is not None else None
        if self.session is not None:
            cwd = self.session.cwd
        _, found = self.edit.completion(COMMAND_NAMES, cwd)
        if len(found) > 1:
            shown = "  ".join(found[:20]) + ("  …" if len(found) > 20 else "")
            self.hint.set_text(("hint", shown))
        else:
            self.hint.set_text("")

    def submit_input(self) -> None:
        text = self.edit.edit_text
        if not text.strip():
            return
        self.edit.set("")
        self.hint.set_text("")
        self.history.add(text)
        if text.startswith("/") and not text.startswith("//"):
            from rawtrio.tui.commands import run_command

            self.nursery.start_soon(run_command, self, text)
            return
        if text.startswith("//"):
            text = text[1:]
        if self.runtime is None and not self.booting:
            self.transcript.note(
                "  no model is configured: see the guide above, or type /demo", "warning"
            )
            return
        if self.busy or self.session is None or self.queue:
            self.queue.append(text)
            self._show_queue()
            if not self._session_ready.is_set():
                self.nursery.start_soon(self._send_when_ready)
            return
        self.nursery.start_soon(self._send, text)

    async def _send_when_ready(self) -> None:
        await self._session_ready.wait()
        if self.queue and not self.busy:
            text = self.queue.pop(0)
            self._show_queue()
            await self._send(text)

    async def _send(self, text: str) -> None:
        session = self.session
        if session is None:
            self.queue.insert(0, text)
            self._show_queue()
            return
        try:
            await session.submit(text)
        except RawtrioError as exc:
            self.transcript.note(f"  {exc}", "error")
        self.turn_started = time.monotonic()
        self.activity.set()
        self.refresh_status()

    def _show_queue(self) -> None:
        if not self.queue:
            self.queued_text.set_text("")
            return
        lines = [("queued", f"queued: {q.splitlines()[0][:70]}") for q in self.queue]
        markup: list[Any] = []
        for n, line in enumerate(lines):
            markup += ["\n" if n else "", line]
        markup += ["\n", ("hint", "  (sent when the turn ends; Up on an empty prompt edits)")]
        self.queued_text.set_text(markup)

    # --- status ------------------------------------------------------------------------

    def tick(self) -> None:
        if not self.busy:
            return
        self.transcript.tick()
        self.refresh_status()

    def refresh_status(self) -> None:
        parts: list[str] = []
        state_attr = "status"
        if self.cancelling:
            state, state_attr = "cancelling…", "status cancel"
        elif self.compacting:
            state, state_attr = "compacting… (Ctrl-C cancels)", "status busy"
        elif self.busy:
            elapsed = time.monotonic() - (self.turn_started or time.monotonic())
            state, state_attr = f"working {elapsed:.0f}s (Esc/Ctrl-C cancels)", "status busy"
        elif self.runtime is None and not self.booting:
            state = "no model configured"
        elif self.session is None:
            state = STARTING
        else:
            state = "ready"
        parts.append(state)
        parts.append(f"agent {self.agent}")
        if self.session is not None:
            parts.append(self.session.model_name)
            parts.append(f"mode {self.session.policy.mode.value}")
            ctx = f"ctx {_tokens(self.usage.context_tokens)}"
            if self.usage.context_window:
                pct = 100 * self.usage.context_tokens / self.usage.context_window
                ctx += f" ({pct:.0f}%)"
            parts.append(ctx)
            cost = self.usage.session_cost_usd
            parts.append(f"${cost:.4f}" if cost is not None else "$ n/a")
            parts.append(_short_path(self.session.cwd))  # last: cut first on a narrow screen
        self.status.set_text(status_line(parts))
        self.status_map.set_attr_map({None: state_attr})


def _last_seq(events: list[ev.Event]) -> int:
    return events[-1].seq if events else 0


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _short_path(path: Path, limit: int = 32) -> str:
    """The directory for the status bar: under ~, and its end when it is long."""
    home = Path.home()
    try:
        shown = "~/" + str(path.relative_to(home))
    except ValueError:
        shown = str(path)
    return shown if len(shown) <= limit else "…" + shown[-(limit - 1) :]
