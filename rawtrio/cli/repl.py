"""A line-mode chat on the terminal: the interactive front end until the urwid chat lands.

Ctrl-C during a turn cancels the turn (the outcome is printed when it arrives); Ctrl-C
at the prompt clears the line, a second one within 2 s exits; Ctrl-D on an empty prompt
exits. SIGTERM cancels the running turn (recorded like any cancel) and exits 143.
Text a terminal cannot take (a lone surrogate in a model's reply) is written as U+FFFD or
`?`, never raised (`rawtrio.unicode_safety`).
Input is read from stdin without a thread, so nothing blocks cancellation.

The chat is stored like every session (in the state directory, `rawtrio.app.open_app`) and can be
picked up again with `--continue` or `--resume ID` (optionally `--fork`ed), here or with
`rawtrio -p`; a resumed chat starts by showing its last turns. A new chat left without a
single message is deleted on the way out, so it never becomes what `--continue` finds.
The chat's commands (`/help`, `/new`, `/resume`, `/model`, `/undo`, `/rewind`, ...) are
`rawtrio.cli.repl_commands.LINE_COMMANDS`; a line that is none of them, also an unknown
`/word`, is sent to the model. A command that changes sessions (`/new`, `/resume`, `/fork`,
`/sessions`, `/agent NAME`, a `/rewind` of the conversation) opens the next session first,
then closes the one the chat was in (`LineChat.switch`), so a refusal (a session open in
another process) leaves the chat where it was.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TextIO

import trio

from rawtrio import events as ev
from rawtrio.app import App, Choice, open_app
from rawtrio.cli.repl_commands import LINE_COMMANDS
from rawtrio.cli.sessions import fail, render_history
from rawtrio.cli.signals import Interrupted, SignalLatch
from rawtrio.contracts import ExitCode
from rawtrio.errors import RawtrioError, UsageError
from rawtrio.permissions.approval import AlwaysScope, ApprovalDecision
from rawtrio.runtime import Runtime, Session
from rawtrio.runtime.session import SessionOptions
from rawtrio.runtime.view import (
    ApprovalView,
    Change,
    CompactionView,
    MessageView,
    ModeView,
    NoticeView,
    ToolCallView,
    ToolPhase,
    TranscriptView,
    TurnEndView,
)
from rawtrio.unicode_safety import replace_lone_surrogates, replace_unwritable

DOUBLE_CTRL_C_S = 2.0
#: Turns of a resumed session shown before the prompt.
RECAP_TURNS = 3


def main(args: argparse.Namespace, latch: SignalLatch | None = None) -> int:
    latch = latch or SignalLatch()
    try:
        with latch.raising():
            choice = Choice.from_args(args)
    except Interrupted as exc:
        return exc.exit_code
    except UsageError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    replace_unwritable(sys.stdout)
    try:
        with latch.raising():
            if not _ask_trust(args):
                return ExitCode.COMPLETED
    except Interrupted as exc:
        return exc.exit_code
    return trio.run(run, args, choice)


def _ask_trust(args: argparse.Namespace) -> bool:
    """When the project has files that wait for trust (`rawtrio.tui.trust`) and stdin is a
    terminal: list them and ask y (trust and remember), n (continue without them this
    session) or q (quit). False: quit."""
    if getattr(args, "trust", False) or not sys.stdin.isatty():
        return True
    from rawtrio.tui.trust import describe, trust_files, untrusted_files

    env = dict(os.environ)
    cwd = Path(getattr(args, "cwd", None) or os.getcwd())
    if getattr(args, "resume", None) and not getattr(args, "cwd", None):
        from rawtrio.app.choice import stored_directory

        # The session's own project's files (rawtrio.app.choice), not the run directory's.
        cwd = trio.run(stored_directory, args.resume) or cwd
    files = untrusted_files(cwd, env, getattr(args, "config", None))
    if not files:
        return True
    out = sys.stdout
    out.write("This project has files that run code or grant permissions:\n")
    out.writelines(f"  {line}\n" for line in describe(files))
    out.write("Untrusted, they are left out; trusting is recorded per file.\n")
    while True:
        out.write("Trust them? [y] trust and remember / [n] continue without them / [q] quit: ")
        out.flush()
        reply = sys.stdin.readline()
        answer = reply.strip().lower()[:1]
        if not reply or answer == "n":
            return True
        if answer == "q":
            return False
        if answer == "y":
            trust_files(files, env)
            return True


async def run(args: argparse.Namespace, choice: Choice) -> int:
    try:
        async with open_app(args, notify=_say_notice) as app:
            # New sessions (`/new`, `/agent NAME`) start where rawtrio was launched, with
            # the launch's options, also after `--resume ID` opened a session elsewhere.
            launch_dir = Path(await trio.Path(args.cwd or os.getcwd()).resolve())
            options, agent = app.options, app.agent
            session = await app.start_session(choice)
            chat = LineChat(app, session, options, agent, launch_dir)
            if choice.new:
                chat.created.add(session.id)
            exit_code = await chat.run(resumed=not choice.new)
            left = chat.session
            await left.close("leaving the chat")
            await _forget_if_empty(app.runtime, left.id, created=left.id in chat.created)
    except RawtrioError as exc:
        return fail(exc)
    return exit_code


def _say_notice(notice: str) -> None:
    print(f"rawtrio: {notice}", file=sys.stderr)


async def _forget_if_empty(
    runtime: Runtime, session_id: str, *, created: bool, say: bool = True
) -> None:
    """Delete a chat that never got a message; otherwise say how to come back to it."""
    record = await runtime.get_session(session_id)
    if created and record.message_count == 0:
        await runtime.delete_session(session_id)
        return
    if say:
        sys.stdout.write(f"session {session_id} — resume it with: rawtrio --resume {session_id}\n")


class LineChat:
    """The chat until the user leaves: the session it is in (another one after `/new`,
    `/resume`, `/fork`, `/sessions`, `/agent` or a `/rewind` that forked the conversation)
    and what its commands use (`rawtrio.cli.repl_commands.LineHost`)."""

    def __init__(
        self, app: App, session: Session, options: SessionOptions, agent: str, launch_dir: Path
    ) -> None:
        self.app = app
        self.session = session
        #: The options and agent new sessions start with (`/new`, `/agent NAME`).
        self.options = options
        self.agent = agent
        self.launch_dir = launch_dir
        #: Sessions this chat created: left without a message, they are deleted.
        self.created: set[str] = set()
        self.leaving = False
        self._rendering: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self._lines: trio.MemoryReceiveChannel[str | None] | None = None
        self._sigints: AsyncIterator[int] | None = None

    @property
    def runtime(self) -> Runtime:
        return self.app.runtime

    async def run(self, *, resumed: bool) -> int:
        """Prompt, run, print until the user leaves; the exit code."""
        out = sys.stdout
        options = self.session.options
        if resumed:
            await self._recap(self.session)
        out.write(
            f"rawtrio — {options.provider.kind} {options.provider.model} in {options.cwd}\n"
            f"session {self.session.id}; /help lists the commands; Ctrl-C cancels a turn; "
            "Ctrl-D or Ctrl-C twice exits.\n"
        )
        stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        exit_code = ExitCode.COMPLETED
        with (
            trio.open_signal_receiver(signal.SIGINT) as sigints,
            trio.open_signal_receiver(signal.SIGTERM) as sigterms,
        ):
            async with trio.open_nursery() as nursery:

                async def leave_on_sigterm() -> None:
                    nonlocal exit_code
                    async for _ in sigterms:
                        exit_code = ExitCode.SIGTERM
                        session = self.session
                        turn_id = session.running_turn
                        if turn_id is not None and session.cancel("received SIGTERM"):
                            await session.wait_turn(turn_id)
                        nursery.cancel_scope.cancel(reason="received SIGTERM")
                        return

                nursery.start_soon(leave_on_sigterm)
                self._nursery, self._sigints = nursery, sigints
                self._rendering = await nursery.start(_render, self.session)
                send, self._lines = trio.open_memory_channel[str | None](0)
                nursery.start_soon(_feed, stdin, send)
                await self._prompts()
                nursery.cancel_scope.cancel(reason="leaving the chat")
        out.write("\n")
        return exit_code

    async def _prompts(self) -> None:
        out = sys.stdout
        last_idle_sigint = -DOUBLE_CTRL_C_S
        while not self.leaving:
            out.write("\n> ")
            out.flush()
            line, sig = await self.next_input()
            if sig:
                now = trio.current_time()
                if now - last_idle_sigint < DOUBLE_CTRL_C_S:
                    return
                last_idle_sigint = now
                out.write("\n(press Ctrl-C again to exit)")
                continue
            if line is None:
                return
            if not line.strip():
                continue
            name, _, arg = line.strip().partition(" ")
            command = LINE_COMMANDS.get(name)
            try:
                if command is None:  # a message, also an unknown /word
                    await _turn(self.session, line, self.sigints, self.lines)
                else:
                    await command.run(self, arg.strip())
            except RawtrioError as exc:
                out.write(f"rawtrio: {exc}\n")

    @property
    def lines(self) -> trio.MemoryReceiveChannel[str | None]:
        assert self._lines is not None
        return self._lines

    @property
    def sigints(self) -> AsyncIterator[int]:
        assert self._sigints is not None
        return self._sigints

    async def next_input(self) -> tuple[str | None, bool]:
        """The next line typed (None: end of input), or True for a Ctrl-C first."""
        return await _next_input(self.lines, self.sigints)

    async def ask(self, question: str) -> str | None:
        """`question`, and the line typed in answer (None: end of input or Ctrl-C)."""
        sys.stdout.write(question + "\n> ")
        sys.stdout.flush()
        answer, _sig = await self.next_input()
        return answer

    async def switch(self, session: Session, *, created: bool, recap: bool) -> None:
        """Go on in `session` (open already): the current one is closed (deleted when the
        chat created it and it has no message; otherwise how to resume it is said unless
        it is a `/rewind`'s source), then `session`'s events are printed."""
        left = self.session
        assert self._rendering is not None
        assert self._nursery is not None
        self._rendering.cancel(reason="switching sessions")
        self.session = session
        if created:
            self.created.add(session.id)
        await left.close("leaving the session")
        await _forget_if_empty(
            self.runtime, left.id, created=left.id in self.created, say=recap or created
        )
        if recap:
            await self._recap(session)
        self._rendering = await self._nursery.start(_render, session)

    async def _recap(self, session: Session) -> None:
        events = await session.events_since(0)
        render_history(session.record, events, sys.stdout, turns=RECAP_TURNS)
        sys.stdout.write("\n")

    async def options_for_cwd(
        self, cwd: Path, agent: str | None = None
    ) -> tuple[SessionOptions, tuple[str, ...]]:
        """That project's configuration, with this run's flags and the chat's agent (or
        `agent`)."""
        setup = await self.app.options_for(cwd=cwd, agent=agent or self.agent)
        return setup.options, setup.notices

    async def options_for_agent(self, name: str) -> tuple[SessionOptions, str]:
        """The run's options with the agent `name` (`ConfigError` listing the agents)."""
        setup = await self.app.options_for(cwd=self.launch_dir, agent=name)  # where it starts
        return setup.options, setup.agent


