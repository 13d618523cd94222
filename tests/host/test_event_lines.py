"""The attached client's `text` and `events` output, written from the events' JSON objects
(`rawtrio.cli.event_lines`), is byte for byte what the event classes rendered by
`HeadlessOutput` give (what a local run prints, and what the attached client printed
before): the same events through both, stdout and stderr compared, for hand-written turns
and for seeded random event sequences over a few tool calls."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rawtrio import events as ev
from rawtrio.cli.event_lines import EVENT_TYPES, AttachedLines, BadEvent, outcome_exit
from rawtrio.cli.headless_output import HeadlessOutput, report
from rawtrio.cli.signals import SignalLatch
from rawtrio.contracts import DeniedBy, ToolStatus, TurnOutcome
from rawtrio.store.codec import event_from_json
from tests.test_attach_imports import NOT_ATTACHED, RENDERER, loaded_after

SID = "s-1"
TURN = "t-1"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def wire(event: ev.Event) -> dict[str, Any]:
    """The object the client reads: the host's `event_to_json`, through JSON text."""
    return dict(json.loads(json.dumps(ev.event_to_json(event))))


def by_classes(fmt: str, objects: list[dict[str, Any]], out: io.StringIO) -> int | None:
    """The reference: each object decoded by the codec and rendered by `HeadlessOutput`."""
    output = HeadlessOutput(fmt, out, SID, TURN)
    for data in objects:
        event = event_from_json(data)
        if event is not None and (ended := output.render(event)) is not None:
            output.finish(ended)
            return report(ended, SignalLatch())
    return None


def by_json(fmt: str, objects: list[dict[str, Any]], out: io.StringIO) -> int | None:
    output = AttachedLines(fmt, out, TURN)
    for data in objects:
        if (ended := output.render(data)) is not None:
            output.finish()
            return outcome_exit(*ended, SignalLatch())
    return None


def assert_same(
    capsys: pytest.CaptureFixture[str],
    events: list[ev.Event | dict[str, Any]],
    fmt: str,
    tty: bool = False,
) -> None:
    objects = [e if isinstance(e, dict) else wire(e) for e in events]
    make: Callable[[], io.StringIO] = Tty if tty else io.StringIO
    ref_out, new_out = make(), make()
    ref_code = by_classes(fmt, objects, ref_out)
    ref_err = capsys.readouterr().err
    new_code = by_json(fmt, objects, new_out)
    new_err = capsys.readouterr().err
    assert (new_out.getvalue(), new_err, new_code) == (ref_out.getvalue(), ref_err, ref_code)


class Turn:
    """Events of one turn with increasing `seq` and `ts`."""

    def __init__(self, turn_id: str = TURN) -> None:
        self.turn_id = turn_id
        self.seq = 0

    def __call__(self, cls: type[ev.Event], **fields: Any) -> ev.Event:
        self.seq += 1
        return cls(
            session_id=SID, seq=self.seq, turn_id=self.turn_id, ts=1000.0 + self.seq, **fields
        )


def finished(
    t: Turn, call: str, name: str, status: ToolStatus, content: str, **more: Any
) -> ev.Event:
    return t(
        ev.ToolCallFinished,
        call_id=call,
        name=name,
        status=status,
        content=content,
        started=False,
        **more,
    )


def ended(t: Turn, outcome: TurnOutcome = TurnOutcome.COMPLETED, reason: str = "done") -> ev.Event:
    return t(ev.TurnEnded, outcome=outcome, reason=reason, steps=2)


