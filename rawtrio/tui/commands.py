"""Slash commands of the chat. Each is an operation on the runtime or the session; what it
changes shows up as events (or, for display-only commands, as a note in the transcript).

A prompt that starts with `//` is sent to the model with one `/` removed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
import urwid

from rawtrio.app.chat_commands import (
    SESSIONS_LISTED,
    mode_shown,
    model_shown,
    options_for_stored,
    options_where_launched,
    parse_mode,
    session_line,
    switch_model,
)
from rawtrio.app.choice import resolve_id
from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.errors import RawtrioError, TurnInProgress, UsageError

if TYPE_CHECKING:
    from rawtrio.checkpoints.rewind import Prompt, What
    from rawtrio.checkpoints.store import CheckpointStore
    from rawtrio.store.base import SessionRecord
    from rawtrio.tui.host import ChatHost

log = logging.getLogger(__name__)

Handler = Callable[["ChatHost", str], Awaitable[None]]
#: Sessions the picker lists at most.
PICKER_LIMIT = SESSIONS_LISTED


async def run_command(app: ChatHost, text: str) -> None:
    """Run `/name args`; a failure is shown in the transcript, never raised."""
    name, _, arg = text.strip().partition(" ")
    handler = COMMANDS.get(name)
    if handler is None:
        app.transcript.note(f"  unknown command {name}: /help lists them", "error")
        return
    try:
        await handler[0](app, arg.strip())
    except RawtrioError as exc:
        app.transcript.note(f"  {name}: {exc}", "error")
    app.refresh_status()


def _need_runtime(app: ChatHost) -> None:
    if app.runtime is None or app.options is None:
        raise UsageError("no model is configured (see the guide above, or try /demo)")


def _idle(app: ChatHost, what: str) -> None:
    if app.busy:
        raise TurnInProgress(f"a turn is running; cancel it first (Ctrl-C) to {what}")


async def _help(app: ChatHost, arg: str) -> None:
    lines = ["  commands:"]
    lines += [f"    {name:<10} {desc}" for name, (_, desc) in COMMANDS.items()]
    lines += [
        "  keys: Enter send · Alt-Enter/Ctrl-J newline · Tab complete (/cmd, @path) ·",
        "        Esc or Ctrl-C cancel a turn · Ctrl-C twice or Ctrl-D leave ·",
        "        Ctrl-O tool details · PgUp/PgDn scroll · Up/Down history ·",
        "        Alt-Up/Alt-Down select a tool call, Enter shows its details, Esc back",
    ]
    app.transcript.note("\n".join(lines), "notice")


async def _new(app: ChatHost, arg: str) -> None:
    _need_runtime(app)
    _idle(app, "start a new session")
    await _switch(app, None)


async def _switch(
    app: ChatHost, session_id: str | None, *, fork: bool = False, quiet: bool = False
) -> None:
    runtime, options = app.runtime, app.options
    assert runtime is not None
    assert options is not None
    record: SessionRecord | None = None
    opened = options
    notices: tuple[str, ...] = ()
    if session_id is not None:
        record = await runtime.get_session(session_id)
        # Its own project's configuration, as `rawtrio --resume` gives it; resolved
        # before the current session is left, so a bad file there changes nothing.
        opened, notices = await options_for_stored(record, options, app.setup.options_for_cwd)
    else:
        opened, notices = await options_where_launched(
            options, app.setup.launch_dir, app.setup.options_for_cwd
        )
    # The next session is opened before the current one is left: a refusal (open in
    # another process, its directory gone) leaves the chat where it was.
    if record is None:
        session = await runtime.create_session(opened)
    else:
        if not fork and app.session is not None and record.id == app.session.id:
            raise UsageError(f"the chat is in session {record.id} already")
        source = await runtime.fork_session(record.id) if fork else record.id
        session = await runtime.open_session(source, opened)
    try:
        await app.leave_session()
        app.transcript.clear()
        if record is None:
            app.options = opened  # later new sessions start there too, resolved once
        await app.attach(session, created=record is None, show_history=record is not None)
    except BaseException:  # the chat is leaving (Ctrl-D) while the old session closes
        if app.session is not session:
            await _abandon(app, session, new=record is None)
        raise
    if record is None:
        for notice in notices:
            app.transcript.note(f"  rawtrio: {notice}", "warning")
        app.transcript.note(f"  new session {session.id}", "dim")
        return
    for notice in notices:
        app.transcript.note(f"  rawtrio: {notice}", "warning")
    if not quiet:  # the caller says what happened
        what = f"forked {record.id} as" if fork else "resumed"
        app.transcript.note(f"  {what} session {session.id}", "dim")


async def _abandon(app: ChatHost, session: Any, *, new: bool) -> None:
    """Close a session opened for a switch that did not happen (a new one, still empty,
    is deleted), so no stray session is left for `--continue` to find."""
    with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
        cleanup.shield = True
        try:
            await session.close("the chat left before switching to it")
            if new and app.runtime is not None:
                await app.runtime.delete_session(session.id)
        except RawtrioError as exc:  # attached: the host went away meanwhile
            log.warning("leaving session %s: %s", session.id, exc)


async def _resume(app: ChatHost, arg: str) -> None:
    _need_runtime(app)
    _idle(app, "switch sessions")
    if not arg:
        raise UsageError("/resume needs a session id (or use /sessions to pick one)")
    assert app.runtime is not None
    await _switch(app, await resolve_id(app.runtime, arg))


async def _fork(app: ChatHost, arg: str) -> None:
    _need_runtime(app)
    _idle(app, "fork")
    if app.session is None:
        raise UsageError("no session to fork yet")
    await _switch(app, app.session.id, fork=True)


async def _sessions(app: ChatHost, arg: str) -> None:
    _need_runtime(app)
    assert app.runtime is not None
    cwd = str(app.session.cwd) if app.session is not None else None
    records = [
        r
        for r in await app.runtime.list_sessions(cwd=None if arg == "all" else cwd)
        if app.session is None or r.id != app.session.id
    ][:PICKER_LIMIT]
    if not records:
        app.transcript.note("  no other stored sessions here (/sessions all lists every one)")
        return

    async def pick(record: SessionRecord) -> None:
        try:
            _idle(app, "switch sessions")
            await _switch(app, record.id)
        except RawtrioError as exc:
            app.transcript.note(f"  /sessions: {exc}", "error")
        app.refresh_status()

    app.open_picker(SessionPicker(records, lambda r: app.nursery.start_soon(pick, r)))


async def _compact(app: ChatHost, arg: str) -> None:
    _need_runtime(app)
    session = app.session
    if session is None:
        raise UsageError("the session is still starting")
    _idle(app, "compact")
    app.compacting = True
    app.activity.set()
    app.refresh_status()
    try:
        await session.compact(arg or None)  # its events show what happened
    finally:
        app.compacting = False


async def _agent(app: ChatHost, arg: str) -> None:
    _need_runtime(app)
    if not arg:
        app.transcript.note(f"  agent: {app.agent} (/agent NAME starts a session with another)")
        return
    _idle(app, "switch agents")
    make = app.setup.options_for_agent
    if make is None:
        raise UsageError("agents cannot be switched here")
    options, agent = await make(arg)
    before, kept = app.session, (app.options, app.agent)
    app.options, app.agent = options, agent
    try:
        await _switch(app, None)
    except BaseException:
        if app.session is before:  # refused before leaving: the chat stays as it was
            app.options, app.agent = kept
        raise
    app.transcript.note(f"  agent {agent}: new session (an agent's prompt is fixed per session)")


async def _model(app: ChatHost, arg: str) -> None:
    _need_runtime(app)
    session = app.session
    if session is None:
        raise UsageError("the session is still starting")
    if not arg:
        app.transcript.note(f"  {model_shown(session)}")
        return
    _idle(app, "switch models")
    app.transcript.note(f"  {await switch_model(session, arg)}")


async def _mode(app: ChatHost, arg: str) -> None:
    _need_runtime(app)
    session = app.session
    if session is None:
        raise UsageError("the session is still starting")
    if not arg:
        app.transcript.note(f"  {mode_shown(session)}")
        return
    session.set_mode(parse_mode(arg))


async def _cost(app: ChatHost, arg: str) -> None:
    if app.session is None:
        raise UsageError("no session yet")
    t = app.session.usage
    window = f" of {t.context_window}" if t.context_window else ""
    lines = [
        f"  input tokens {t.input_tokens}, output tokens {t.output_tokens}, "
        f"cache read {t.cache_read_tokens}, cache write {t.cache_write_tokens}",
        f"  context {t.context_tokens} tokens{window}",
        f"  cost ${t.cost_usd:.4f}"
        if t.cost_usd is not None
        else "  cost: no prices for this model",
    ]
    app.transcript.note("\n".join(lines))


async def _memory(app: ChatHost, arg: str) -> None:
    """The project memory files (AGENTS.md, CLAUDE.md, their imports) a session in this
    folder starts with; read again now, so an edit shows up (it reaches the model in a
    new session: the system prompt is fixed per session)."""
    from rawtrio.config.agents_md import find_agents_files

    cwd = app.session.cwd if app.session is not None else Path.cwd()
    found = await trio.to_thread.run_sync(find_agents_files, cwd, abandon_on_cancel=True)
    lines = [f"  project memory for {cwd}:"]
    lines += [f"    {f.label()}" for f in found.files] or ["    none (no AGENTS.md or CLAUDE.md)"]
    lines += [f"  note: {n}" for n in found.notices]
    app.transcript.note("\n".join(lines))


async def _undo(app: ChatHost, arg: str) -> None:
    await _restore(app, arg, undo=True)


async def _redo(app: ChatHost, arg: str) -> None:
    await _restore(app, arg, undo=False)


async def _restore(app: ChatHost, arg: str, *, undo: bool, force: bool = False) -> None:
    """`/undo [N]`, `/redo [N]`: the session's checkpoints (docs/checkpoints.md). Files
    changed outside rawtrio since the turn are listed and the user chooses."""
    name = "/undo" if undo else "/redo"
    session = app.session
    if session is None:
        raise UsageError("no session yet")
    _idle(app, "undo or redo")
    number: int | None = None
    if arg:
        if not arg.isdigit() or int(arg) < 1:
            raise UsageError(f"{name} takes a checkpoint number (1, 2, …), got {arg!r}")
        number = int(arg)
    from rawtrio.checkpoints import restore
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    store = CheckpointStore(checkpoints_root(), session.cwd)
    run = restore.undo if undo else restore.redo
    try:
        outcome = await trio.to_thread.run_sync(
            functools.partial(run, store, session.id, number, force=force)
        )
    except restore.CheckpointError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"could not restore: {exc}") from None
    action = "undo" if undo else "redo"
    if outcome.applied:
        app.transcript.note("  " + outcome.describe(action).replace("\n", "\n  "), "notice")
        return
    lines = [f"  {name}: {len(outcome.conflicts)} file(s) changed outside rawtrio since the turn:"]
    lines += [f"    {c.describe()}" for c in outcome.conflicts]
    app.transcript.note("\n".join(lines), "error")

    async def chosen(index: int) -> None:
        if index != 0:
            app.transcript.note(f"  {name}: nothing was written", "dim")
            return
        try:
            await _restore(app, arg, undo=undo, force=True)
        except RawtrioError as exc:
            app.transcript.note(f"  {name}: {exc}", "error")
        app.refresh_status()

    options = ["overwrite them", "keep them (do nothing)"]
    title = f"{name}: overwrite the files changed since? (Enter chooses)"
    app.open_picker(ChoicePicker(title, options, lambda i: app.nursery.start_soon(chosen, i)))


async def _rewind(app: ChatHost, arg: str) -> None:
    """`/rewind [N [both|conversation|files]]`: pick an earlier prompt (or prompt N), then
    what goes back to just before it (unless named): the files and the conversation, the
    conversation only, or the files only (docs/checkpoints.md). The conversation is
    rewound into a fork the chat switches to, the prompt's text back in the editor; the
    session itself is left as it was."""
    _need_runtime(app)
    session = app.session
    if session is None:
        raise UsageError("no session yet")
    _idle(app, "rewind")
    from rawtrio.checkpoints import rewind
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    number, named = rewind.command_args(arg)
    prompts = rewind.prompts_of(await session.events_since(0))
    if not prompts:
        app.transcript.note("  /rewind: no prompt to rewind to yet")
        return
    store = CheckpointStore(checkpoints_root(), session.cwd)
    sets = await trio.to_thread.run_sync(store.change_sets, session.id)
    sid = session.id

    async def run(number: int, what: rewind.What, force: bool = False) -> None:
        try:
            await _do_rewind(app, sid, store, prompts, number, what, force)
        except RawtrioError as exc:
            app.transcript.note(f"  /rewind: {exc}", "error")
        app.refresh_status()

    def ask_what(prompt: rewind.Prompt) -> None:
        whats = rewind.choices(prompts, sets, prompt)
        title = f"/rewind to prompt {prompt.number}: what goes back? (Esc: nothing)"
        app.open_picker(
            ChoicePicker(
                title,
                [*(rewind.WHAT_LABELS[w] for w in whats), "nothing"],
                lambda i: (
                    app.nursery.start_soon(run, prompt.number, whats[i]) if i < len(whats) else None
                ),
            )
        )

    if number is not None:
        prompt = rewind.pick(prompts, number)
        if named is not None:
            await run(prompt.number, named)
        else:
            ask_what(prompt)
        return
    shown = prompts[-rewind.LISTED :]

    def prompt_chosen(index: int) -> None:
        if index < len(shown):
            ask_what(shown[index])

    title = "/rewind: back to just before which prompt? (Esc: nothing)"
    labels = [rewind.prompt_label(p, sets) for p in shown]
    if len(shown) < len(prompts):  # the list's own numbers are not the prompts' then
        title = f"/rewind: back to just before which prompt? (the last {len(shown)})"
        labels = [f"prompt {p.number}: {text}" for p, text in zip(shown, labels, strict=True)]
    picker = ChoicePicker(title, [*labels, "nothing"], prompt_chosen)
    app.open_picker(picker)


async def _do_rewind(
    app: ChatHost,
    session_id: str,
    store: CheckpointStore,
    prompts: list[Prompt],
    number: int,
    what: What,
    force: bool,
) -> None:
    from rawtrio.checkpoints import rewind

    _idle(app, "rewind")
    runtime = app.runtime
    assert runtime is not None
    try:
        result = await rewind.rewind(runtime, store, session_id, prompts, number, what, force=force)
    except OSError as exc:
        raise UsageError(f"could not restore the files: {exc}") from None
    if result.refused:
        lines = [f"  /rewind: {len(result.conflicts)} file(s) changed outside rawtrio since:"]
        lines += [f"    {c.describe()}" for c in result.conflicts]
        app.transcript.note("\n".join(lines), "error")

        async def chosen(index: int) -> None:
            if index != 0:
                app.transcript.note("  /rewind: nothing was done", "dim")
                return
            try:
                await _do_rewind(app, session_id, store, prompts, number, what, True)
            except RawtrioError as exc:
                app.transcript.note(f"  /rewind: {exc}", "error")
            app.refresh_status()

        options = ["overwrite them", "keep them (do nothing)"]
        title = "/rewind: overwrite the files changed since? (Enter chooses)"
        app.open_picker(ChoicePicker(title, options, lambda i: app.nursery.start_soon(chosen, i)))
        return
    text = "  " + result.describe().replace("\n", "\n  ")
    if result.session_id is None:
        app.transcript.note(text, "notice")
        return
    await _switch(app, result.session_id, quiet=True)
    app.transcript.note(text, "notice" if result.applied else "error")
    app.edit.set(result.prompt.text)


async def _diff(app: ChatHost, arg: str) -> None:
    from rawtrio.tui.diff_view import show_diff  # docs/checkpoints.md

    await show_diff(app, arg)


async def _clear(app: ChatHost, arg: str) -> None:
    app.transcript.clear()


async def _quit(app: ChatHost, arg: str) -> None:
    app.request_exit()


async def _demo(app: ChatHost, arg: str) -> None:
    app.next_action = "demo"
    app.request_exit()


COMMANDS: dict[str, tuple[Handler, str]] = {
    "/help": (_help, "commands and keys"),
    "/new": (_new, "start a new session"),
    "/sessions": (_sessions, "pick a stored session to resume ('all': every directory)"),
    "/resume": (_resume, "resume the session ID (a unique prefix will do)"),
    "/fork": (_fork, "continue in a copy of this session"),
    "/compact": (_compact, "summarise older context (optional focus text)"),
    "/agent": (_agent, "show the agent, or start a session with agent NAME"),
    "/model": (_model, "show the models, or switch to NAME"),
    "/mode": (_mode, "show or set the permission mode"),
    "/cost": (_cost, "tokens and cost of this session"),
    "/memory": (_memory, "the AGENTS.md / CLAUDE.md files loaded for this folder"),
    "/undo": (_undo, "put back the files the last turn changed (or checkpoint N)"),
    "/redo": (_redo, "re-apply what /undo put back"),
    "/rewind": (
        _rewind,
        "back to just before an earlier prompt (or prompt N): files and/or conversation",
    ),
    "/diff": (_diff, "what the last turn changed, as a diff (or checkpoint N)"),
    "/clear": (_clear, "clear the screen (the session stays as it is)"),
    "/demo": (_demo, "an offline demo against the built-in fake model"),
    "/quit": (_quit, "leave"),
}
COMMAND_NAMES = tuple(COMMANDS)


class SessionPicker(urwid.WidgetWrap[urwid.LineBox[urwid.Widget]]):
    """A list of stored sessions; Up/Down and Enter resume one, Esc closes."""

    def __init__(
        self, records: list[SessionRecord], chosen: Callable[[SessionRecord], None]
    ) -> None:
        self.records = records
        self.chosen = chosen
        self.selected = 0
        self.closed = False
        self._text = urwid.Text("")
        self._draw()
        super().__init__(urwid.LineBox(self._text, title="sessions (Enter resumes, Esc closes)"))

    def _draw(self) -> None:
        markup: list[Any] = []
        for n, r in enumerate(self.records):
            line = session_line(r)
            attr = "perm selected" if n == self.selected else "perm option"
            markup += ["\n" if n else "", (attr, line)]
        self._text.set_text(markup)

    def handle(self, key: str) -> bool:
        if key in ("up", "down"):
            self.selected = (self.selected + (1 if key == "down" else -1)) % len(self.records)
            self._draw()
        elif key == "enter":
            self.closed = True
            self.chosen(self.records[self.selected])
        elif key in ("esc", "ctrl c", "q"):
            self.closed = True
        return True


class ChoicePicker(urwid.WidgetWrap[urwid.LineBox[urwid.Widget]]):
    """A question with a few answers; Up/Down and Enter choose, Esc takes the last one."""

    def __init__(self, title: str, options: list[str], chosen: Callable[[int], None]) -> None:
        self.options = options
        self.chosen = chosen
        self.selected = 0
        self.closed = False
        self._text = urwid.Text("")
        self._draw()
        super().__init__(urwid.LineBox(self._text, title=title))

    def _draw(self) -> None:
        markup: list[Any] = []
        for n, label in enumerate(self.options):
            attr = "perm selected" if n == self.selected else "perm option"
            markup += ["\n" if n else "", (attr, f"{n + 1}. {label}")]
        self._text.set_text(markup)

    def handle(self, key: str) -> bool:
        if key in ("up", "down"):
            self.selected = (self.selected + (1 if key == "down" else -1)) % len(self.options)
            self._draw()
        elif key == "enter":
            self.closed = True
            self.chosen(self.selected)
        elif key in ("esc", "ctrl c", "q"):
            self.closed = True
            self.chosen(len(self.options) - 1)
        return True