async def _turn(
    session: Session,
    line: str,
    sigints: AsyncIterator[int],
    lines: trio.MemoryReceiveChannel[str | None],
) -> None:
    """Run one turn; Ctrl-C meanwhile cancels it (the outcome is rendered when it comes).
    A permission request takes the next line typed as its answer; other lines typed
    during the turn wait for the next prompt."""
    with session.subscribe() as events:
        turn_id = await session.submit(line)
        async with trio.open_nursery() as nursery:

            async def cancel_on_sigint() -> None:
                async for _ in sigints:
                    if session.cancel("cancelled by the user (Ctrl-C)"):
                        sys.stdout.write("\ncancelling…\n")

            async def answer_permissions() -> None:
                async for event in events:
                    if not isinstance(event, ev.PermissionRequested):
                        continue
                    typed = await lines.receive()
                    decision = (
                        _decision(typed)
                        if typed is not None
                        else ApprovalDecision.deny("the user closed the chat's input", "chat")
                    )
                    try:
                        session.answer_permission(event.request_id, decision)
                    except RawtrioError as exc:  # answered elsewhere, or cancelled
                        sys.stdout.write(f"rawtrio: {exc}\n")

            nursery.start_soon(cancel_on_sigint)
            nursery.start_soon(answer_permissions)
            await session.wait_turn(turn_id)
            nursery.cancel_scope.cancel(reason="turn ended")


