"""The turn contract (docs/contracts.md) end to end: real SDKs against the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import AssistantMessage, ProviderKind, ToolResult, UserMessage, check_pairing
from tests.conftest import session_on

BASH_THEN_DONE = {
    "rules": [
        {
            "match": "run it",
            "replies": [
                {
                    "text": "Running.",
                    "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}],
                },
                {"text": "It printed hi."},
            ],
        },
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


async def collect(sub: object, until_turn: str | None = None) -> list[ev.Event]:
    out: list[ev.Event] = []
    async for event in sub:  # type: ignore[attr-defined]
        out.append(event)
        if isinstance(event, ev.TurnEnded):
            break
    return out


async def test_text_turn_completes_with_one_terminal_event(
    wire: ProviderKind, tmp_path: Path
) -> None:
    scenario = {"rules": [{"match": "hello", "replies": [{"text": "Hi there, friend."}]}]}
    async with session_on(scenario, wire, tmp_path) as (session, server, _):
        with session.subscribe() as sub:
            ended = await session.run_turn("hello")
            events = await collect(sub)
    assert ended.outcome is TurnOutcome.COMPLETED
    assert ended.final_text == "Hi there, friend."
    assert [e for e in events if isinstance(e, ev.TurnEnded)] == [ended]
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "Hi there, friend."
    seqs = [e.seq for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert isinstance(session.context[0], UserMessage)
    assert isinstance(session.context[1], AssistantMessage)
    assert all(r.status == 200 for r in server.requests)


async def test_tool_call_runs_and_next_request_is_accepted(
    wire: ProviderKind, tmp_path: Path
) -> None:
    async with session_on(BASH_THEN_DONE, wire, tmp_path) as (session, server, _):
        with session.subscribe() as sub:
            ended = await session.run_turn("run it")
            events = await collect(sub)
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert ended.final_text == "It printed hi."
    finished = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert len(finished) == 1
    assert finished[0].status is ToolStatus.OK
    assert "hi" in finished[0].content
    types = [e.type for e in events]
    assert (
        types.index("tool_call_started")
        < types.index("tool_output_delta")
        < types.index("tool_call_finished")
    )
    assert check_pairing(session.context) == []
    assert [r.status for r in server.requests] == [200, 200]


async def test_cancel_during_stream_commits_nothing(wire: ProviderKind, tmp_path: Path) -> None:
    scenario = {
        "rules": [
            {"match": "again", "replies": [{"text": "fine"}]},
            {
                "match": "slow",
                "replies": [{"text": "partial words " * 10, "chunk": 4, "stall_after": 6}],
            },
        ]
    }
    async with session_on(scenario, wire, tmp_path) as (session, server, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("slow")
            async for event in sub:
                if isinstance(event, ev.TextDelta):
                    session.cancel("test cancel")
                    break
            ended = await session.wait_turn(turn_id)
            events = await collect(sub)
        assert ended.outcome is TurnOutcome.CANCELLED
        assert ended.reason == "test cancel"
        interrupted = [e for e in events if isinstance(e, ev.StreamInterrupted)]
        assert len(interrupted) == 1
        assert interrupted[0].partial_text
        assert [type(m) for m in session.context] == [UserMessage]
        with trio.fail_after(10):
            await server.wait_for_disconnect()
        again = await session.run_turn("again")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason
        last_user = session.context[-2]
        assert isinstance(last_user, UserMessage)
        assert "cancelled" in last_user.text
        assert "cut off while streaming" in last_user.text
        assert check_pairing(session.context) == []


async def test_cancel_while_tool_runs_kills_its_process_group(
    wire: ProviderKind, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    command = f"sleep 60 & echo $! > {pidfile}; echo started; wait"
    scenario = {
        "rules": [
            {"match": "after", "replies": [{"text": "ok"}]},
            {
                "match": "long",
                "replies": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}],
            },
        ]
    }
    async with session_on(scenario, wire, tmp_path) as (session, _server, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("long")
            async for event in sub:
                if isinstance(event, ev.ToolOutputDelta) and "started" in event.text:
                    session.cancel("test cancel")
                    break
            ended = await session.wait_turn(turn_id)
            events = await collect(sub)
        assert ended.outcome is TurnOutcome.CANCELLED
        finished = [e for e in events if isinstance(e, ev.ToolCallFinished)]
        assert len(finished) == 1
        assert finished[0].status is ToolStatus.CANCELLED
        assert finished[0].started is True
        assert "started" in finished[0].content  # partial output is kept (I5)
        grandchild = int(pidfile.read_text())
        assert not _alive(grandchild)
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason
        assert check_pairing(session.context) == []


async def test_tool_call_still_arriving_never_runs(wire: ProviderKind, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    scenario = {
        "rules": [
            {"match": "after", "replies": [{"text": "ok"}]},
            {
                "match": "late",
                "replies": [
                    {
                        "text": "Let me run it",
                        "tool_calls": [
                            {"name": "bash", "arguments": {"command": f"touch {marker}"}}
                        ],
                        "chunk": 3,
                        "stall_after": 16,
                    }
                ],
            },
        ]
    }
    async with session_on(scenario, wire, tmp_path) as (session, _server, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("late")
            async for event in sub:
                if isinstance(event, ev.ToolCallAnnounced):
                    session.cancel("test cancel")
                    break
            ended = await session.wait_turn(turn_id)
            events = await collect(sub)
        assert ended.outcome is TurnOutcome.CANCELLED
        assert not any(isinstance(e, ev.ToolCallStarted) for e in events)
        assert not marker.exists()
        assert [type(m) for m in session.context] == [UserMessage]
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason


async def test_cancel_between_steps_keeps_results(wire: ProviderKind, tmp_path: Path) -> None:
    scenario = {
        "rules": [
            {"match": "after", "replies": [{"text": "ok"}]},
            {
                "match": "two",
                "replies": [
                    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]},
                    {"text": "never seen", "stall_after": 0},
                ],
            },
        ]
    }
    async with session_on(scenario, wire, tmp_path) as (session, _server, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("two")
            async for event in sub:
                if isinstance(event, ev.StepStarted) and event.step == 2:
                    session.cancel("test cancel")
                    break
            ended = await session.wait_turn(turn_id)
        assert ended.outcome is TurnOutcome.CANCELLED
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in results] == [ToolStatus.OK]
        assert check_pairing(session.context) == []
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason


async def test_max_steps_gives_not_run_results(wire: ProviderKind, tmp_path: Path) -> None:
    async with session_on(BASH_THEN_DONE, wire, tmp_path, max_steps=1) as (session, _s, _):
        ended = await session.run_turn("run it")
        assert ended.outcome is TurnOutcome.MAX_STEPS
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in results] == [ToolStatus.NOT_RUN]
        again = await session.run_turn("anything")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason


@pytest.mark.parametrize(
    ("call", "status"),
    [
        ({"name": "no_such_tool", "arguments": {}}, ToolStatus.UNKNOWN_TOOL),
        ({"name": "bash", "arguments": {"command": 42}}, ToolStatus.INVALID_ARGUMENTS),
        ({"name": "bash", "raw_arguments": '{"command": "echo'}, ToolStatus.INVALID_ARGUMENTS),
    ],
)
async def test_bad_tool_calls_become_results_the_model_reads(
    wire: ProviderKind, tmp_path: Path, call: dict[str, object], status: ToolStatus
) -> None:
    scenario = {
        "rules": [{"match": "go", "replies": [{"tool_calls": [call]}, {"text": "understood"}]}]
    }
    async with session_on(scenario, wire, tmp_path) as (session, server, _):
        ended = await session.run_turn("go")
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    results = [m for m in session.context if isinstance(m, ToolResult)]
    assert [r.status for r in results] == [status]
    assert results[0].content
    assert [r.status for r in server.requests] == [200, 200]


async def test_provider_error_ends_turn_with_error(wire: ProviderKind, tmp_path: Path) -> None:
    scenario = {
        "rules": [
            {"match": "after", "replies": [{"text": "ok"}]},
            {"match": "limit", "replies": [{"error": {"status": 429, "retry_after": 7}}]},
        ]
    }
    async with session_on(scenario, wire, tmp_path) as (session, _server, _):
        ended = await session.run_turn("limit")
        assert ended.outcome is TurnOutcome.ERROR
        assert "rate" in ended.reason.lower()
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED


async def test_slow_subscriber_never_stalls_the_turn(wire: ProviderKind, tmp_path: Path) -> None:
    scenario = {
        "rules": [{"match": "*", "replies": [{"text": "many small deltas " * 20, "chunk": 2}]}]
    }
    async with session_on(scenario, wire, tmp_path) as (session, _server, _):
        stuck = session.subscribe(buffer=1)  # never read
        with trio.fail_after(30):
            ended = await session.run_turn("go")
        assert ended.outcome is TurnOutcome.COMPLETED
        assert stuck.lagged
        resynced = await session.events_since(0)
        assert resynced[-1] == ended


async def test_repeated_client_request_id_is_idempotent(wire: ProviderKind, tmp_path: Path) -> None:
    scenario = {"rules": [{"match": "*", "replies": [{"text": "ok"}]}]}
    async with session_on(scenario, wire, tmp_path) as (session, server, _):
        first = await session.submit("go", client_request_id="req-1")
        second = await session.submit("go", client_request_id="req-1")
        assert first == second
        await session.wait_turn(first)
        assert len(server.requests) == 1


async def test_subscribers_get_detached_data(wire: ProviderKind, tmp_path: Path) -> None:
    async with session_on(BASH_THEN_DONE, wire, tmp_path) as (session, _server, _):
        with session.subscribe() as sub:
            await session.run_turn("run it")
            events = await collect(sub)
    started = next(e for e in events if isinstance(e, ev.ToolCallStarted))
    with pytest.raises(TypeError):
        started.arguments["command"] = "rm -rf /"
    assistant = session.context[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.tool_calls[0].arguments == {"command": "echo hi"}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
