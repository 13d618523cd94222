"""The process the crash suite kills: `python -m stress.crash_child DB CWD WIRE BASE_URL`.

It creates a session in the SQLite store DB, runs the two turns of `SCRIPT` through the
real runtime, SDK and the parent's fake model server (at BASE_URL, speaking WIRE), and
says on stdout, one line at a time and unbuffered, what it has done — so the parent,
which SIGKILLs it at a random moment, knows what was durable before the kill:

- `ready <session id>` — the session exists; the turns start now;
- `begin <write>` — an awaited store write (`begin_turn`, `commit`, `mark_call_started`,
  `end_turn`) was called; one of these lines follows when it returned:
  `begun <turn id>`, `committed <JSON list of message rows>`, `started <call id>`,
  `ended <turn id> <outcome>`;
- `event <seq> <type>` — a display event was recorded (queued: it is durable once a
  write queued after it has returned);
- `done` — both turns ended; the process exits 0.

A line is written after what it reports, so a line the parent read is a fact; a kill
between the fact and its line only makes the parent's knowledge smaller.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, cast

import trio

from rawtrio.contracts import TurnOutcome
from rawtrio.events import Event
from rawtrio.messages import Message, ProviderKind
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.store import codec
from rawtrio.store.sqlite import SqliteStore
from rawtrio.tools.base import ToolSettings

RUNS_FILE: Final = "runs.txt"
PROMPTS: Final = ("crash-turn-one", "crash-turn-two")
#: Each call appends its tag to `RUNS_FILE` when it starts, then works a little while.
TAGS: Final = ("one", "two", "three")
TOOL_SETTINGS: Final = ToolSettings(sigterm_grace_s=0.2, bash_timeout_s=30)

_TEXT = (
    "Looking at the repository layout first, then running the two commands that were "
    "asked for, one after the other, and reading what they print before answering."
)


def _bash(tag: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": f"echo {tag} >> {RUNS_FILE}; sleep 0.1"}}


#: Two turns: the first with a batch of two calls, the second with one; every reply
#: streams in 8-character chunks 2 ms apart. Anything else (the follow-up) gets "ok".
#: The prompts must END the user text: after a kill the Anthropic adapter merges the cut
#: turn's prompt and the follow-up into one user message, and the fake server matches on
#: their joined text (a substring rule would replay turn one for the follow-up).
SCRIPT: Final[dict[str, Any]] = {
    "rules": [
        {
            "match": f"re:{PROMPTS[0]}$",
            "replies": [
                {"text": _TEXT, "delay_ms": 2, "tool_calls": [_bash("one"), _bash("two")]},
                {"text": "Both commands ran; " + _TEXT, "delay_ms": 2},
            ],
        },
        {
            "match": f"re:{PROMPTS[1]}$",
            "replies": [
                {"text": _TEXT[:80], "delay_ms": 2, "tool_calls": [_bash("three")]},
                {"text": "Done. " + _TEXT[:60], "delay_ms": 2},
            ],
        },
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


def session_options(cwd: Path, wire: ProviderKind, base_url: str) -> SessionOptions:
    provider = ProviderSettings(
        kind=wire, model="test-model", api_key="test-key", base_url=base_url, max_retries=0
    )
    return SessionOptions(cwd=cwd, provider=provider, tools=TOOL_SETTINGS, max_steps=8)


def say(line: str) -> None:
    """One whole line on stdout, unbuffered (a single write: never torn by the kill)."""
    data = (line + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


class ReportingStore(SqliteStore):
    """A `SqliteStore` that says on stdout what it has made durable."""

    async def begin_turn(self, session_id: str, turn_id: str, request_id: str | None) -> None:
        say("begin begin_turn")
        await super().begin_turn(session_id, turn_id, request_id)
        say(f"begun {turn_id}")

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        rows = [codec.message_to_row(m) for m in messages]
        say("begin commit")
        await super().commit(session_id, turn_id, messages)
        say(f"committed {json.dumps(rows)}")

    async def mark_call_started(self, session_id: str, turn_id: str, call_id: str) -> None:
        say("begin mark_call_started")
        await super().mark_call_started(session_id, turn_id, call_id)
        say(f"started {call_id}")

    async def end_turn(
        self, session_id: str, turn_id: str, outcome: TurnOutcome, reason: str
    ) -> None:
        say("begin end_turn")
        await super().end_turn(session_id, turn_id, outcome, reason)
        say(f"ended {turn_id} {outcome.value}")

    def record_event(self, event: Event) -> None:
        super().record_event(event)
        say(f"event {event.seq} {event.type}")


async def run(db: Path, cwd: Path, wire: ProviderKind, base_url: str) -> None:
    store = ReportingStore(db)
    async with store, open_runtime(store, retention_days=0) as runtime:
        session = await runtime.create_session(session_options(cwd, wire, base_url))
        say(f"ready {session.id}")
        for prompt in PROMPTS:
            await session.run_turn(prompt)
    say("done")


def main(argv: Sequence[str]) -> None:
    db, cwd, wire, base_url = argv
    if wire not in ("anthropic", "openai-chat", "openai-responses"):
        raise SystemExit(f"unknown wire {wire}")
    trio.run(run, Path(db), Path(cwd), cast(ProviderKind, wire), base_url)


if __name__ == "__main__":
    main(sys.argv[1:])
