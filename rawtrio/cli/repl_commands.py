"""The line-mode chat's commands (`LINE_COMMANDS`, the one table the chat dispatches on and
`/help` lists): the session commands of the full-screen chat (`/new`, `/sessions`,
`/resume`, `/fork`, `/agent`, `/model`, `/mode`, sharing its checks and messages through
`rawtrio.app.chat_commands`), and the file commands `/undo [N]`, `/redo [N]`, `/diff [N]`,
`/rewind [N]`, `/memory`.

The file commands are the same operations as the terminal chat's (docs/checkpoints.md),
printed as plain text: the checkpoint store of the session's folder is read and written in
a worker thread; a file changed outside rawtrio since the turn is never overwritten without
the user's `y` (`ask` reads the answer from the next line typed). Where the terminal chat
opens a picker (`/sessions`, `/rewind`), the line chat prints a numbered list and takes the
next line typed as the answer; an empty line, anything else, Ctrl-C or the end of input
chooses nothing, and nothing changes.

The commands take a `LineHost` (what they use of the chat, `rawtrio.cli.repl.LineChat`),
so that the chat imports this table and nothing imports back.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import trio

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
from rawtrio.context.accounting import describe as describe_usage
from rawtrio.errors import RawtrioError, UsageError
from rawtrio.runtime import Runtime, Session
from rawtrio.runtime.session import SessionOptions

if TYPE_CHECKING:
    from rawtrio.checkpoints.rewind import Forker, RewindResult

#: Asks a question and returns the line typed in answer (None: end of input or Ctrl-C).
Ask = Callable[[str], Awaitable[str | None]]


def checkpoint_number(name: str, arg: str) -> int | None:
    """The N of `/undo N`, `/redo N`, `/diff N` (None when not given)."""
    if not arg:
        return None
    if not arg.isdigit() or int(arg) < 1:
        raise UsageError(f"{name} takes a checkpoint number (1, 2, …), got {arg!r}")
    return int(arg)


async def memory_text(cwd: Path) -> str:
    """The project memory files a session in `cwd` starts with (read again now)."""
    from rawtrio.config.agents_md import find_agents_files

    found = await trio.to_thread.run_sync(find_agents_files, cwd, abandon_on_cancel=True)
    lines = [f"project memory for {cwd}:"]
    lines += [f"  {f.label()}" for f in found.files] or ["  none (no AGENTS.md or CLAUDE.md)"]
    lines += [f"note: {n}" for n in found.notices]
    return "\n".join(lines)


async def restore_text(session: Session, arg: str, *, undo: bool, ask: Ask) -> str:
    """`/undo [N]` or `/redo [N]`: what was restored. Files changed outside rawtrio since
    the turn are listed and written over only when the answer to `ask` is y."""
    name = "/undo" if undo else "/redo"
    number = checkpoint_number(name, arg)
    from rawtrio.checkpoints import restore
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    store = CheckpointStore(checkpoints_root(), session.cwd)
    run = restore.undo if undo else restore.redo
    action = "undo" if undo else "redo"
    force = False
    while True:
        try:
            outcome = await trio.to_thread.run_sync(
                functools.partial(run, store, session.id, number, force=force)
            )
        except restore.CheckpointError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"could not restore: {exc}") from None
        if outcome.applied:
            return outcome.describe(action)
        lines = [f"{name}: {len(outcome.conflicts)} file(s) changed outside rawtrio since:"]
        lines += [f"  {c.describe()}" for c in outcome.conflicts]
        lines.append("overwrite them? y = yes, anything else keeps them")
        answer = await ask("\n".join(lines))
        if answer is None or answer.strip().lower() not in ("y", "yes"):
            return f"{name}: nothing was written"
        force = True


async def diff_text(session: Session, arg: str) -> str:
    """`/diff [N]`: the last change set of the session (or checkpoint N) as unified diffs."""
    number = checkpoint_number("/diff", arg)
    from rawtrio.checkpoints.diff import diff_change_set
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    store = CheckpointStore(checkpoints_root(), session.cwd)
    sid = session.id

    def render() -> str | None:
        sets = store.change_sets(sid)
        if number is not None:
            sets = [c for c in sets if c.number == number]
        if not sets:
            return None
        cs = sets[-1]
        lines = [f"checkpoint {cs.number}: {cs.summary()}"]
        if cs.cancelled:
            lines.append("the turn was cancelled: this is what it changed up to the cut")
        if cs.state == "undone":
            lines.append("undone: /redo applies it again")
        for d in diff_change_set(store.objects, cs):
            lines += ["", d.header(), *(f"  {note}" for note in d.notes), *d.lines]
        lines += [f"not captured: {m.path} ({m.reason})" for m in cs.not_captured]
        return "\n".join(lines)

    try:
        text = await trio.to_thread.run_sync(render, abandon_on_cancel=True)
    except OSError as exc:
        raise UsageError(f"could not read the checkpoints: {exc}") from None
    if text is None:
        if number is not None:
            raise UsageError(f"this session has no checkpoint {number}")
        raise UsageError("no turn of this session has changed files yet")
    return text


async def rewind_session(
    session: Session, runtime: Forker, arg: str, ask: Ask
) -> tuple[str, RewindResult | None]:
    """`/rewind [N [both|conversation|files]]`: take the session back to just before one of
    its prompts, as the terminal chat's `/rewind` does (`rawtrio.checkpoints.rewind`).
    Without N the prompts are listed and the next line picks one; without what goes back,
    the choices are listed the same way. Files changed outside rawtrio since are listed
    and written over only when the answer is y. Returns the text to show and the result
    (None: nothing was done); the caller switches the chat to a conversation's fork."""
    from rawtrio.checkpoints import rewind

    number, what = rewind.command_args(arg)
    prompts = rewind.prompts_of(await session.events_since(0))
    if not prompts:
        raise UsageError("no prompt to rewind to yet")
    checkpoints = session.checkpoints
    store = checkpoints.store if checkpoints is not None else None
    sets = [] if store is None else await trio.to_thread.run_sync(store.change_sets, session.id)
    if number is None:
        shown = prompts[-rewind.LISTED :]
        title = "/rewind: back to just before which prompt?"
        if len(shown) < len(prompts):
            title += f" (the last {len(shown)} of {len(prompts)}; /rewind N takes any)"
        lines = [title, *(f"  {p.number}. {rewind.prompt_label(p, sets)}" for p in shown)]
        lines.append("type its number (anything else: nothing)")
        answer = (await ask("\n".join(lines)) or "").strip()
        if not answer.isdigit():
            return "/rewind: nothing was done", None
        number = int(answer)
    prompt = rewind.pick(prompts, number)
    if what is None:
        whats = rewind.choices(prompts, sets, prompt)
        lines = [f"/rewind to prompt {prompt.number}: what goes back?"]
        lines += [f"  {n}. {rewind.WHAT_LABELS[w]}" for n, w in enumerate(whats, 1)]
        lines.append("type its number (anything else: nothing)")
        answer = (await ask("\n".join(lines)) or "").strip()
        if not answer.isdigit() or not 1 <= int(answer) <= len(whats):
            return "/rewind: nothing was done", None
        what = whats[int(answer) - 1]
    force = False
    while True:
        try:
            result = await rewind.rewind(
                runtime, store, session.id, prompts, prompt.number, what, force=force
            )
        except OSError as exc:
            raise UsageError(f"could not restore the files: {exc}") from None
        if not result.refused:
            return result.describe(), result
        lines = [f"/rewind: {len(result.conflicts)} file(s) changed outside rawtrio since:"]
        lines += [f"  {c.describe()}" for c in result.conflicts]
        lines.append("overwrite them? y = yes, anything else does nothing")
        if (await ask("\n".join(lines)) or "").strip().lower() not in ("y", "yes"):
            return "/rewind: nothing was done", None
        force = True


