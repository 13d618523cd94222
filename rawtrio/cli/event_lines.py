"""`rawtrio -p`'s `text` and `events` output written straight from the events' JSON
objects (docs/contracts.md), and the exit code of a turn's end.

The attached client (`rawtrio.cli.attach`) receives each event as the JSON object the host
made of it (`rawtrio.events.event_to_json`). For `--output-format events` it writes that
object back (scrubbed as `HeadlessOutput` scrubs it: the same bytes as decoding it into the
event class and encoding it again); for `text` it keeps the little of the transcript view
that `text` shows (`TextFold`: each step's text deltas, calls denied, notices). So the
attached run loads neither the event classes, nor the transcript view, nor the event codec
(~45 frozen dataclasses, most of the client's own CPU). `json` and `stream-json` still
render the event classes (`rawtrio.cli.headless_output`).

`TextLines` (how text and the stderr lines are laid out) and `outcome_exit` are shared with
the local run's `HeadlessOutput`, so both write the same bytes and exit the same way;
`tests/host/test_event_lines.py` feeds the same events to both renderers and compares
their output byte for byte.
"""

from __future__ import annotations

import enum
import json
import sys
from typing import Any, Final, TextIO, TypeVar

from rawtrio.cli.signals import SignalLatch
from rawtrio.contracts import DeniedBy, ExitCode, ToolStatus, TurnOutcome
from rawtrio.unicode_safety import replace_lone_surrogates, scrub_json

#: The `type` of every event this version knows (`rawtrio.events.EVENT_TYPES`, compared in
#: a test); an event of another type (a newer host's) is not rendered, as the codec skips it.
EVENT_TYPES: Final = frozenset(
    {
        "user_message",
        "step_started",
        "text_delta",
        "thinking_delta",
        "tool_call_announced",
        "assistant_message",
        "stream_interrupted",
        "tool_call_started",
        "tool_output_delta",
        "tool_call_finished",
        "permission_requested",
        "permission_answered",
        "usage",
        "compaction_started",
        "compaction_ended",
        "mode_changed",
        "model_changed",
        "notice",
        "hook_ran",
        "plan_updated",
        "subagent_started",
        "subagent_event",
        "subagent_ended",
        "turn_ended",
    }
)

OUTCOME_EXIT: Final = {
    TurnOutcome.COMPLETED: ExitCode.COMPLETED,
    TurnOutcome.MAX_STEPS: ExitCode.MAX_STEPS,
    TurnOutcome.ERROR: ExitCode.ERROR,
}


class BadEvent(ValueError):
    """An event object whose fields are not what its type says."""


def outcome_exit(outcome: TurnOutcome, reason: str, latch: SignalLatch) -> int:
    """Say on stderr why a turn did not complete; return the exit code for its outcome."""
    if outcome is TurnOutcome.COMPLETED:
        return ExitCode.COMPLETED
    if outcome is TurnOutcome.CANCELLED:
        print(f"rawtrio: cancelled ({reason})", file=sys.stderr)
        return latch.exit_code or ExitCode.SIGINT
    label = "error" if outcome is TurnOutcome.ERROR else "stopped"
    print(f"rawtrio: {label}: {reason}", file=sys.stderr)
    return OUTCOME_EXIT[outcome]


def denied_line(name: str, content: str, denied_by: DeniedBy | None) -> str:
    """The stderr line of a denied call: `bash: denied by rule: …`."""
    why = content.strip().splitlines()[0] if content.strip() else ""
    if not why.lower().startswith("denied"):
        by = f" by {denied_by.value}" if denied_by is not None else ""
        why = f"denied{by}" + (f": {why}" if why else "")
    return f"{name}: {why}"


def notice_line(level: str, text: str) -> str:
    return text if level == "info" else f"{level}: {text}"


class TextLines:
    """`--output-format text`'s layout: the model's text on stdout, each step's on a line of
    its own; the lines about the turn (denied calls, notices) on stderr."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._step: int | None = None  # the step whose text was written last
        self._at_line_start = True

    def text(self, step: int, text: str) -> None:
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

    def say(self, line: str) -> None:
        if not self._at_line_start and self._out.isatty():  # both on one terminal
            self._out.write("\n")
            self._out.flush()
            self._at_line_start = True
        print(f"rawtrio: {replace_lone_surrogates(line)}", file=sys.stderr, flush=True)


class _Call:
    """What the transcript view's tool-call item holds that `text` output depends on."""

    __slots__ = ("committed", "finished", "name")

    def __init__(self, name: str) -> None:
        self.name = name  # the name of the event that first showed the call
        #: In the finished phase (a start or a permission request takes it out again).
        self.finished = False
        self.committed = False


