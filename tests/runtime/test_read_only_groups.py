"""Read-only calls side by side (docs/contracts.md, Concurrency inside a turn): real SDKs
against the fake model server, tools that show what ran at the same time, cancels at
every event of a group."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.messages import ProviderKind, ToolResult, check_pairing
from rawtrio.runtime.loop import call_groups
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from tests.conftest import session_on

SCHEMA = freeze({"type": "object", "properties": {"name": {"type": "string"}}})


@dataclass
class Probe:
    """What the probe tools saw: who ran, how many at once, who waits for whom."""

    active: set[str] = field(default_factory=set)
    most_at_once: int = 0
    started: list[str] = field(default_factory=list)
    #: A call named here does not return until the event is set.
    hold: dict[str, trio.Event] = field(default_factory=dict)
    #: Set when a call of that name started.
    began: dict[str, trio.Event] = field(default_factory=dict)
    #: Set when a write call ran alongside another call.
    overlapped: list[str] = field(default_factory=list)

    def began_event(self, name: str) -> trio.Event:
        return self.began.setdefault(name, trio.Event())

    def tool(self, tool_id: str, *, read_only: bool) -> Tool:
        async def handler(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
            name = str(args.get("name", ctx.call_id))
            if not read_only and self.active:
                self.overlapped.append(name)
            self.active.add(name)
            self.most_at_once = max(self.most_at_once, len(self.active))
            self.started.append(name)
            self.began_event(name).set()
            try:
                if name in self.hold:
                    await self.hold[name].wait()
                for _ in range(3):  # let others run, so overlaps are seen
                    await trio.lowlevel.checkpoint()
                if not read_only and len(self.active) > 1:
                    self.overlapped.append(name)
            finally:
                self.active.discard(name)
            return ToolOutput.ok(f"{tool_id} {name} done")

        return Tool(
            id=tool_id,
            description=f"probe {tool_id}",
            input_schema=SCHEMA,
            handler=handler,
            read_only=read_only,
        )

    def tools(self) -> tuple[Tool, ...]:
        return (self.tool("look", read_only=True), self.tool("change", read_only=False))


def calls(*specs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"name": tool, "arguments": {"name": name}} for tool, name in specs]


def scenario(tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "rules": [
            {"match": "after", "replies": [{"text": "fine"}]},
            {
                "match": "go",
                "replies": [{"text": "Working.", "tool_calls": tool_calls}, {"text": "All done."}],
            },
        ]
    }


async def run(
    wire: ProviderKind, tmp_path: Path, probe: Probe, tool_calls: list[dict[str, Any]], **opts: Any
) -> tuple[ev.TurnEnded, list[ev.Event], list[ToolResult]]:
    async with session_on(
        scenario(tool_calls), wire, tmp_path, extra_tools=probe.tools(), **opts
    ) as (session, _, _):
        with session.subscribe() as sub:
            ended = await session.run_turn("go")
            events = [e async for e in _until_ended(sub)]
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert check_pairing(session.context) == []
    return ended, events, results


async def _until_ended(sub: Any) -> Any:
    async for event in sub:
        yield event
        if isinstance(event, ev.TurnEnded):
            return


async def test_read_only_calls_run_side_by_side(wire: ProviderKind, tmp_path: Path) -> None:
    probe = Probe()
    # "a" returns only once "c" has started: one after another, this never ends.
    probe.hold["a"] = probe.began_event("c")
    ended, events, results = await run(
        wire, tmp_path, probe, calls(("look", "a"), ("look", "b"), ("look", "c"))
    )
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert probe.most_at_once == 3
    # Committed in the order the model listed them, whatever order they finished in.
    assert [r.content for r in results] == ["look a done", "look b done", "look c done"]
    finished = [e.content for e in events if isinstance(e, ev.ToolCallFinished)]
    assert finished == ["look a done", "look b done", "look c done"]


async def test_group_bound_limits_calls_at_once(wire: ProviderKind, tmp_path: Path) -> None:
    probe = Probe()
    probe.hold["a"] = probe.began_event("b")  # two at once are needed, and allowed
    ended, _, results = await run(
        wire,
        tmp_path,
        probe,
        calls(("look", "a"), ("look", "b"), ("look", "c"), ("look", "d"), ("look", "e")),
        max_parallel_tool_calls=2,
    )
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert probe.most_at_once == 2
    assert probe.started[:2] == ["a", "b"]  # started in listed order
    assert [r.status for r in results] == [ToolStatus.OK] * 5


async def test_bound_of_one_runs_one_after_another(wire: ProviderKind, tmp_path: Path) -> None:
    probe = Probe()
    ended, _, _ = await run(
        wire,
        tmp_path,
        probe,
        calls(("look", "a"), ("look", "b"), ("look", "c")),
        max_parallel_tool_calls=1,
    )
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert probe.most_at_once == 1
    assert probe.started == ["a", "b", "c"]


async def test_a_call_that_may_write_runs_alone(wire: ProviderKind, tmp_path: Path) -> None:
    probe = Probe()
    ended, _, results = await run(
        wire,
        tmp_path,
        probe,
        calls(("look", "a"), ("look", "b"), ("change", "w"), ("look", "c"), ("look", "d")),
    )
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert probe.overlapped == []
    assert probe.started.index("w") == 2  # after both reads before it, before those after
    assert set(probe.started[:2]) == {"a", "b"}
    assert set(probe.started[3:]) == {"c", "d"}
    assert [r.content.split()[1] for r in results] == ["a", "b", "w", "c", "d"]


async def test_call_groups_split_at_calls_that_may_write(
    wire: ProviderKind, tmp_path: Path
) -> None:
    from rawtrio.messages import ToolCall

    probe = Probe()
    async with session_on(scenario([]), wire, tmp_path, extra_tools=probe.tools()) as (s, _, _):
        listed = [
            ToolCall("1", "look", "{}", freeze({})),
            ToolCall("2", "read_file", "{}", freeze({"path": "x"})),
            ToolCall("3", "change", "{}", freeze({})),
            ToolCall("4", "look", "{}", freeze({})),
            ToolCall("5", "nope", "{}", freeze({})),
            ToolCall("6", "look", "{}", freeze({})),
            ToolCall("7", "grep", "{}", freeze({"pattern": "x"})),
        ]
        groups = [[c.id for c in g] for g in call_groups(s, listed)]
    assert groups == [["1", "2"], ["3"], ["4"], ["5"], ["6", "7"]]


async def test_cancel_mid_group_gives_every_call_one_honest_result(
    wire: ProviderKind, tmp_path: Path
) -> None:
    """b finished (not yet committed: a is before it), a and c running, d waiting for a
    slot: a cancel then commits b's real result and cancelled ones for the others."""
    probe = Probe()
    never = trio.Event()
    probe.hold["a"] = never
    probe.hold["c"] = never
    tool_calls = calls(("look", "a"), ("look", "b"), ("look", "c"), ("look", "d"))
    async with session_on(
        scenario(tool_calls),
        wire,
        tmp_path,
        extra_tools=probe.tools(),
        max_parallel_tool_calls=2,
    ) as (session, _, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("go")
            await probe.began_event("c").wait()
            session.cancel("test cancel")
            ended = await session.wait_turn(turn_id)
            events = [e async for e in _until_ended(sub)]
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert check_pairing(session.context) == []
        assert ended.outcome is TurnOutcome.CANCELLED
        assert results[1].content == "look b done"
        statuses = [(r.status, r.started) for r in results]
        assert statuses == [
            (ToolStatus.CANCELLED, True),
            (ToolStatus.OK, True),
            (ToolStatus.CANCELLED, True),
            (ToolStatus.CANCELLED, False),
        ]
        assert "d" not in probe.started
        finished = [e.call_id for e in events if isinstance(e, ev.ToolCallFinished)]
        assert finished == [r.call_id for r in results]
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason


async def test_cancel_at_every_event_of_a_group(wire: ProviderKind, tmp_path: Path) -> None:
    """Cancel as each event of a turn with a read-only group arrives: every call gets
    exactly one result, the next request is accepted, nothing of the group runs after."""
    tool_calls = calls(("look", "a"), ("look", "b"), ("look", "c"))
    async with session_on(scenario(tool_calls), wire, tmp_path, extra_tools=Probe().tools()) as (
        session,
        _,
        _,
    ):
        with session.subscribe() as sub:
            await session.run_turn("go")
            total = len([e async for e in _until_ended(sub)])
    for k in range(1, total):
        probe = Probe()
        async with session_on(scenario(tool_calls), wire, tmp_path, extra_tools=probe.tools()) as (
            session,
            _,
            _,
        ):
            with session.subscribe() as sub:
                turn_id = await session.submit("go")
                events: list[ev.Event] = []
                async for event in sub:
                    events.append(event)
                    if len(events) == k:
                        session.cancel(f"cancel at event {k}")
                        break
                ended = await session.wait_turn(turn_id)
                events += [e async for e in _until_ended(sub)]
            assert ended.outcome in (TurnOutcome.CANCELLED, TurnOutcome.COMPLETED), k
            assert check_pairing(session.context) == [], k
            results = [m for m in session.context if isinstance(m, ToolResult)]
            assert len({r.call_id for r in results}) == len(results) in (0, 3), k
            started = {e.call_id for e in events if isinstance(e, ev.ToolCallStarted)}
            # I5: a call that started says so; one that did not never ran.
            assert {r.call_id for r in results if r.started} == started, k
            assert len(probe.started) == len(started), k
            finished = [e.call_id for e in events if isinstance(e, ev.ToolCallFinished)]
            assert finished == [r.call_id for r in results], k
            again = await session.run_turn("after")
            assert again.outcome is TurnOutcome.COMPLETED, (k, again.reason)
