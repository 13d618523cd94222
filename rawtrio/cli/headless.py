"""Headless runs: `rawtrio -p PROMPT` runs one turn and prints the answer.

SIGINT and SIGTERM (to rawtrio's pid or its process group; tool processes run in their
own groups) cancel the turn through the same path as every other front end: the turn
records its results and outcome, children are reaped, and the exit code says which
signal it was (130, 143). A signal before the turn exists (say, while the prompt is read
from stdin) ends the run quietly with the same code; further signals while cancelling
are noted and change nothing (cleanup is bounded anyway). See `rawtrio.cli.signals`
for how the process's handlers and trio's signal receiver share the work.

Output goes to stdout (`text`, `json` or `stream-json`); a turn that did not complete
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
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator
from typing import TextIO

import trio

from rawtrio import events as ev
from rawtrio.app import Choice, open_app
from rawtrio.cli.sessions import fail
from rawtrio.cli.signals import SIGNAL_EXIT, Interrupted, SignalLatch
from rawtrio.contracts import ExitCode, ToolStatus, TurnOutcome
from rawtrio.errors import (
    RawtrioError,
    UsageError,
)
from rawtrio.groups import collapse_group
from rawtrio.runtime import Session, Subscription
from rawtrio.runtime.view import MessageView, NoticeView, ToolCallView, ToolPhase, TranscriptView
from rawtrio.unicode_safety import (
    describe_undecodable,
    replace_lone_surrogates,
    replace_unwritable,
    scrub_json,
)

OUTCOME_EXIT = {
    TurnOutcome.COMPLETED: ExitCode.COMPLETED,
    TurnOutcome.MAX_STEPS: ExitCode.MAX_STEPS,
    TurnOutcome.ERROR: ExitCode.ERROR,
}


def main(args: argparse.Namespace, latch: SignalLatch | None = None) -> int:
    latch = latch or SignalLatch()
    try:
        with latch.raising():
            prompt = _read_stdin() if args.prompt == "-" else args.prompt
            problem = describe_undecodable(prompt, "-p: the prompt")
            if problem is not None:
                raise UsageError(problem)
            if not prompt.strip():
                raise UsageError("-p: the prompt is empty")
            choice = Choice.from_args(args)
    except Interrupted as exc:
        return exc.exit_code
    except UsageError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    replace_unwritable(sys.stdout)
    return trio.run(run, prompt, args, choice, args.output_format or "text", latch)


def _read_stdin() -> str:
    """The prompt from standard input, which must be UTF-8 (a clear error if not)."""
    raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"-p -: standard input is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
            f"offset {exc.start}); rawtrio takes text in UTF-8"
        ) from None


async def run(
    prompt: str,
    args: argparse.Namespace,
    choice: Choice,
    output_format: str,
    latch: SignalLatch,
) -> int:
    with trio.open_signal_receiver(*SIGNAL_EXIT) as signals:
        if latch.received:  # arrived between the prompt and the receiver: no turn yet
            return SIGNAL_EXIT[latch.received[0]]
        try:
            async with open_app(args, headless=True, notify=_say_notice) as app:
                session = await app.start_session(choice)
                ended = await _run_turn(session, prompt, output_format, signals, latch)
        except RawtrioError as exc:
            return fail(exc)
    return _report(ended, latch)


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


def _say_notice(notice: str) -> None:
    print(f"rawtrio: {notice}", file=sys.stderr)


def _report(ended: ev.TurnEnded, latch: SignalLatch) -> int:
    """Say on stderr why a turn did not complete; return the exit code for its outcome."""
    if ended.outcome is TurnOutcome.COMPLETED:
        return ExitCode.COMPLETED
    if ended.outcome is TurnOutcome.CANCELLED:
        print(f"rawtrio: cancelled ({ended.reason})", file=sys.stderr)
        return latch.exit_code or ExitCode.SIGINT
    label = "error" if ended.outcome is TurnOutcome.ERROR else "stopped"
    print(f"rawtrio: {label}: {ended.reason}", file=sys.stderr)
    return OUTCOME_EXIT[ended.outcome]


def _usage_extras(session: Session, turn_cost: float | None) -> dict[str, object]:
    """Cost (null without configured prices) and the context size against the window."""
    totals = session.usage
    return {
        "cost_usd": turn_cost,
        "session_cost_usd": totals.cost_usd,
        "context_tokens": totals.context_tokens,
        "context_window": totals.context_window,
    }


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
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}
    cost: float | None = None  # this turn's, when the model has prices
    text = _TextOutput(out)
    async for event in events:
        if fmt == "stream-json":
            out.write(json.dumps(scrub_json(ev.event_to_json(event))) + "\n")
            out.flush()
        elif fmt == "text":
            text.render(event)
        elif isinstance(event, ev.Notice) and event.level != "info":
            # json: stdout carries only the result object, so waits a person should know
            # of ("retrying in 4 s: 529 overloaded, …") go to stderr as they happen.
            print(f"rawtrio: {event.level}: {event.text}", file=sys.stderr, flush=True)
        if isinstance(event, ev.Usage) and event.turn_id == turn_id:
            for k in usage:
                usage[k] += getattr(event, k)
            if event.cost_usd is not None:
                cost = (cost or 0.0) + event.cost_usd
        if isinstance(event, ev.TurnEnded) and event.turn_id == turn_id:
            if fmt == "text":
                text.end()
            elif fmt == "json":
                result = {
                    "v": 1,
                    "session_id": session.id,
                    "turn_id": turn_id,
                    "outcome": event.outcome.value,
                    "reason": event.reason,
                    "steps": event.steps,
                    "result": event.final_text,
                    "usage": {**usage, **_usage_extras(session, cost)},
                }
                out.write(json.dumps(scrub_json(result)) + "\n")
            out.flush()
            return event
    # Cut off as a lagging subscriber (cannot happen with the default buffer for one
    # turn, but never hang): the turn's own record is authoritative.
    return await session.wait_turn(turn_id)


class _TextOutput:
    """`--output-format text`: the model's text on stdout, each step's on a line of its
    own; denied calls and notices on stderr, one line each (from the transcript view)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._view = TranscriptView(retain=False)
        self._step: int | None = None  # the step whose text was written last
        self._at_line_start = True

    def render(self, event: ev.Event) -> None:
        for change in self._view.apply(event):
            item = change.item
            if isinstance(item, MessageView) and change.appended:
                self._text(item.step, change.appended)
            elif (
                isinstance(item, ToolCallView)
                and change.entered(ToolPhase.FINISHED)
                and item.status is ToolStatus.DENIED
            ):
                why = item.content.strip().splitlines()[0] if item.content.strip() else ""
                if not why.lower().startswith("denied"):
                    by = f" by {item.denied_by.value}" if item.denied_by is not None else ""
                    why = f"denied{by}" + (f": {why}" if why else "")
                self._say(f"{item.name}: {why}")
            elif isinstance(item, NoticeView):
                self._say(item.text if item.level == "info" else f"{item.level}: {item.text}")

    def _text(self, step: int, text: str) -> None:
        if self._step is not None and step != self._step and not self._at_line_start:
            self._out.write("\n")
        self._step = step
        self._out.write(replace_lone_surrogates(text))
        self._out.flush()
        self._at_line_start = text.endswith("\n")

    def end(self) -> None:
        """End the last line; print nothing when no text came."""
        if not self._at_line_start:
            self._out.write("\n")
            self._at_line_start = True

    def _say(self, line: str) -> None:
        if not self._at_line_start and self._out.isatty():  # both on one terminal
            self._out.write("\n")
            self._out.flush()
            self._at_line_start = True
        print(f"rawtrio: {replace_lone_surrogates(line)}", file=sys.stderr, flush=True)