def _decision(typed: str) -> ApprovalDecision:
    """y: allow once; a: allow always (this session); p: always, saved to the project;
    anything else denies, and more than one word is passed to the model as the reason."""
    answer = typed.strip()
    word = answer.lower()
    if word in ("y", "yes"):
        return ApprovalDecision.allow_once("chat")
    if word in ("a", "always"):
        return ApprovalDecision.allow_always(AlwaysScope.SESSION, "chat")
    if word in ("p", "project"):
        return ApprovalDecision.allow_always(AlwaysScope.PROJECT, "chat")
    message = answer if len(answer.split()) > 1 else None
    return ApprovalDecision.deny(message, "chat")


async def _next_input(
    lines: trio.MemoryReceiveChannel[str | None], sigints: AsyncIterator[int]
) -> tuple[str | None, bool]:
    result: list[tuple[str | None, bool]] = []
    async with trio.open_nursery() as nursery:

        async def read_line() -> None:
            result.append((await lines.receive(), False))
            nursery.cancel_scope.cancel(reason="got a line")

        async def wait_sigint() -> None:
            async for _ in sigints:
                result.append((None, True))
                nursery.cancel_scope.cancel(reason="got Ctrl-C")
                return

        nursery.start_soon(read_line)
        nursery.start_soon(wait_sigint)
    return result[0]