class LineHost(Protocol):
    """The line chat as its commands see it (`rawtrio.cli.repl.LineChat`)."""

    #: The session the chat is in.
    session: Session
    #: The options and agent a new session starts with (`/new`, `/agent NAME`).
    options: SessionOptions
    agent: str
    #: Where rawtrio was launched (`--cwd`, else the current directory): `/new` starts there.
    launch_dir: Path
    #: Set by `/quit`: the chat ends after the command.
    leaving: bool

    @property
    def runtime(self) -> Runtime: ...

    @property
    def sigints(self) -> AsyncIterator[int]: ...

    async def ask(self, question: str) -> str | None: ...

    async def switch(self, session: Session, *, created: bool, recap: bool) -> None: ...

    async def options_for_cwd(
        self, cwd: Path, agent: str | None = None
    ) -> tuple[SessionOptions, tuple[str, ...]]: ...

    async def options_for_agent(self, name: str) -> tuple[SessionOptions, str]: ...


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")


def _no_argument(name: str, arg: str) -> None:
    if arg:
        raise UsageError(f"{name} takes no argument, got {arg!r}")


async def _help(chat: LineHost, arg: str) -> None:
    _say(help_text())


def help_text() -> str:
    """`/help`: the commands of `LINE_COMMANDS` and the keys."""
    width = max(len(c.usage) for c in LINE_COMMANDS.values())
    lines = ["commands:"]
    lines += [f"  {c.usage:<{width}}  {c.summary}" for c in LINE_COMMANDS.values()]
    lines += [
        "keys: Enter sends the line · Ctrl-C cancels a turn, or a question a command asks ·",
        "      Ctrl-C twice or Ctrl-D at the prompt leaves",
        "a permission request takes the next line: y once · a always (this session) ·",
        "      p always (this project) · n, or a reason of more than one word: no",
        "any other line, also an unknown /word, is sent to the model",
    ]
    return "\n".join(lines)


