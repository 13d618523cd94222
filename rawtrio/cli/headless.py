"""Headless runs: `rawtrio -p PROMPT` runs one turn and prints the answer.

SIGINT and SIGTERM (to rawtrio's pid or its process group; tool processes run in their
own groups) cancel the turn through the same path as every other front end: the turn
records its results and outcome, children are reaped, and the exit code says which
signal it was (130, 143). A signal before the turn exists (say, while the prompt is read
from stdin) ends the run quietly with the same code; further signals while cancelling
are noted and change nothing (cleanup is bounded anyway). See `rawtrio.cli.signals`
for how the process's handlers and trio's signal receiver share the work.

With `--input-format stream-json` the prompts are Claude Code's user messages on stdin, a
turn each in the one session, each read after the last turn's output was written
(`rawtrio.cli.headless_input.UserMessages`); a signal while waiting for one ends the run
with no turn, a cancelled turn ends it after its output.

Output goes to stdout (`text`, `json`, `stream-json` or `events`: `rawtrio.cli.flags`,
Claude Code's shapes in `rawtrio.cli.claude_output`); a turn that did not complete
also says why on stderr, one line, so a person running it sees the reason whatever the
format. In `text` each step's text starts on a line of its own, nothing at all is
printed on stdout when no text came (a failed turn prints only its error, on stderr),
and what the other formats carry as events is said on stderr: a denied tool call (the
tool and why), and every notice (warnings, retries; `json` prints the warnings too).
Text that is not Unicode (a lone surrogate in a model's reply) is written as U+FFFD in
every format, and a prompt that is not valid UTF-8 is refused before anything starts.

The session is stored (in the state directory, `rawtrio.app.open_app`): a new one, or the one
`--continue` / `--resume ID` name, copied first with `--fork` (`rawtrio.cli.sessions`).
`json` output carries its `session_id` so a script can `--resume` it. A session another
process has open exits 5 before any turn starts; an unknown id exits 2.

This module is the run in this process; `rawtrio.cli.attach` reads the prompt and decides
(a host may run the turn instead), and `rawtrio.cli.headless_output` renders the events for
both, one at a time.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, TextIO

import trio

from rawtrio import events as ev
from rawtrio.app import Choice, open_app
from rawtrio.cli.headless_input import UserMessages
from rawtrio.cli.headless_output import HeadlessOutput, report, say_notice
from rawtrio.cli.sessions import fail
from rawtrio.cli.signals import SIGNAL_EXIT, SignalLatch
from rawtrio.contracts import ExitCode, TurnOutcome
from rawtrio.errors import RawtrioError
from rawtrio.groups import collapse_group
from rawtrio.runtime import Session, Subscription
from rawtrio.unicode_safety import replace_unwritable

if TYPE_CHECKING:
    from rawtrio.cli.claude_output import SessionFacts


def run_here(prompt: str | None, args: argparse.Namespace, latch: SignalLatch) -> int:
    """Run the turn of `prompt` in this process (`rawtrio.cli.attach` read the prompt and
    decided not to attach to a host); `prompt` None: a turn per user message on stdin
    (`--input-format stream-json`)."""
    replace_unwritable(sys.stdout)
    choice = Choice.from_args(args)
    return trio.run(run, prompt, args, choice, args.output_format or "text", latch)


async def run(
    prompt: str | None,
    args: argparse.Namespace,
    choice: Choice,
    output_format: str,
    latch: SignalLatch,
) -> int:
    with trio.open_signal_receiver(*SIGNAL_EXIT) as signals:
        if latch.received:  # arrived between the prompt and the receiver: no turn yet
            return SIGNAL_EXIT[latch.received[0]]
        try:
            async with open_app(args, headless=True, notify=say_notice) as app:
                session = await app.start_session(choice)
                if output_format == "stream-json":
                    HeadlessOutput(output_format, sys.stdout, session.id, "").start(
                        session_facts(session, app.agent)
                    )
                if prompt is not None:
                    ended = await _run_turn(session, prompt, output_format, signals, latch)
                else:
                    return await _run_turns(session, output_format, signals, latch)
        except RawtrioError as exc:
            return fail(exc)
    return report(ended, latch)


def session_facts(session: Session, agent: str | None) -> SessionFacts:
    """What the `system`/`init` line says of a live session (as the host's
    `_rawtrio/session/info` says it for an attached run)."""
    from rawtrio.cli.claude_output import SessionFacts  # `stream-json` only

    return SessionFacts(
        session_id=session.id,
        cwd=str(session.cwd),
        model=session.model_name,
        tools=tuple(spec.name for spec in session.tool_specs),
        mode=session.policy.mode.value,
        agent=agent,
    )


async def _run_turns(
    session: Session, output_format: str, signals: AsyncIterator[int], latch: SignalLatch
) -> int:
    """`--input-format stream-json`: a turn per user message on stdin until its end. A
    cancelled turn ends the run (with its exit code); otherwise the code is the last
    turn's. A line that is not a user message is a usage error (exit 2)."""
    messages = UserMessages.stdin()
    code = int(ExitCode.COMPLETED)
    while True:
        prompt = await _next_prompt(messages, signals, latch)
        if latch.received:  # while waiting for a message: no turn runs
            return latch.exit_code or ExitCode.SIGINT
        if prompt is None:
            return code
        ended = await _run_turn(session, prompt, output_format, signals, latch)
        code = report(ended, latch)
        if ended.outcome is TurnOutcome.CANCELLED:
            return code