class TextFold:
    """`text` output from the events' JSON objects: what `rawtrio.runtime.view.
    TranscriptView` (with `retain=False`) reports to `HeadlessOutput`'s text renderer — a
    text delta's text, a call entering its finished phase denied, a notice — keeping only
    the tool calls' names, phases and whether they were committed."""

    def __init__(self, out: TextIO) -> None:
        self.lines = TextLines(out)
        self._calls: dict[str, _Call] = {}
        self._open: dict[str, None] = {}  # calls not finished, in the order they appeared

    def apply(self, data: dict[str, Any]) -> None:
        kind = data["type"]
        if kind == "text_delta":
            text = _str(data, "text")
            if text:
                self.lines.text(_int(data, "step"), text)
        elif kind == "notice":
            self.lines.say(notice_line(_str(data, "level"), _str(data, "text")))
        elif kind == "tool_call_announced":
            self._call(_str(data, "call_id"), _str(data, "name"))
        elif kind == "tool_call_started":
            self._call(_str(data, "call_id"), _str(data, "name")).finished = False
        elif kind == "tool_output_delta":
            self._call(_str(data, "call_id"), "tool")
        elif kind == "subagent_event":
            if _subagent_shows(data.get("event")):
                self._call(_str(data, "call_id"), "tool")
        elif kind == "permission_requested":
            self._call(_str(data, "call_id"), _str(data, "tool_id")).finished = False
        elif kind == "assistant_message":
            self._committed(data.get("tool_calls", []))
        elif kind == "stream_interrupted":
            for call_id in list(self._open):
                if not self._calls[call_id].committed:  # never committed: never runs
                    del self._calls[call_id], self._open[call_id]
        elif kind == "tool_call_finished":
            self._finished(data)
        elif kind == "turn_ended":
            # Calls left open are closed (cancelled, not denied), and with `retain=False`
            # every settled call is forgotten.
            self._open.clear()
            self._calls.clear()

    def _call(self, call_id: str, name: str) -> _Call:
        call = self._calls.get(call_id)
        if call is None:
            call = self._calls[call_id] = _Call(name)
            self._open[call_id] = None
        return call

    def _committed(self, tool_calls: Any) -> None:
        if not isinstance(tool_calls, list):
            raise BadEvent("assistant_message: tool_calls is not a list")
        for entry in tool_calls:
            if not (isinstance(entry, list) and len(entry) == 3):
                raise BadEvent("assistant_message: a tool call is not [id, name, arguments]")
            call_id, name, _ = entry
            if not (isinstance(call_id, str) and isinstance(name, str)):
                raise BadEvent("assistant_message: a tool call's id or name is not a string")
            self._call(call_id, name).committed = True

    def _finished(self, data: dict[str, Any]) -> None:
        status = _enum(ToolStatus, data.get("status"), "status")
        denied_by = data.get("denied_by")
        by = None if denied_by is None else _enum(DeniedBy, denied_by, "denied_by")
        content = _str(data, "content")
        call = self._call(_str(data, "call_id"), _str(data, "name"))
        self._open.pop(_str(data, "call_id"), None)
        if call.finished:
            return
        call.finished = True
        if status is ToolStatus.DENIED:
            self.lines.say(denied_line(call.name, content, by))


class AttachedLines:
    """`text` or `events` output of one turn from the events' JSON objects, for the
    attached run (the same interface as `HeadlessOutput` for these formats)."""

    def __init__(self, fmt: str, out: TextIO, turn_id: str) -> None:
        assert fmt in ("text", "events"), fmt
        self.fmt = fmt
        self._out = out
        self._turn_id = turn_id
        self._fold = TextFold(out) if fmt == "text" else None

    def render(self, data: dict[str, Any]) -> tuple[TurnOutcome, str] | None:
        """Write one event; return its outcome and reason when it is this turn's end.
        `BadEvent` when it does not decode; an event of an unknown type is skipped."""
        kind = data.get("type")
        if kind not in EVENT_TYPES:
            return None
        if self._fold is not None:
            self._fold.apply(data)
        else:
            self._out.write(json.dumps(scrub_json(data)) + "\n")
            self._out.flush()
        if kind == "turn_ended" and data.get("turn_id") == self._turn_id:
            return _enum(TurnOutcome, data.get("outcome"), "outcome"), _str(data, "reason")
        return None

    def finish(self) -> None:
        if self._fold is not None:
            self._fold.lines.end()
        self._out.flush()


def _subagent_shows(child: Any) -> bool:
    """Whether a child's event adds a line to its `task` call (`rawtrio.runtime.view.
    subagent_line` is not empty)."""
    if not isinstance(child, dict):
        return False
    kind = child.get("type")
    if kind == "assistant_message":
        return bool(child.get("text"))
    return kind in ("tool_call_started", "tool_call_finished", "turn_ended")


def _str(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise BadEvent(f"{data.get('type')}: {name} is not a string")
    return value


def _int(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadEvent(f"{data.get('type')}: {name} is not an integer")
    return value


E = TypeVar("E", bound=enum.StrEnum)


def _enum(cls: type[E], value: Any, name: str) -> E:
    try:
        return cls(value)
    except ValueError:
        raise BadEvent(f"{name}: {value!r} is not one of {[m.value for m in cls]}") from None
