"""Runtime overhead per streamed text delta, adapter → subscriber (docs/benchmarks.md, budgets).

Three measurements, each on a fresh session of an in-process runtime (in-memory store):

1. **Overhead per delta (synthetic provider; judged against the budget).** The runtime's
   `provider_factory` hook supplies a provider that yields `DELTAS` one-character
   `TextDelta`s from memory, with a trio checkpoint after each (as a network read would
   have), then `StreamDone`. A subscriber receives every event. The turn's time (submit →
   `turn_ended` at the subscriber) minus the time to iterate the same provider stream
   directly, divided by the number of deltas, is what the loop, the event, the store
   append, the fan-out and the subscriber's wake-up cost per delta. A turn's fixed costs
   (user message, commits, `turn_ended`) are removed by taking the difference between a
   long and a short stream (`DELTAS` and `DELTAS // 10`). Median over runs.
2. **Latency per delta (synthetic provider, lockstep).** The provider stamps
   `perf_counter_ns()` just before it yields each delta and then waits until the
   subscriber has received it; the subscriber stamps on receipt. Latency = receipt −
   yield: the runtime's path plus one trio task switch, with no queueing behind other
   deltas. Median and p99 over all deltas of all runs.
3. **Overhead per delta through the real SDK (context).** The fake model server streams
   a reply of `DELTAS` one-character deltas on the Anthropic wire; the turn's time minus
   the time for the same request consumed directly from the adapter
   (`provider.stream(request)`), divided by the number of deltas. Both include the
   server and the SDK's parsing, which dominate; the difference is noisier than (1).

`runs` is the number of repetitions of each measurement.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import trio

from rawtrio import events as ev
from rawtrio.messages import AssistantMessage, ProviderKind, TextPart, UserMessage
from rawtrio.providers import base as pb
from rawtrio.providers import make_provider
from rawtrio.runtime.runtime import Runtime, open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.store.memory import MemoryStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.tools.builtin import builtin_registry
from stress.bench.common import Figure, Options, median, percentile

DEFAULT_RUNS: Final = 10
SMOKE_RUNS: Final = 1
#: Deltas in the long stream of each measurement.
DELTAS: Final = 5000
#: A budget of docs/benchmarks.md, in microseconds.
TARGET_US: Final = 30.0
PROMPT: Final = "stream please"
RUN_LIMIT_S: Final = 60.0


class SyntheticProvider:
    """A provider that streams `count` one-character deltas from memory.

    With `lockstep` it stamps each delta as it yields it and waits for the subscriber's
    acknowledgement before the next; otherwise it checkpoints once per delta.
    """

    kind: ProviderKind = "anthropic"

    def __init__(self, count: int, *, lockstep: bool = False) -> None:
        self.count = count
        self.lockstep = lockstep
        self.yielded_ns: list[int] = []
        self.ack = trio.Event()

    def acknowledge(self) -> None:
        self.ack.set()

    @asynccontextmanager
    async def stream(
        self, request: pb.ModelRequest
    ) -> AsyncIterator[AsyncIterator[pb.StreamEvent]]:
        yield self._events()

    async def _events(self) -> AsyncIterator[pb.StreamEvent]:
        for _ in range(self.count):
            if self.lockstep:
                self.yielded_ns.append(time.perf_counter_ns())
                yield pb.TextDelta("x")
                await self.ack.wait()
                self.ack = trio.Event()
            else:
                yield pb.TextDelta("x")
                await trio.lowlevel.checkpoint()
        message = AssistantMessage((TextPart("x" * self.count),), provider="anthropic")
        yield pb.StreamDone(message, "end_turn", pb.UsageInfo())

    async def aclose(self) -> None:
        pass


def _options(cwd: Path, settings: pb.ProviderSettings | None = None) -> SessionOptions:
    provider = settings or pb.ProviderSettings(kind="anthropic", model="m", api_key="k")
    return SessionOptions(cwd=cwd, provider=provider)


async def timed_turn(session: Session, on_delta: Callable[[], None] | None = None) -> float:
    """Seconds from submit until the subscriber received `turn_ended`."""
    with session.subscribe() as sub:
        started = time.perf_counter()
        turn_id = await session.submit(PROMPT)
        async for event in sub:
            if isinstance(event, ev.TextDelta) and on_delta is not None:
                on_delta()
            elif isinstance(event, ev.TurnEnded) and event.turn_id == turn_id:
                return time.perf_counter() - started
    raise RuntimeError("the subscription ended before turn_ended (lagged?)")


async def synthetic_turn(cwd: Path, count: int) -> float:
    """Seconds per turn of `count` synthetic deltas, minus iterating the stream directly."""
    provider = SyntheticProvider(count)
    async with open_runtime(MemoryStore(), provider_factory=lambda _: provider) as runtime:
        session = await runtime.create_session(_options(cwd))
        turn_s = await timed_turn(session)
        await session.close()
    started = time.perf_counter()
    async with provider.stream(session.model.build_request()) as events:
        async for _ in events:
            pass
    return turn_s - (time.perf_counter() - started)


async def overhead_per_delta_us(cwd: Path, deltas: int) -> float:
    long = await synthetic_turn(cwd, deltas)
    short = await synthetic_turn(cwd, deltas // 10)
    return (long - short) / (deltas - deltas // 10) * 1e6


async def lockstep_latencies_us(cwd: Path, deltas: int) -> list[float]:
    provider = SyntheticProvider(deltas, lockstep=True)
    received: list[int] = []

    def on_delta() -> None:
        received.append(time.perf_counter_ns())
        provider.acknowledge()

    async with open_runtime(MemoryStore(), provider_factory=lambda _: provider) as runtime:
        session = await runtime.create_session(_options(cwd))
        await timed_turn(session, on_delta)
        await session.close()
    if len(received) != len(provider.yielded_ns):
        raise RuntimeError(f"{len(provider.yielded_ns)} deltas yielded, {len(received)} received")
    return [(r - y) / 1000 for y, r in zip(provider.yielded_ns, received, strict=True)]


async def real_sdk_overhead_us(
    runtime: Runtime, settings: pb.ProviderSettings, cwd: Path, deltas: int
) -> float:
    session = await runtime.create_session(_options(cwd, settings))
    turn_s = await timed_turn(session)
    await session.close()
    request = pb.ModelRequest(
        system=session.record.system_prompt,
        messages=(UserMessage(PROMPT),),
        tools=builtin_registry().specs(),
        model=settings.model,
        max_tokens=session.options.max_output_tokens,
    )
    provider = make_provider(settings)
    try:
        started = time.perf_counter()
        async with provider.stream(request) as events:
            async for _ in events:
                pass
        direct_s = time.perf_counter() - started
    finally:
        await provider.aclose()
    return (turn_s - direct_s) / deltas * 1e6


async def run(options: Options) -> list[Figure]:
    runs = options.runs
    deltas = options.size(DELTAS, 200)
    scenario = Scenario.from_dict(
        {"rules": [{"match": "*", "replies": [{"text": "x" * deltas, "chunk": 1}]}]}
    )
    with (
        tempfile.TemporaryDirectory(prefix="rawtrio-bench-") as tmp,
        trio.fail_after(RUN_LIMIT_S * runs),
    ):
        cwd = Path(tmp)
        await overhead_per_delta_us(cwd, deltas)  # warm-up
        overheads = [await overhead_per_delta_us(cwd, deltas) for _ in range(runs)]
        latencies: list[float] = []
        for _ in range(runs):
            latencies += await lockstep_latencies_us(cwd, deltas)
        async with (
            open_fake_model_server(scenario) as server,
            open_runtime(MemoryStore()) as runtime,
        ):
            settings = pb.ProviderSettings(
                kind="anthropic", model="m", api_key="k", base_url=server.base_url, max_retries=0
            )
            await real_sdk_overhead_us(runtime, settings, cwd, deltas)  # warm-up
            real = [await real_sdk_overhead_us(runtime, settings, cwd, deltas) for _ in range(runs)]
    note = f"{runs} runs of {deltas} one-character deltas"
    return [
        Figure.against(
            "overhead per delta, synthetic stream (median)",
            median(overheads),
            "us",
            TARGET_US,
            note,
        ),
        Figure.against(
            "latency yield -> subscriber, lockstep (median)",
            median(latencies),
            "us",
            TARGET_US,
            f"{len(latencies)} deltas",
        ),
        Figure.against(
            "latency yield -> subscriber, lockstep (p99)", percentile(latencies, 99), "us", None
        ),
        Figure.against(
            "overhead per delta, real SDK on the fake server (median)",
            median(real),
            "us",
            None,
            f"{note}; turn time minus the adapter's stream alone",
        ),
    ]