async def _next_prompt(
    messages: UserMessages, signals: AsyncIterator[int], latch: SignalLatch
) -> str | None:
    """The next message's prompt, or None at the end of the input or on a signal (noted
    in `latch`). The read runs in a thread abandoned on a signal (the process ends)."""
    prompt: str | None = None
    # Exception-group policy: as in `_run_turn` (the watcher never raises).
    with collapse_group():
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                async for signum in signals:
                    latch.note(signum)
                    nursery.cancel_scope.cancel(reason=f"received {latch.received[0].name}")
                    return

            nursery.start_soon(watch)
            prompt = await trio.to_thread.run_sync(messages.next_prompt, abandon_on_cancel=True)
            nursery.cancel_scope.cancel(reason="the next message came")
    return prompt


async def _run_turn(
    session: Session,
    prompt: str,
    output_format: str,
    signals: AsyncIterator[int],
    latch: SignalLatch,
) -> ev.TurnEnded:
    # Exception-group policy: the nursery's one task never raises, so a group holds only
    # this block's own error, which `collapse_group` re-raises plain for `run` to report.
    with collapse_group():
        async with trio.open_nursery() as nursery:
            try:
                with session.subscribe() as events:
                    turn_id = await session.submit(prompt)
                    # The turn is running now, so a signal that arrived while the session
                    # started (it waits in `signals`) cancels it like any later one.
                    nursery.start_soon(_cancel_on_signal, signals, session, latch)
                    return await _render(session, events, turn_id, output_format, sys.stdout)
            finally:
                nursery.cancel_scope.cancel(reason="turn finished")


async def _cancel_on_signal(
    signals: AsyncIterator[int], session: Session, latch: SignalLatch
) -> None:
    async for signum in signals:
        sig = latch.note(signum)
        if len(latch.received) == 1:
            session.cancel(f"received {sig.name}")


async def _render(
    session: Session, events: Subscription, turn_id: str, fmt: str, out: TextIO
) -> ev.TurnEnded:
    """Write the turn's events in `fmt` until it ends; return its terminal event."""
    output = HeadlessOutput(fmt, out, session.id, turn_id)
    async for event in events:
        ended = output.render(event)
        if ended is not None:
            output.finish(ended, session.usage)
            return ended
    # Cut off as a lagging subscriber (cannot happen with the default buffer for one
    # turn, but never hang): the turn's own record is authoritative.
    return await session.wait_turn(turn_id)
