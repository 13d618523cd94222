"""The warm host (`rawtrio serve`) with two front ends attached: how fast a cancel sent by one
reaches the other, and whether the host's memory stays flat over many sessions.

Method: a real `rawtrio serve` on the fake model server (`stress.host_attach.open_host`),
clients speaking the attach protocol over its Unix socket.

- **cancel from a second front end**: client A starts a session and submits a prompt whose
  tool runs `sleep 30`; client B joins the session, waits until it has seen
  `tool_call_started`, then sends `_rawtrio/session/cancel`; measured from just before B
  sends until A reads `turn_ended` (the tool's process group stopped and reaped, the
  outcome recorded, the event delivered). Median of `runs` turns.
- **host memory over sessions**: sessions opened (`_rawtrio/session/start`), prompted
  (a one-line reply) and closed (the client disconnects; the host closes an idle session
  nobody is attached to), one after another; the host's RSS after the first 50 against
  its RSS after 1,000 (`--smoke`: 10 and 40).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import psutil
import trio

from stress.bench.common import Figure, Options, median
from stress.host_attach import Client, Host, connect, start_params

DEFAULT_RUNS = 20
SMOKE_RUNS = 2
SCENARIO: dict[str, Any] = {
    "rules": [
        {"match": "say hello", "replies": [{"text": "Hello."}]},
        {
            "match": "sleep long",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
                {"text": "slept"},
            ],
        },
    ]
}
#: Budgets (docs/benchmarks.md).
CANCEL_TARGET_MS = 50.0
RSS_GROWTH_TARGET_MB = 20.0
LIVENESS_S = 60.0


async def run(options: Options) -> list[Figure]:
    from stress.host_attach import open_host

    async with open_host(SCENARIO) as (host, proc):
        cancels = [await _cancel_once(host) for _ in range(options.runs)]
        first, total = options.size(50, 10), options.size(1000, 40)
        process = psutil.Process(proc.pid)
        for _ in range(first):
            await _one_session(host)
        early = process.memory_info().rss
        for _ in range(total - first):
            await _one_session(host)
        late = process.memory_info().rss
    if host.problems:
        raise RuntimeError(f"the host's store did not check out: {host.problems[:3]}")
    growth = (late - early) / 1e6
    return [
        Figure.against(
            "cancel by a second front end -> turn_ended at the first (median)",
            median(cancels),
            "ms",
            CANCEL_TARGET_MS,
            f"{len(cancels)} turns, max {max(cancels):.1f} ms, "
            f"stdev {statistics.pstdev(cancels):.1f} ms",
        ),
        Figure.against(
            f"host RSS growth, sessions {first} -> {total}",
            growth,
            "MB",
            RSS_GROWTH_TARGET_MB,
            f"RSS {early / 1e6:.1f} MB after {first}, {late / 1e6:.1f} MB after {total}",
        ),
    ]


async def _cancel_once(host: Host) -> float:
    with trio.fail_after(LIVENESS_S):
        async with trio.open_nursery() as nursery:
            a = await connect(host, "A", nursery)
            b = await connect(host, "B", nursery)
            sid = (await a.call("_rawtrio/session/start", start_params(host)))["sessionId"]
            await b.call("_rawtrio/session/start", start_params(host, sid))
            submitted = await a.call(
                "_rawtrio/session/submit", {"sessionId": sid, "text": "sleep long"}
            )
            turn_id = submitted["turnId"]
            await _until(b, sid, turn_id, "tool_call_started")
            started = time.perf_counter()
            await b.notify("_rawtrio/session/cancel", {"sessionId": sid, "reason": "bench"})
            await _until(a, sid, turn_id, "turn_ended")
            elapsed = (time.perf_counter() - started) * 1000
            await a.stream.aclose()
            await b.stream.aclose()
            nursery.cancel_scope.cancel(reason="measured")
    return elapsed


async def _until(client: Client, sid: str, turn_id: str, kind: str) -> None:
    count = 1
    while True:
        seen = await client.wait_for(sid, turn_id, count)
        if any(e["type"] == kind for e in seen):
            return
        if client.closed or any(e["type"] == "turn_ended" for e in seen):
            raise RuntimeError(f"{client.name}: the turn ended before {kind}: {seen[-1:]}")
        count = len(seen) + 1


async def _one_session(host: Host) -> None:
    with trio.fail_after(LIVENESS_S):
        async with trio.open_nursery() as nursery:
            client = await connect(host, "S", nursery)
            sid = (await client.call("_rawtrio/session/start", start_params(host)))["sessionId"]
            submitted = await client.call(
                "_rawtrio/session/submit", {"sessionId": sid, "text": "say hello"}
            )
            await _until(client, sid, submitted["turnId"], "turn_ended")
            await client.stream.aclose()
            nursery.cancel_scope.cancel(reason="session done")