def hand_written() -> Iterator[tuple[str, list[ev.Event | dict[str, Any]]]]:
    t = Turn()
    yield (
        "two steps around a tool call",
        [
            t(ev.UserMessageCommitted, text="use a tool"),
            t(ev.StepStarted, step=1, model="m"),
            t(ev.TextDelta, step=1, text="Let me look"),
            t(ev.ToolCallAnnounced, step=1, call_id="c1", name="bash"),
            t(
                ev.AssistantMessageCommitted,
                step=1,
                text="Let me look",
                tool_calls=(("c1", "bash", {"command": "ls"}),),
            ),
            t(
                ev.ToolCallStarted,
                call_id="c1",
                name="bash",
                tool_id="bash",
                arguments={"command": "ls"},
            ),
            t(ev.ToolOutputDelta, call_id="c1", text="a\n"),
            finished(t, "c1", "bash", ToolStatus.OK, "a\n"),
            t(
                ev.Usage,
                step=1,
                input_tokens=3,
                output_tokens=4,
                cache_read_tokens=0,
                cache_write_tokens=0,
            ),
            t(ev.TextDelta, step=2, text=""),
            t(ev.TextDelta, step=2, text="Found a.\n"),
            t(ev.TextDelta, step=3, text="And \ud800 more"),
            ended(t),
        ],
    )
    t = Turn()
    yield (
        "calls denied, notices, a cut stream",
        [
            t(ev.Notice, level="info", text="retrying"),
            t(ev.Notice, level="warning", text="slow \udfff"),
            t(ev.TextDelta, step=1, text="partial"),
            t(
                ev.PermissionRequested,
                request_id="r1",
                call_id="c1",
                tool_id="write_file",
                summary="w",
            ),
            t(ev.PermissionAnswered, request_id="r1", call_id="c1", decision="deny"),
            finished(t, "c1", "Write", ToolStatus.DENIED, "", denied_by=DeniedBy.USER),
            finished(t, "c1", "Write", ToolStatus.DENIED, "again"),  # already finished: silent
            finished(
                t,
                "c2",
                "bash",
                ToolStatus.DENIED,
                "the rule says no\nsecond line",
                denied_by=DeniedBy.RULE,
            ),
            finished(
                t, "c3", "bash", ToolStatus.DENIED, "Denied by hook x", denied_by=DeniedBy.HOOK
            ),
            finished(t, "c4", "bash", ToolStatus.DENIED, "   "),
            t(ev.ToolCallAnnounced, step=1, call_id="c5", name="grep"),
            t(ev.ToolOutputDelta, call_id="c6", text="x"),
            t(ev.StreamInterrupted, step=1, partial_text="partial", reason="cut"),
            finished(t, "c5", "Grep", ToolStatus.DENIED, "no"),  # dropped, shown anew by its name
            finished(t, "c6", "bash", ToolStatus.DENIED, "no"),  # kept: named "tool"
            t(ev.SubagentEvent, call_id="c7", child_session_id="k", event={"type": "usage"}),
            t(ev.SubagentEvent, call_id="c7", child_session_id="k", event={"type": "turn_ended"}),
            finished(t, "c7", "task", ToolStatus.DENIED, "no"),
            t(
                ev.SubagentEvent,
                call_id="c8",
                child_session_id="k",
                event={"type": "assistant_message", "text": ""},
            ),
            finished(t, "c8", "Task", ToolStatus.DENIED, "no"),  # nothing shown: named here
            t(ev.ToolCallStarted, call_id="c7", name="task", tool_id="task"),
            finished(t, "c7", "task", ToolStatus.DENIED, "once more"),
            {"v": 1, "seq": 99, "type": "from_a_newer_host", "session_id": SID, "turn_id": TURN},
            t(ev.TextDelta, step=2, text="after"),
            ended(t, TurnOutcome.CANCELLED, "received SIGINT"),
        ],
    )
    t = Turn()
    other = Turn("t-0")
    yield (
        "another turn's end in between",
        [
            t(ev.ToolCallAnnounced, step=1, call_id="c1", name="bash"),
            other(ev.TurnEnded, outcome=TurnOutcome.COMPLETED, reason="", steps=1),
            finished(t, "c1", "Bash", ToolStatus.DENIED, "no"),
            t(ev.TextDelta, step=1, text="x"),
            ended(t, TurnOutcome.ERROR, "model error: 500"),
        ],
    )
    t = Turn()
    yield "max steps, no text", [ended(t, TurnOutcome.MAX_STEPS, "20 steps")]


CASES = list(hand_written())


