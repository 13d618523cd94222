"""A line-mode chat on the terminal: the interactive front end until the urwid chat lands.

Ctrl-C during a turn cancels the turn (the outcome is printed when it arrives); Ctrl-C
at the prompt clears the line, a second one within 2 s exits; Ctrl-D on an empty prompt
exits. SIGTERM cancels the running turn (recorded like any cancel) and exits 143.
Input is read from stdin without a thread, so nothing blocks cancellation.

The chat is stored like every session (`SqliteStore` in the state directory) and can be
picked up again with `--continue` or `--resume ID` (optionally `--fork`ed), here or with
`rawtrio -p`; a resumed chat starts by showing its last turns. A new chat left without a
single message is deleted on the way out, so it never becomes what `--continue` finds.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import AsyncIterator

import trio

from rawtrio import events as ev
from rawtrio.cli import Interrupted, SignalLatch
from rawtrio.contracts import ExitCode
from rawtrio.errors import NoCredentials, RawtrioError, SessionLocked, UnknownSession, UsageError
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.sessions_cli import Choice, render_history, start_session
from rawtrio.settings import session_options
from rawtrio.store.base import SessionStore
from rawtrio.store.paths import default_db_path
from rawtrio.store.sqlite import SqliteStore

DOUBLE_CTRL_C_S = 2.0
#: Turns of a resumed session shown before the prompt.
RECAP_TURNS = 3


def main(args: argparse.Namespace, latch: SignalLatch | None = None) -> int:
    latch = latch or SignalLatch()
    try:
        with latch.raising():
            options = session_options(args)
    except Interrupted as exc:
        return exc.exit_code
    except NoCredentials as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.NO_CREDENTIALS
    except UsageError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    return trio.run(run, options, Choice.from_args(args))


async def run(options: SessionOptions, choice: Choice) -> int:
    try:
        async with SqliteStore(default_db_path()) as store:
            async with open_runtime(store) as runtime:
                session = await start_session(runtime, choice, options)
                exit_code = await _chat(session, resumed=not choice.new)
            await _forget_if_empty(store, session.id, created=choice.new)
    except SessionLocked as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.SESSION_LOCKED
    except (UnknownSession, UsageError) as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except RawtrioError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    return exit_code


async def _forget_if_empty(store: SessionStore, session_id: str, *, created: bool) -> None:
    """Delete a chat that never got a message; otherwise say how to come back to it."""
    record = await store.get_session(session_id)
    if created and record.message_count == 0:
        await store.delete_session(session_id)
        return
    sys.stdout.write(f"session {session_id} — resume it with: rawtrio --resume {session_id}\n")


async def _chat(session: Session, *, resumed: bool) -> int:
    out = sys.stdout
    options = session.options
    if resumed:
        render_history(session.record, await session.events_since(0), out, turns=RECAP_TURNS)
        out.write("\n")
    out.write(
        f"rawtrio — {options.provider.kind} {options.provider.model} in {options.cwd}\n"
        f"session {session.id}; Ctrl-C cancels a turn; Ctrl-D or Ctrl-C twice exits.\n"
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
                    turn_id = session.running_turn
                    if turn_id is not None and session.cancel("received SIGTERM"):
                        await session.wait_turn(turn_id)
                    nursery.cancel_scope.cancel(reason="received SIGTERM")
                    return

            nursery.start_soon(leave_on_sigterm)
            nursery.start_soon(_render, session)
            last_idle_sigint = -DOUBLE_CTRL_C_S
            pending_line: trio.MemoryReceiveChannel[str | None]
            send, pending_line = trio.open_memory_channel[str | None](0)
            nursery.start_soon(_feed, stdin, send)
            while True:
                out.write("\n> ")
                out.flush()
                line, sig = await _next_input(pending_line, sigints)
                if sig:
                    now = trio.current_time()
                    if now - last_idle_sigint < DOUBLE_CTRL_C_S:
                        break
                    last_idle_sigint = now
                    out.write("\n(press Ctrl-C again to exit)")
                    continue
                if line is None:
                    break
                if not line.strip():
                    continue
                try:
                    await _turn(session, line, sigints)
                except RawtrioError as exc:
                    out.write(f"rawtrio: {exc}\n")
            nursery.cancel_scope.cancel(reason="leaving the chat")
    out.write("\n")
    return exit_code


async def _turn(session: Session, line: str, sigints: AsyncIterator[int]) -> None:
    """Run one turn; Ctrl-C meanwhile cancels it (the outcome is rendered when it comes)."""
    turn_id = await session.submit(line)
    async with trio.open_nursery() as nursery:

        async def cancel_on_sigint() -> None:
            async for _ in sigints:
                if session.cancel("cancelled by the user (Ctrl-C)"):
                    sys.stdout.write("\ncancelling…\n")

        nursery.start_soon(cancel_on_sigint)
        await session.wait_turn(turn_id)
        nursery.cancel_scope.cancel(reason="turn ended")


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
                await send.send(None)
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                await send.send(line.decode(errors="replace"))


async def _render(session: Session) -> None:
    out = sys.stdout
    with session.subscribe() as sub:
        async for event in sub:
            if isinstance(event, ev.TextDelta):
                out.write(event.text)
            elif isinstance(event, ev.ToolCallStarted):
                out.write(f"\n[{event.name}] {dict(event.arguments)}\n")
            elif isinstance(event, ev.ToolCallFinished):
                out.write(f"[{event.name} → {event.status.value}]\n")
            elif isinstance(event, ev.TurnEnded):
                out.write(f"\n({event.outcome.value}: {event.reason})\n")
            out.flush()
