"""Retries of failed model requests (rawtrio.providers.retry), end to end: the real SDKs on
all three wires against the fake model server's faults, through a live session."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import ProviderKind, check_pairing
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.store.memory import MemoryStore
from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server
from rawtrio.tools.settings import ToolSettings
from tests.conftest import LIVENESS_S, provider_for


def rule(*replies: dict[str, Any], match: str = "*") -> dict[str, Any]:
    return {"rules": [{"match": match, "replies": list(replies)}]}


@asynccontextmanager
async def retrying_session(
    scenario: dict[str, Any], wire: ProviderKind, cwd: Path, **provider: Any
) -> AsyncIterator[tuple[Session, FakeModelServer]]:
    """A session whose provider retries (`max_retries` 6 unless given)."""
    provider.setdefault("max_retries", 6)
    async with (
        open_fake_model_server(Scenario.from_dict(scenario)) as server,
        open_runtime(MemoryStore()) as runtime,
    ):
        options = SessionOptions(
            cwd=cwd,
            provider=dataclasses.replace(provider_for(server, wire), **provider),
            tools=ToolSettings(sigterm_grace_s=0.2, bash_timeout_s=30),
        )
        session = await runtime.create_session(options)
        with trio.fail_after(LIVENESS_S):
            yield session, server


async def run_turn(session: Session, text: str) -> tuple[ev.TurnEnded, list[ev.Event]]:
    with session.subscribe() as sub:
        ended = await session.run_turn(text)
        events: list[ev.Event] = []
        async for event in sub:
            events.append(event)
            if isinstance(event, ev.TurnEnded):
                break
    return ended, events


def notices(events: list[ev.Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, ev.Notice)]


async def test_a_529_is_retried_until_the_turn_completes(
    wire: ProviderKind, tmp_path: Path
) -> None:
    error = {"status": 529, "type": "overloaded_error", "retry_after_ms": 10}
    scenario = rule({"text": "made it", "error": error, "fail_times": 2})
    async with retrying_session(scenario, wire, tmp_path) as (session, server):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert ended.final_text == "made it"
    assert [r.status for r in server.requests] == [529, 529, 200]
    assert notices(events) == [
        "retrying in 10 ms: 529 overloaded, retry 1 of 6",
        "retrying in 10 ms: 529 overloaded, retry 2 of 6",
    ]
    assert not any(isinstance(e, ev.StreamInterrupted) for e in events)
    assert check_pairing(session.context) == []


async def test_retry_after_ms_wins_over_retry_after_and_is_the_wait(tmp_path: Path) -> None:
    error = {"status": 429, "retry_after": 30, "retry_after_ms": 120}
    scenario = rule({"text": "ok", "error": error, "fail_times": 1})
    async with retrying_session(scenario, "anthropic", tmp_path) as (session, _):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert notices(events) == ["retrying in 120 ms: 429 rate limited, retry 1 of 6"]


async def test_retry_after_in_seconds_is_honoured(tmp_path: Path) -> None:
    error = {"status": 503, "retry_after": 1}
    scenario = rule({"text": "ok", "error": error, "fail_times": 1})
    async with retrying_session(scenario, "openai-chat", tmp_path) as (session, _):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert notices(events) == ["retrying in 1 s: 503 server error, retry 1 of 6"]


async def test_exhausted_retries_end_the_turn_without_promising_a_retry(
    wire: ProviderKind, tmp_path: Path
) -> None:
    error = {"status": 429, "retry_after_ms": 5, "message": "slow down"}
    scenario = rule({"error": error})
    async with retrying_session(scenario, wire, tmp_path, max_retries=2) as (session, server):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.ERROR
    assert len(server.requests) == 3
    assert "slow down" in ended.reason
    assert ended.reason.endswith("; gave up after 2 retries")
    assert "retry in" not in ended.reason
    assert len(notices(events)) == 2
    assert check_pairing(session.context) == []


async def test_a_wait_past_the_retry_budget_is_not_taken(tmp_path: Path) -> None:
    scenario = rule({"error": {"status": 529, "retry_after": 120}})
    async with retrying_session(scenario, "anthropic", tmp_path, retry_budget_s=60) as (
        session,
        server,
    ):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.ERROR
    assert len(server.requests) == 1
    assert notices(events) == []
    assert ended.reason.endswith(
        "gave up after 0 retries: the service asked to wait 120 s, which would pass the "
        "retry budget (retry_budget_s = 60)"
    )


async def test_cancel_during_the_backoff_ends_the_turn_cancelled_at_once(
    wire: ProviderKind, tmp_path: Path
) -> None:
    error = {"status": 529, "retry_after": 200}
    scenario = {
        "rules": [
            # Anthropic merges the next turn's user message with this one: match it whole.
            {"match": "re:^first$", "replies": [{"error": error}]},
            {"match": "*", "replies": [{"text": "second turn fine"}]},
        ]
    }
    async with retrying_session(scenario, wire, tmp_path) as (session, server):
        with session.subscribe() as sub:
            turn_id = await session.submit("first")
            events: list[ev.Event] = []
            async for event in sub:
                events.append(event)
                if isinstance(event, ev.Notice):
                    assert event.text.startswith("retrying in 200 s: 529 overloaded")
                    session.cancel("the user pressed Esc")
                if isinstance(event, ev.TurnEnded):
                    break
        ended = await session.wait_turn(turn_id)
        assert ended.outcome is TurnOutcome.CANCELLED
        assert ended.reason == "the user pressed Esc"
        assert len(server.requests) == 1
        assert [e for e in events if isinstance(e, ev.TurnEnded)] == [ended]
        assert not any(isinstance(e, ev.StreamInterrupted) for e in events)
        assert check_pairing(session.context) == []
        # The next request is accepted by the validating server.
        again, _ = await run_turn(session, "second")
    assert again.outcome is TurnOutcome.COMPLETED, again.reason
    assert again.final_text == "second turn fine"


async def test_a_stalled_stream_is_retried_after_the_idle_timeout(
    wire: ProviderKind, tmp_path: Path
) -> None:
    # One event (message_start / the role chunk / response.created), then silence.
    scenario = rule({"text": "after the stall", "stall_after": 1, "fail_times": 1})
    async with retrying_session(scenario, wire, tmp_path, stream_idle_timeout_s=0.3) as (
        session,
        server,
    ):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert ended.final_text == "after the stall"
    assert len(server.requests) == 2
    assert server.requests[0].disconnected
    [notice] = notices(events)
    assert notice.startswith("retrying in ")
    assert notice.endswith(": stream stalled, retry 1 of 6")


async def test_an_overloaded_error_inside_the_stream_is_retried(
    wire: ProviderKind, tmp_path: Path
) -> None:
    error = {"status": 529, "type": "overloaded_error", "message": "busy", "after": 1}
    scenario = rule({"text": "second try", "error": error, "fail_times": 1})
    async with retrying_session(scenario, wire, tmp_path) as (session, server):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert ended.final_text == "second try"
    assert len(server.requests) == 2
    [notice] = notices(events)
    assert notice.endswith(": overloaded (in the stream), retry 1 of 6")


async def test_a_cut_after_text_was_shown_is_not_retried(
    wire: ProviderKind, tmp_path: Path
) -> None:
    reply = {"text": "a reply long enough to be cut", "chunk": 3, "cut_after": 6}
    async with retrying_session(rule({**reply, "fail_times": 1}), wire, tmp_path) as (
        session,
        server,
    ):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.ERROR
    assert ended.reason.endswith("; not retried: part of the reply was already shown")
    assert len(server.requests) == 1
    assert notices(events) == []
    [cut] = [e for e in events if isinstance(e, ev.StreamInterrupted)]
    shown = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
    assert shown
    assert "a reply long enough".startswith(cut.partial_text)
    assert len(session.context) == 1  # only the user message: nothing torn (I3)


async def test_a_cut_after_the_committed_tool_call_is_not_retried(
    wire: ProviderKind, tmp_path: Path
) -> None:
    # The whole reply arrives (its final event included), then the body is cut: the
    # message is committed and its call runs exactly once; the request is not repeated.
    call = {"name": "bash", "arguments": {"command": "echo ran >> runs.txt"}}
    scenario = rule({"tool_calls": [call], "cut_after": 1000}, {"text": "finished"})
    async with retrying_session(scenario, wire, tmp_path) as (session, server):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert [r.outcome for r in server.requests] == ["cut", "completed"]
    finished = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert [f.status for f in finished] == [ToolStatus.OK]
    assert (tmp_path / "runs.txt").read_text() == "ran\n"
    assert notices(events) == []


async def test_a_refused_connection_is_not_retried_and_names_the_url(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nobody listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    async with retrying_session(rule({"text": "x"}), "openai-chat", tmp_path, base_url=base) as (
        session,
        _,
    ):
        ended, events = await run_turn(session, "hello")
    assert ended.outcome is TurnOutcome.ERROR
    assert f"could not reach http://127.0.0.1:{port}/v1/chat/completions" in ended.reason
    assert notices(events) == []