@pytest.mark.parametrize("fmt", ["text", "events"])
@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("case", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_hand_written_turns_print_the_same_bytes(
    capsys: pytest.CaptureFixture[str], case: list[ev.Event | dict[str, Any]], fmt: str, tty: bool
) -> None:
    assert_same(capsys, case, fmt, tty)


#: How a live turn ends (`interrupted` is a store's repair of a crashed one).
LIVE_OUTCOMES = [o for o in TurnOutcome if o is not TurnOutcome.INTERRUPTED]


def random_turn(rng: random.Random) -> list[ev.Event | dict[str, Any]]:
    t = Turn()
    calls = ["c1", "c2", "c3"]
    names = ["bash", "Bash", "grep", "task"]
    makers: list[Callable[[], ev.Event]] = [
        lambda: t(ev.TextDelta, step=rng.randint(1, 3), text=rng.choice(["", "a", "b\n", "c\nd"])),
        lambda: t(ev.Notice, level=rng.choice(["info", "warning", "error"]), text="n"),
        lambda: t(ev.ToolCallAnnounced, step=1, call_id=rng.choice(calls), name=rng.choice(names)),
        lambda: t(
            ev.AssistantMessageCommitted,
            step=1,
            text=rng.choice(["", "m"]),
            tool_calls=tuple(
                (c, rng.choice(names), None) for c in rng.sample(calls, rng.randint(0, 2))
            ),
        ),
        lambda: t(ev.StreamInterrupted, step=1, partial_text="p", reason="cut"),
        lambda: t(
            ev.ToolCallStarted, call_id=rng.choice(calls), name=rng.choice(names), tool_id="bash"
        ),
        lambda: t(ev.ToolOutputDelta, call_id=rng.choice(calls), text="o"),
        lambda: t(
            ev.SubagentEvent,
            call_id=rng.choice(calls),
            child_session_id="k",
            event=rng.choice(
                [
                    {"type": "usage"},
                    {"type": "assistant_message", "text": ""},
                    {"type": "assistant_message", "text": "t"},
                    {"type": "tool_call_finished", "name": "x", "status": "ok"},
                ]
            ),
        ),
        lambda: t(
            ev.PermissionRequested,
            request_id="r",
            call_id=rng.choice(calls),
            tool_id=rng.choice(names),
        ),
        lambda: t(
            ev.PermissionAnswered, request_id="r", call_id=rng.choice(calls), decision="deny"
        ),
        lambda: finished(
            t,
            rng.choice(calls),
            rng.choice(names),
            rng.choice([ToolStatus.DENIED, ToolStatus.DENIED, ToolStatus.OK, ToolStatus.ERROR]),
            rng.choice(["", "why", "denied: x"]),
            denied_by=rng.choice([None, DeniedBy.RULE, DeniedBy.USER]),
        ),
        lambda: Turn("t-0")(ev.TurnEnded, outcome=TurnOutcome.COMPLETED, reason="", steps=1),
    ]
    events: list[ev.Event | dict[str, Any]] = [
        rng.choice(makers)() for _ in range(rng.randint(1, 30))
    ]
    events.append(ended(t, rng.choice(LIVE_OUTCOMES), "r"))
    return events


@pytest.mark.parametrize("fmt", ["text", "events"])
def test_random_turns_print_the_same_bytes(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    for seed in range(300):
        assert_same(capsys, random_turn(random.Random(seed)), fmt, tty=seed % 2 == 1)


def test_every_event_type_is_known() -> None:
    assert set(EVENT_TYPES) == set(ev.EVENT_TYPES)


@pytest.mark.parametrize(
    "data",
    [
        {"type": "text_delta", "step": "1", "text": "x"},
        {
            "type": "tool_call_finished",
            "call_id": "c",
            "name": "n",
            "status": "nope",
            "content": "",
        },
        {
            "type": "tool_call_finished",
            "call_id": "c",
            "name": "n",
            "status": "denied",
            "content": 3,
        },
        {"type": "assistant_message", "tool_calls": [["c", "n"]]},
        {"type": "turn_ended", "turn_id": TURN, "outcome": "exploded", "reason": ""},
    ],
)
def test_an_event_that_does_not_decode_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(BadEvent):
        AttachedLines("text", io.StringIO(), TURN).render(data)


def test_text_and_events_output_attached_load_no_event_class(tmp_path: Path) -> None:
    """`text` (the default) and `events` are written from the host's JSON objects: the
    attached run never loads the event classes, the transcript view or the codec
    (`RendererImport` is for `json` and `stream-json` only)."""
    code = (
        "import io\n"
        "import rawtrio.cli.entry, rawtrio.cli.main, rawtrio.cli.attach, rawtrio.logs\n"
        "args = rawtrio.cli.main.build_parser().parse_args(['-p', 'hi', '--yes'])\n"
        "rawtrio.logs.log_to_stream(sys.stderr)\n"
        "rawtrio.cli.attach.attach_mode(args)\n"
        "rawtrio.cli.attach.state_dir()\n"
        "rawtrio.cli.attach.session_flags(args), rawtrio.cli.attach.client_env()\n"
        "import rawtrio.host.client, rawtrio.host.paths\n"
        "from rawtrio.cli.event_lines import AttachedLines\n"
        "for fmt in ('text', 'events'):\n"
        "    out = AttachedLines(fmt, io.StringIO(), 't')\n"
        "    out.render({'type': 'text_delta', 'step': 1, 'text': 'hi'})\n"
        "    out.render({'type': 'tool_call_finished', 'call_id': 'c', 'name': 'bash',\n"
        "                'status': 'denied', 'content': 'no', 'denied_by': 'rule'})\n"
        "    out.render({'type': 'turn_ended', 'turn_id': 't', 'outcome': 'completed',\n"
        "                'reason': '', 'steps': 1})\n"
        "    out.finish()\n"
    )
    # Nor `dataclasses` (with `inspect`, `ast`, `dis`, `tokenize`): the client's few
    # records (`HostInfo`, `HostPaths`, `Registration`, `HostSettings`, `Totals`) are
    # named tuples.
    assert loaded_after(code, tmp_path, (*NOT_ATTACHED, *RENDERER, "dataclasses")) == []
