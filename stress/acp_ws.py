"""`python -m stress.acp_ws`: many ACP sessions over several WebSocket connections.

A real `rawtrio acp --ws` (its own process, an isolated state directory) serves the fake
model server. For `--budget` seconds, `--connections` client tasks each connect, prompt
sessions from a shared pool (new ones, or ones another connection made, attached with
`session/load` or `session/resume`), and at random cancel (`session/cancel`), send a
second prompt over a running one, or drop the connection mid-turn and reconnect.

Afterwards (the server stopped with SIGTERM, which records every running turn):

- **one answer** — every `session/prompt` sent on a connection that stayed open until the
  end of its turn got exactly one response with a known stop reason (a cancel sent when
  the answer was already on its way is counted, not flagged);
- **I1 pairing** — every stored session's model context pairs each tool call with exactly
  one result (`rawtrio.messages.check_pairing`);
- **I2 one ending** — every turn in the display history has exactly one `turn_ended`.

Exit status 0 when all held, 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from trio_websocket import ConnectionClosed, HandshakeError, open_websocket_url

from rawtrio import events as ev
from rawtrio.messages import check_pairing
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server

#: A liveness bound, far above any turn of these scripts.
LIVENESS_S = 60.0
PROMPTS = ("say hello", "use a tool", "stream slowly", "sleep a bit")
SCENARIO: dict[str, Any] = {
    "rules": [
        {"match": "say hello", "replies": [{"text": "Hello."}]},
        {
            "match": "use a tool",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo out"}}]},
                {"text": "done"},
            ],
        },
        {
            "match": "stream slowly",
            "replies": [{"text": "a b c d e f g h", "chunk": 2, "delay_ms": 40}],
        },
        {
            "match": "sleep a bit",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 0.5"}}]},
                {"text": "slept"},
            ],
        },
    ]
}


@dataclass
class Stats:
    prompts: int = 0
    answered: int = 0
    cancels: int = 0
    drops: int = 0
    overlaps: int = 0
    cancel_raced: int = 0
    violations: list[str] = field(default_factory=list)
    #: The suite's one-line summary, printed last (`make stress` repeats it).
    summary: str = ""


class Client:
    """One WebSocket connection: requests with ids, a reader counting every response."""

    def __init__(self, ws: Any, name: str, stats: Stats) -> None:
        self.ws = ws
        self.name = name
        self.stats = stats
        self._next = 0
        self.responses: Counter[int] = Counter()
        self.results: dict[int, Any] = {}
        self._waiters: dict[int, trio.Event] = {}

    async def reader(self) -> None:
        try:
            while True:
                msg = json.loads(await self.ws.get_message())
                rid = msg.get("id")
                if "method" in msg:
                    if msg["method"] == "session/request_permission":
                        await self._send({"jsonrpc": "2.0", "id": rid, "result": _allow()})
                    continue
                self.responses[rid] += 1
                self.results[rid] = msg
                if rid in self._waiters:
                    self._waiters[rid].set()
        except ConnectionClosed:
            pass

    async def _send(self, msg: dict[str, Any]) -> None:
        await self.ws.send_message(json.dumps(msg))

    async def send(self, method: str, params: Any) -> int:
        self._next += 1
        self._waiters[self._next] = trio.Event()
        await self._send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return self._next

    async def wait(self, rid: int) -> Any:
        await self._waiters[rid].wait()
        return self.results[rid]

    async def call(self, method: str, params: Any) -> Any:
        msg = await self.wait(await self.send(method, params))
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]


def _allow() -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def connection_loop(
    url: str, token: str, cwd: str, pool: list[str], deadline: float, seed: int, stats: Stats
) -> None:
    rng = random.Random(seed)
    while trio.current_time() < deadline:
        try:
            await one_connection(url, token, cwd, pool, deadline, rng, stats)
        except (ConnectionClosed, HandshakeError):
            stats.drops += 1


async def one_connection(
    url: str,
    token: str,
    cwd: str,
    pool: list[str],
    deadline: float,
    rng: random.Random,
    stats: Stats,
) -> None:
    headers = [(b"authorization", f"Bearer {token}".encode())]
    async with (
        open_websocket_url(url, extra_headers=headers, max_message_size=16 * 1024 * 1024) as ws,
        trio.open_nursery() as nursery,
    ):
        client = Client(ws, "c", stats)
        nursery.start_soon(client.reader)
        await client.call("initialize", {"protocolVersion": 1})
        attached: set[str] = set()
        cancelled: set[int] = set()
        while trio.current_time() < deadline:
            if pool and rng.random() < 0.5:
                sid = rng.choice(pool)
                if sid not in attached:
                    method = rng.choice(("session/load", "session/resume"))
                    await client.call(method, {"sessionId": sid, "cwd": cwd, "mcpServers": []})
            else:
                sid = (await client.call("session/new", {"cwd": cwd, "mcpServers": []}))[
                    "sessionId"
                ]
                pool.append(sid)
            attached.add(sid)
            text = [{"type": "text", "text": rng.choice(PROMPTS)}]
            rid = await client.send("session/prompt", {"sessionId": sid, "prompt": text})
            stats.prompts += 1
            roll = rng.random()
            if roll < 0.1:  # drop the connection mid-turn: the turn goes on
                await trio.sleep(rng.random() * 0.3)
                stats.drops += 1
                await ws.aclose()
                return
            if roll < 0.4:
                await trio.sleep(rng.random() * 0.3)
                await client._send(
                    {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
                )
                cancelled.add(rid)
                stats.cancels += 1
            elif roll < 0.5:  # a second prompt cancels the running one
                await trio.sleep(rng.random() * 0.2)
                second = await client.send("session/prompt", {"sessionId": sid, "prompt": text})
                stats.prompts += 1
                stats.overlaps += 1
                await _answered(client, second, stats, cancel_expected=False)
            await _answered(client, rid, stats, cancel_expected=rid in cancelled)
        nursery.cancel_scope.cancel(reason="budget spent")
        for rid, count in client.responses.items():
            if count != 1:
                stats.violations.append(f"request {rid} got {count} responses")


async def _answered(client: Client, rid: int, stats: Stats, *, cancel_expected: bool) -> None:
    with trio.move_on_after(LIVENESS_S):
        msg = await client.wait(rid)
        stats.answered += 1
        _check_answer(msg, rid, stats, cancel_expected=cancel_expected)
        return
    stats.violations.append(f"prompt {rid} got no answer within {LIVENESS_S} s")


def _check_answer(msg: Any, rid: int, stats: Stats, *, cancel_expected: bool) -> None:
    if "error" in msg:
        return  # e.g. the session was taken over and closed; an answer all the same
    reason = msg["result"]["stopReason"]
    if reason not in ("end_turn", "cancelled", "max_turn_requests"):
        stats.violations.append(f"prompt {rid} answered an unknown stop reason {reason!r}")
    if cancel_expected and reason != "cancelled":
        # The answer was already on its way when the cancel was sent (the turn had
        # ended): nothing left to cancel. Counted, not a violation.
        stats.cancel_raced += 1


async def check_store(db: Path) -> list[str]:
    problems: list[str] = []
    async with SqliteStore(db) as store:
        for record in await store.list_sessions():
            context = await store.load_context(record.id)
            problems += [f"I1 {record.id}: {p}" for p in check_pairing(context)]
            ends: Counter[str] = Counter()
            turns: set[str] = set()
            for event in await store.events_since(record.id, 0):
                if isinstance(event, ev.UserMessageCommitted) and event.turn_id:
                    turns.add(event.turn_id)
                if isinstance(event, ev.TurnEnded) and event.turn_id:
                    ends[event.turn_id] += 1
            for turn in turns:
                if ends[turn] != 1:
                    problems.append(f"I2 {record.id}: turn {turn} has {ends[turn]} endings")
    return problems


async def run(budget: float, connections: int, seed: int) -> tuple[int, str]:
    with tempfile.TemporaryDirectory(prefix="rawtrio-acp-stress-") as tmp:
        root = Path(tmp)
        cwd = root / "work"
        cwd.mkdir()
        scenario = Scenario.from_dict(SCENARIO)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAWTRIO_", "XDG_"))}
        env.update(
            HOME=str(root),
            RAWTRIO_STATE_DIR=str(root / "state"),
            XDG_CONFIG_HOME=str(root / "config"),
            ANTHROPIC_API_KEY="stress",
            RAWTRIO_PERMISSION_MODE="bypass",
        )
        stats = Stats()
        pool: list[str] = []
        async with open_fake_model_server(scenario) as server:
            argv = [sys.executable, "-m", "rawtrio", "acp", "--ws", "--base-url", server.base_url]
            argv += ["--sigterm-grace", "0.2"]
            proc = await trio.lowlevel.open_process(
                argv, env=env, cwd=cwd, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
            )
            try:
                assert proc.stderr is not None
                line = await first_line(proc.stderr)
                info = json.loads(line)
                deadline = trio.current_time() + budget
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(drain, proc.stderr)
                    async with trio.open_nursery() as clients:
                        for i in range(connections):
                            clients.start_soon(
                                connection_loop,
                                info["acp_ws"],
                                info["token"],
                                str(cwd),
                                pool,
                                deadline,
                                seed * 1000 + i,
                                stats,
                            )
                    proc.terminate()  # records every running turn, then exits 0
                    with trio.move_on_after(LIVENESS_S):
                        await proc.wait()
            finally:
                proc.terminate()
                with trio.move_on_after(60):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        problems = await check_store(root / "state" / "sessions.db")
    violations = stats.violations + problems
    print(
        f"acp-ws stress: {stats.prompts} prompts, {stats.answered} answered, "
        f"{stats.cancels} cancels ({stats.cancel_raced} after the turn had ended), "
        f"{stats.overlaps} overlapping prompts, {stats.drops} drops, "
        f"{len(pool)} sessions; server exit {proc.returncode}"
    )
    for v in violations:
        print(f"VIOLATION {v}")
    failed = len(violations) + (proc.returncode != 0)
    stats.summary = (
        f"acp-ws: {stats.prompts:,} prompts over {connections} connections, "
        f"{stats.answered:,} answered, {stats.cancels:,} cancels, {stats.drops:,} drops, "
        f"{len(pool):,} sessions; {len(violations):,} violation"
        f"{'s' if len(violations) != 1 else ''}"
        + ("" if proc.returncode == 0 else f"; server exit {proc.returncode}")
    )
    return (1 if failed else 0), stats.summary


async def drain(stream: trio.abc.ReceiveStream) -> None:
    """Read the server's log so it never blocks writing it (the text is not needed)."""
    while await stream.receive_some(65536):
        pass


async def first_line(stream: trio.abc.ReceiveStream) -> str:
    data = b""
    while b"\n" not in data:
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise RuntimeError(f"rawtrio acp --ws ended: {data.decode(errors='replace')}")
        data += chunk
    return data.split(b"\n", 1)[0].decode()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m stress.acp_ws", description=__doc__)
    p.add_argument("--budget", type=float, default=30.0, help="seconds of traffic (default 30)")
    p.add_argument("--connections", type=int, default=4, help="client connections (default 4)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.budget <= 0 or args.connections < 1:
        p.error("--budget must be > 0 and --connections >= 1")
    started = time.monotonic()
    code, summary = trio.run(run, args.budget, args.connections, args.seed)
    print(f"took {time.monotonic() - started:.1f} s")
    print(summary, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
