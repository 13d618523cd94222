"""What `rawtrio -p` prints: the events of its turn rendered one at a time in the chosen
format, and the exit code of the turn's end (the prompt and the notices before the turn:
`rawtrio.cli.headless_input`, re-exported here).

Shared by the run in this process (`rawtrio.cli.headless`, trio) and the run attached to a
host (`rawtrio.cli.attach`, a blocking socket loop), so both write the same bytes, the same
stderr lines and end with the same exit codes. `HeadlessOutput.render` takes one event and
never waits; the caller feeds it events until it says the turn ended, then calls `finish`.

Imports nothing heavy (no trio, no runtime, no configuration schema). Its event classes and
the transcript view are still ~100 ms of dataclass building: the attached client imports
this module in a thread while the host starts the session (`rawtrio.cli.attach`). Claude
Code's shapes (`rawtrio.cli.claude_output`) are loaded only by the formats that write them
(`json`, `stream-json`), not by `text` and `events`.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Protocol, TextIO

from rawtrio import events as ev
from rawtrio.cli.event_lines import (
    OUTCOME_EXIT,
    TextLines,
    denied_line,
    notice_line,
    outcome_exit,
)
from rawtrio.cli.headless_input import read_prompt, say_notice
from rawtrio.cli.signals import SignalLatch
from rawtrio.contracts import ToolStatus
from rawtrio.runtime.view import MessageView, NoticeView, ToolCallView, ToolPhase, TranscriptView
from rawtrio.unicode_safety import scrub_json

if TYPE_CHECKING:
    from rawtrio.cli.claude_output import ClaudeTurn, SessionFacts

__all__ = [
    "FORMATS",
    "OUTCOME_EXIT",
    "HeadlessOutput",
    "SessionTotals",
    "TextOutput",
    "read_prompt",
    "report",
    "say_notice",
]

#: `--output-format`: the answer text, Claude Code's result object, Claude Code's message
#: lines (`rawtrio.cli.claude_output`), rawtrio's own event lines (docs/contracts.md).
FORMATS = ("text", "json", "stream-json", "events")


class SessionTotals(Protocol):
    """A session's usage totals as `json` output reports them (`Session.usage`, or the
    host's `_rawtrio/session/usage` answer)."""

    @property
    def cost_usd(self) -> float | None: ...
    @property
    def context_tokens(self) -> int: ...
    @property
    def context_window(self) -> int | None: ...


def report(ended: ev.TurnEnded, latch: SignalLatch) -> int:
    """Say on stderr why a turn did not complete; return the exit code for its outcome."""
    return outcome_exit(ended.outcome, ended.reason, latch)


class HeadlessOutput:
    """Writes one turn's events in `fmt` (one of `FORMATS`) to `out`. `session_id` is the
    session's (Claude Code's lines carry it)."""

    def __init__(self, fmt: str, out: TextIO, session_id: str, turn_id: str) -> None:
        self.fmt = fmt
        self._out = out
        self._turn_id = turn_id
        self._claude: ClaudeTurn | None = None
        if fmt in ("json", "stream-json"):
            from rawtrio.cli.claude_output import ClaudeTurn  # only these formats need it

            self._claude = ClaudeTurn(session_id, turn_id)
        self._usage = {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        }
        self._cost: float | None = None  # this turn's, when the model has prices
        self._text = TextOutput(out)

    @property
    def needs_totals(self) -> bool:
        """Whether `finish` reports the session's totals (the `result` object does)."""
        return self.fmt in ("json", "stream-json")

    def start(self, facts: SessionFacts) -> None:
        """Before the session's first turn: the `system`/`init` line of `stream-json`."""
        if self.fmt == "stream-json":
            self._write(facts.init_message())

    def _write(self, obj: dict[str, object]) -> None:
        self._out.write(json.dumps(scrub_json(obj)) + "\n")
        self._out.flush()

    def render(self, event: ev.Event) -> ev.TurnEnded | None:
        """Write one event; return it when it is this turn's end (then call `finish`)."""
        if self.fmt == "events":
            self._write(ev.event_to_json(event))
        elif self.fmt == "text":
            self._text.render(event)
        else:
            assert self._claude is not None, "json and stream-json have their ClaudeTurn"
            for message in self._claude.messages(event):
                if self.fmt == "stream-json":
                    self._write(message)
            if isinstance(event, ev.Notice) and event.level != "info":
                # json, stream-json: stdout carries only Claude Code's objects, so waits a
                # person should know of ("retrying in 4 s: 529 overloaded, …") go to stderr
                # as they happen.
                print(f"rawtrio: {event.level}: {event.text}", file=sys.stderr, flush=True)
        if isinstance(event, ev.Usage) and event.turn_id == self._turn_id:
            for k in self._usage:
                self._usage[k] += getattr(event, k)
            if event.cost_usd is not None:
                self._cost = (self._cost or 0.0) + event.cost_usd
        if isinstance(event, ev.TurnEnded) and event.turn_id == self._turn_id:
            return event
        return None

    def finish(self, ended: ev.TurnEnded, totals: SessionTotals | None = None) -> None:
        """End the output after the turn's end: the last line of `text`, the result object
        of `json` and `stream-json` (`totals` are the session's, required then)."""
        if self.fmt == "text":
            self._text.end()
        elif self.fmt in ("json", "stream-json"):
            assert totals is not None, "the result object reports the session's totals"
            assert self._claude is not None, "json and stream-json have their ClaudeTurn"
            self._write(
                self._claude.result(
                    ended,
                    self._usage,
                    self._cost,
                    {
                        # Cost (null without configured prices), the context against the window.
                        "session_cost_usd": totals.cost_usd,
                        "context_tokens": totals.context_tokens,
                        "context_window": totals.context_window,
                    },
                )
            )
        self._out.flush()


class TextOutput:
    """`--output-format text`: the model's text on stdout, each step's on a line of its
    own; denied calls and notices on stderr, one line each (from the transcript view, laid
    out by `TextLines`, which the attached run's `TextFold` shares)."""

    def __init__(self, out: TextIO) -> None:
        self._lines = TextLines(out)
        self._view = TranscriptView(retain=False)

    def render(self, event: ev.Event) -> None:
        for change in self._view.apply(event):
            item = change.item
            if isinstance(item, MessageView) and change.appended:
                self._lines.text(item.step, change.appended)
            elif (
                isinstance(item, ToolCallView)
                and change.entered(ToolPhase.FINISHED)
                and item.status is ToolStatus.DENIED
            ):
                self._lines.say(denied_line(item.name, item.content, item.denied_by))
            elif isinstance(item, NoticeView):
                self._lines.say(notice_line(item.level, item.text))

    def end(self) -> None:
        """End the last line; print nothing when no text came."""
        self._lines.end()
