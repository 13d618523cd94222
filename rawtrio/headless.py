"""Headless runs: `rawtrio -p PROMPT` runs one turn and prints the answer.

SIGINT and SIGTERM (to rawtrio's pid or its process group; tool processes run in their
own groups) cancel the turn through the same path as every other front end: the turn
records its results and outcome, children are reaped, and the exit code says which
signal it was (130, 143).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any, TextIO

import trio

from rawtrio import events as ev
from rawtrio.contracts import ExitCode, TurnOutcome
from rawtrio.errors import NoCredentials, RawtrioError, UsageError
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.settings import session_options
from rawtrio.store.memory import MemoryStore

OUTCOME_EXIT = {
    TurnOutcome.COMPLETED: ExitCode.COMPLETED,
    TurnOutcome.MAX_STEPS: ExitCode.MAX_STEPS,
    TurnOutcome.ERROR: ExitCode.ERROR,
}
SIGNAL_EXIT = {signal.SIGINT: ExitCode.SIGINT, signal.SIGTERM: ExitCode.SIGTERM}


def main(args: argparse.Namespace) -> int:
    try:
        prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
        if not prompt.strip():
            raise UsageError("-p: the prompt is empty")
        options = session_options(args)
    except NoCredentials as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.NO_CREDENTIALS
    except UsageError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    return trio.run(run, prompt, options, args.output_format)


async def run(prompt: str, options: SessionOptions, output_format: str) -> int:
    received: list[signal.Signals] = []
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_runtime(MemoryStore()) as runtime:
            session = await runtime.create_session(options)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_cancel_on_signal, signals, session, received)
                try:
                    ended = await _run_turn(session, prompt, output_format, sys.stdout)
                except RawtrioError as exc:
                    print(f"rawtrio: {exc}", file=sys.stderr)
                    return ExitCode.ERROR
                finally:
                    nursery.cancel_scope.cancel(reason="turn finished")
            if ended.outcome is TurnOutcome.CANCELLED:
                return SIGNAL_EXIT.get(received[0], ExitCode.SIGINT) if received else 130
            if ended.outcome is TurnOutcome.ERROR:
                print(f"rawtrio: error: {ended.reason}", file=sys.stderr)
            return OUTCOME_EXIT[ended.outcome]


async def _cancel_on_signal(signals: Any, session: Session, received: list[signal.Signals]) -> None:
    async for signum in signals:
        sig = signal.Signals(signum)
        received.append(sig)
        session.cancel(f"received {sig.name}")


async def _run_turn(session: Session, prompt: str, fmt: str, out: TextIO) -> ev.TurnEnded:
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}
    with session.subscribe() as sub:
        turn_id = await session.submit(prompt)
        async for event in sub:
            if fmt == "stream-json":
                out.write(json.dumps(ev.event_to_json(event)) + "\n")
                out.flush()
            elif fmt == "text" and isinstance(event, ev.TextDelta):
                out.write(event.text)
                out.flush()
            if isinstance(event, ev.Usage):
                for k in usage:
                    usage[k] += getattr(event, k)
            if isinstance(event, ev.TurnEnded) and event.turn_id == turn_id:
                if fmt == "text":
                    out.write("\n")
                elif fmt == "json":
                    out.write(
                        json.dumps(
                            {
                                "v": 1,
                                "session_id": session.id,
                                "turn_id": turn_id,
                                "outcome": event.outcome.value,
                                "reason": event.reason,
                                "steps": event.steps,
                                "result": event.final_text,
                                "usage": usage,
                            }
                        )
                        + "\n"
                    )
                out.flush()
                return event
    # Cut off as a lagging subscriber (cannot happen with the default buffer for one
    # turn, but never hang): the turn's own record is authoritative.
    return await session.wait_turn(turn_id)
