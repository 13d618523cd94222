"""Concurrency inside a turn: cancelling a parent whose two `task` children each run a
subprocess, and 8 read-only calls one after another vs side by side (docs/benchmarks.md,
Subagents).

Method, cancel: one in-process fake model server and one runtime (in-memory store,
Anthropic wire through the real SDK). Each run is a fresh session whose reply asks for two
`task` calls; each child's reply calls `bash` with `echo started; sleep 30` (its own
process group). Once the parent's subscriber has seen a `tool_output_delta` of both
children (as `subagent_event`s), the benchmark notes the two groups (children of this
process leading their own group, read from /proc), takes `t0` and cancels the parent's
turn. The figure is the time from `t0` until the parent's `turn_ended` arrived and both
groups were gone (a group is gone once `killpg(pgid, 0)` finds no process in it; /proc
is scanned only while it still finds one); the target is the single-session budget
(docs/benchmarks.md: median 20 ms, p99 100 ms for tools that exit on SIGTERM, as these
do). The CPU time this process spent over the same stretch (`time.process_time`) is
reported too: on a loaded machine the wall time is mostly waiting for a core.

Method, read-only calls: a read-only tool that sleeps 200 ms; the model asks for 8 calls
of it in one reply. The figure is the wall time of the tool phase — from the first
`tool_call_started` to the last `tool_call_finished` — with `max_parallel_tool_calls = 1`
(one after another) and `= 8` (side by side).

`runs` is the number of cancels, and of turns per read-only setting.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.runtime.runtime import Runtime, open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.store.memory import MemoryStore
from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.settings import ToolSettings
from stress.bench.bench_cancel import GRACE_S, group_state, provider_settings
from stress.bench.common import Figure, Options, median, percentile

DEFAULT_RUNS: Final = 20
SMOKE_RUNS: Final = 1
RUN_LIMIT_S: Final = 30.0
CALL_S: Final = 0.2
CALLS: Final = 8

SLEEPER = "echo started; sleep 30"


def _task(name: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": name, "prompt": f"child {name}"}}


SCENARIO: Final = {
    "rules": [
        {
            "match": "child ",
            "replies": [{"tool_calls": [{"name": "bash", "arguments": {"command": SLEEPER}}]}],
        },
        {"match": "delegate", "replies": [{"tool_calls": [_task("one"), _task("two")]}]},
        {
            "match": "look",
            "replies": [
                {"tool_calls": [{"name": "nap", "arguments": {}} for _ in range(CALLS)]},
                {"text": "done"},
            ],
        },
    ]
}


async def _nap(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    await trio.sleep(CALL_S)
    return ToolOutput.ok("rested")


NAP = Tool(
    id="nap",
    description="a read-only call that takes 200 ms",
    input_schema=freeze({"type": "object"}),
    handler=_nap,
    read_only=True,
)


async def run(options: Options) -> list[Figure]:
    runs = options.runs
    with tempfile.TemporaryDirectory(prefix="rawtrio-bench-") as tmp:
        async with (
            open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
            open_runtime(MemoryStore()) as runtime,
        ):
            await one_cancel(runtime, server, Path(tmp))  # warm-up
            samples = [await one_cancel(runtime, server, Path(tmp)) for _ in range(runs)]
            one_by_one = [await tool_phase(runtime, server, Path(tmp), 1) for _ in range(runs)]
            side_by_side = [
                await tool_phase(runtime, server, Path(tmp), CALLS) for _ in range(runs)
            ]
    ms = [wall * 1000 for wall, _ in samples]
    cpu_ms = [cpu * 1000 for _, cpu in samples]
    note = f"{len(ms)} runs, two children each running `sleep` in its own group"
    seq = median(one_by_one) * 1000
    par = median(side_by_side) * 1000
    cancel = "cancel -> parent ended + 2 children's groups gone"
    naps = f"{CALLS} read-only calls of 200 ms"
    faster = f"{seq / par:.1f}x faster than one after another"
    return [
        Figure.against(f"{cancel} (median)", median(ms), "ms", 20, note),
        Figure.against(f"{cancel} (p99)", percentile(ms, 99), "ms", 100),
        Figure.against(f"{cancel}, this process's CPU (median)", median(cpu_ms), "ms", None),
        Figure.against(f"{naps}, one after another (median)", seq, "ms", None),
        Figure.against(f"{naps}, side by side (median)", par, "ms", CALL_S * 1500, faster),
    ]


def _options(server: FakeModelServer, cwd: Path, parallel: int = CALLS) -> SessionOptions:
    return SessionOptions(
        cwd=cwd,
        provider=provider_settings(server),
        tools=ToolSettings(sigterm_grace_s=GRACE_S, bash_timeout_s=60),
        extra_tools=(NAP,),
        max_parallel_tool_calls=parallel,
    )


async def one_cancel(runtime: Runtime, server: FakeModelServer, cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) from the cancel until the parent's
    `turn_ended` arrived and both children's groups were gone."""
    session = await runtime.create_session(_options(server, cwd))
    try:
        with trio.fail_after(RUN_LIMIT_S), session.subscribe() as sub:
            turn_id = await session.submit("delegate")
            running: set[str] = set()
            async for event in sub:
                if (
                    isinstance(event, ev.SubagentEvent)
                    and event.event["type"] == "tool_output_delta"
                ):
                    running.add(event.child_session_id)
                    if len(running) == 2:
                        break
            groups = tool_groups(os.getpid())
            if len(groups) != 2:
                raise RuntimeError(f"expected the children's 2 process groups, found {groups}")
            t0, cpu0 = time.perf_counter(), time.process_time()
            session.cancel("benchmark cancel")
            ended: ev.TurnEnded | None = None
            async for event in sub:
                if isinstance(event, ev.TurnEnded) and event.turn_id == turn_id:
                    ended = event
                    break
            alive = True
            while alive:  # polled: /proc is the only witness that a group is gone
                alive = any(group_state(g)[0] for g in groups)
                await trio.sleep(0 if not alive else 0.001)
            took = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        await session.close()
    if ended is None or ended.outcome is not TurnOutcome.CANCELLED:
        raise RuntimeError(f"the turn did not end cancelled: {ended}")
    return took


async def tool_phase(runtime: Runtime, server: FakeModelServer, cwd: Path, parallel: int) -> float:
    session = await runtime.create_session(_options(server, cwd, parallel))
    first = last = 0.0
    try:
        with trio.fail_after(RUN_LIMIT_S), session.subscribe() as sub:
            await session.submit("look")
            async for event in sub:
                if isinstance(event, ev.ToolCallStarted) and not first:
                    first = time.perf_counter()
                elif isinstance(event, ev.ToolCallFinished):
                    last = time.perf_counter()
                elif isinstance(event, ev.TurnEnded):
                    if event.outcome is not TurnOutcome.COMPLETED:
                        raise RuntimeError(f"the turn did not complete: {event}")
                    break
    finally:
        await session.close()
    return last - first


def tool_groups(parent: int) -> list[int]:
    """The process groups led by children of `parent` (rawtrio's watchdog left out)."""
    from rawtrio.processes.subreaper import process_state
    from rawtrio.processes.watchdog import WATCHDOG

    watchdog = WATCHDOG.proc.pid if WATCHDOG.proc is not None else None
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != watchdog:
            stat = process_state(int(entry))
            if stat is not None and stat[1] == parent and stat[2] == int(entry):
                found.append(int(entry))
    return found