async def _feed(stream: trio.lowlevel.FdStream, send: trio.MemorySendChannel[str | None]) -> None:
    """Read stdin without a thread and hand over one line at a time (None at end of input)."""
    buf = b""
    async with stream:
        while True:
            chunk = await stream.receive_some(65536)
            if not chunk:
                if buf:
                    await send.send(buf.decode(errors="replace"))
                while True:  # end of input, for every reader that asks from now on
                    await send.send(None)
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                await send.send(line.decode(errors="replace"))


async def _render(
    session: Session, task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED
) -> None:
    """Print the session's events as they come, until the scope handed back is cancelled
    (the chat switched sessions) or the chat ends."""
    out = sys.stdout
    view = TranscriptView(retain=False)
    with trio.CancelScope() as scope, session.subscribe() as sub:
        task_status.started(scope)
        async for event in sub:
            for change in view.apply(event):
                _print_change(change, out)
            out.flush()


def _print_change(change: Change, out: TextIO) -> None:
    """One change of the transcript view, as the line chat prints it."""
    item = change.item
    if isinstance(item, MessageView):
        out.write(replace_lone_surrogates(change.appended))
    elif isinstance(item, ToolCallView):
        if change.entered(ToolPhase.RUNNING) and item.started_at is not None:
            arguments = item.arguments if isinstance(item.arguments, Mapping) else {}
            out.write(f"\n[{item.name}] {dict(arguments)}\n")
        elif change.entered(ToolPhase.AWAITING_APPROVAL) and item.permission is not None:
            out.write(
                f"\n[permission] {item.permission.tool_id}: {item.permission.summary}\n"
                "allow? y = once, a = always this session, p = always in this project, "
                "n = no (or type a reason)\n"
            )
        elif change.entered(ToolPhase.FINISHED) and item.status is not None:
            out.write(f"[{item.name} → {item.status.value}]\n")
    elif isinstance(item, ApprovalView) and item.decision == "cancelled":
        out.write("[permission request cancelled]\n")
    elif isinstance(item, ModeView):
        out.write(f"\n(permission mode: {item.mode})\n")
    elif isinstance(item, NoticeView):
        out.write(f"\n({item.level}: {item.text})\n")
    elif isinstance(item, TurnEndView):
        out.write(f"\n({item.outcome.value}: {item.reason})\n")
    elif isinstance(item, CompactionView):
        if item.outcome is None:
            out.write(f"\n(compacting the context: {item.tokens_before} tokens…)\n")
        else:
            out.write(
                f"(compaction {item.outcome}: {item.tokens_before} → "
                f"{item.tokens_after} tokens; {item.summary})\n"
            )