async def _quit(chat: LineHost, arg: str) -> None:
    _no_argument("/quit", arg)
    chat.leaving = True


async def _new(chat: LineHost, arg: str) -> None:
    _no_argument("/new", arg)
    await _new_session(chat, chat.options, chat.agent)


async def _new_session(chat: LineHost, options: SessionOptions, agent: str) -> None:
    """A new session where rawtrio was launched, with `options` and `agent`; the chat's
    options and agent are those from then on."""

    async def make(cwd: Path) -> tuple[SessionOptions, tuple[str, ...]]:
        return await chat.options_for_cwd(cwd, agent)

    opened, notices = await options_where_launched(options, chat.launch_dir, make)
    session = await chat.runtime.create_session(opened)
    chat.options, chat.agent = opened, agent
    await chat.switch(session, created=True, recap=False)
    for notice in notices:
        _say(f"rawtrio: {notice}")
    _say(f"new session {session.id}")


async def _resume(chat: LineHost, arg: str) -> None:
    if not arg:
        raise UsageError("/resume needs a session id (or use /sessions to pick one)")
    await _open_stored(chat, await resolve_id(chat.runtime, arg))


async def _fork(chat: LineHost, arg: str) -> None:
    _no_argument("/fork", arg)
    await _open_stored(chat, chat.session.id, fork=True)


async def _open_stored(chat: LineHost, session_id: str, *, fork: bool = False) -> None:
    """Go on in the stored session `session_id` (or a fork of it), in its own directory
    under that project's configuration. It is opened before the chat's session is closed:
    a refusal (open in another process, its directory gone) changes nothing."""
    if session_id == chat.session.id and not fork:
        raise UsageError(f"the chat is in session {session_id} already")
    runtime = chat.runtime
    record = await runtime.get_session(session_id)
    opened, notices = await options_for_stored(record, chat.options, chat.options_for_cwd)
    source = await runtime.fork_session(record.id) if fork else record.id
    session = await runtime.open_session(source, opened)
    await chat.switch(session, created=False, recap=True)
    for notice in notices:
        _say(f"rawtrio: {notice}")
    what = f"forked {record.id} as" if fork else "resumed"
    _say(f"{what} session {session.id}")


async def _sessions(chat: LineHost, arg: str) -> None:
    """`/sessions [all]`: the stored sessions of this directory (or every one), numbered;
    the next line typed picks the one to resume."""
    if arg not in ("", "all"):
        raise UsageError(f"/sessions takes 'all' or nothing, got {arg!r}")
    current = chat.session
    listed = await chat.runtime.list_sessions(cwd=None if arg == "all" else str(current.cwd))
    records = [r for r in listed if r.id != current.id][:SESSIONS_LISTED]
    if not records:
        _say("no other stored sessions here (/sessions all lists every one)")
        return
    lines = ["/sessions: resume which one?"]
    lines += [f"  {n}. {session_line(r)}" for n, r in enumerate(records, 1)]
    lines.append("type its number (anything else: nothing)")
    answer = (await chat.ask("\n".join(lines)) or "").strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(records):
        _say("/sessions: nothing was done")
        return
    await _open_stored(chat, records[int(answer) - 1].id)


async def _agent(chat: LineHost, arg: str) -> None:
    if not arg:
        _say(f"agent: {chat.agent} (/agent NAME starts a session with another)")
        return
    options, agent = await chat.options_for_agent(arg)
    await _new_session(chat, options, agent)
    _say(f"agent {agent}: new session (an agent's prompt is fixed per session)")


async def _model(chat: LineHost, arg: str) -> None:
    if not arg:
        _say(model_shown(chat.session))
        return
    _say(await switch_model(chat.session, arg))


async def _mode(chat: LineHost, arg: str) -> None:
    if not arg:
        _say(mode_shown(chat.session))
        return
    chat.session.set_mode(parse_mode(arg))  # the chat prints the mode change


async def _cost(chat: LineHost, arg: str) -> None:
    _say(describe_usage(chat.session.usage))


async def _compact(chat: LineHost, arg: str) -> None:
    """`/compact [focus]`: compact the model context now; Ctrl-C cancels it."""
    session = chat.session
    async with trio.open_nursery() as nursery:

        async def cancel_on_sigint() -> None:
            async for _ in chat.sigints:
                if session.cancel("cancelled by the user (Ctrl-C)"):
                    sys.stdout.write("\ncancelling…\n")

        nursery.start_soon(cancel_on_sigint)
        await session.compact(arg or None)
        nursery.cancel_scope.cancel(reason="compaction ended")


async def _memory(chat: LineHost, arg: str) -> None:
    _say(await memory_text(chat.session.cwd))


async def _undo(chat: LineHost, arg: str) -> None:
    _say(await restore_text(chat.session, arg, undo=True, ask=chat.ask))


async def _redo(chat: LineHost, arg: str) -> None:
    _say(await restore_text(chat.session, arg, undo=False, ask=chat.ask))


async def _diff(chat: LineHost, arg: str) -> None:
    _say(await diff_text(chat.session, arg))


async def _rewind(chat: LineHost, arg: str) -> None:
    """`/rewind [N [what]]` (`rewind_session`); a refusal is said, naming what was wrong.
    A rewound conversation goes on in its fork: the chat switches to it."""
    session, runtime = chat.session, chat.runtime
    try:
        text, result = await rewind_session(session, runtime, arg, chat.ask)
    except RawtrioError as exc:
        _say(f"/rewind: {exc}")
        return
    _say(text)
    if result is None or result.session_id is None:
        return
    fork = await runtime.open_session(result.session_id, session.options)  # the same folder
    _say(
        f"the chat goes on in session {fork.id}; {session.id} is left as it was "
        f"(rawtrio --resume {session.id} goes back to it)\n"
        f"prompt {result.prompt.number} was: {result.prompt.text}"
    )
    await chat.switch(fork, created=False, recap=False)


@dataclass(frozen=True)
class LineCommand:
    #: How it is typed, as `/help` and the user guide show it.
    usage: str
    summary: str
    run: Callable[[LineHost, str], Awaitable[None]]


#: The line chat's commands, in `/help`'s order (the full-screen chat's order, less its
#: screen-only `/clear` and `/demo`).
LINE_COMMANDS: dict[str, LineCommand] = {
    c.usage.split()[0]: c
    for c in (
        LineCommand("/help", "these commands and the keys", _help),
        LineCommand("/new", "start a new session (where rawtrio was launched)", _new),
        LineCommand(
            "/sessions [all]",
            "list the stored sessions here ('all': every directory); the next line picks one",
            _sessions,
        ),
        LineCommand("/resume ID", "resume the session ID (a unique prefix will do)", _resume),
        LineCommand("/fork", "continue in a copy of this session", _fork),
        LineCommand("/compact [focus]", "summarise older context; Ctrl-C cancels it", _compact),
        LineCommand("/agent [NAME]", "show the agent, or start a session with agent NAME", _agent),
        LineCommand("/model [NAME]", "show the models, or switch to NAME", _model),
        LineCommand("/mode [MODE]", "show or set the permission mode", _mode),
        LineCommand("/cost", "tokens and cost of this session", _cost),
        LineCommand("/memory", "the AGENTS.md / CLAUDE.md files loaded for this folder", _memory),
        LineCommand(
            "/undo [N]", "put back the files the last turn changed (or checkpoint N)", _undo
        ),
        LineCommand("/redo [N]", "re-apply what /undo put back", _redo),
        LineCommand(
            "/rewind [N [WHAT]]",
            "back to just before an earlier prompt; WHAT: both, conversation or files",
            _rewind,
        ),
        LineCommand("/diff [N]", "what the last turn changed, as a diff (or checkpoint N)", _diff),
        LineCommand("/quit", "leave", _quit),
    )
}
