"""`python -m stress.host_attach`: attached turns cancelled from a second client.

A real `rawtrio serve` (its own process, an isolated state directory and runtime directory)
serves the fake model server over its Unix socket. For `--budget` seconds, cases run one
after another; in each, client **A** starts a session and submits a prompt, client **B**
joins the same live session (`_rawtrio/session/start` with `resume`) and sends
`_rawtrio/session/cancel` right after it has seen the turn's k-th event, for every k from 1
to the number of events that prompt's turn has when nobody cancels it (measured first), so
the cancel lands at every point of the turn a second front end can see: before the first
step, mid-stream, while a tool call is announced, started, running, finishing, between
steps. Every other case B joins only after A's submit, asking for the history first
(`since: 0`: the stored events, then the live ones, with no gap and no repeat, even when
the turn has ended by then), and a third client **C** joins and never reads a byte (I8: a
stuck front end never stalls the turn or the cancel).

Checked, for every case:

- **one ending, seen by both** (I2) — A and B each see exactly one `turn_ended` for the turn,
  with the same outcome;
- **the cancel lands** — a cancel sent while a `sleep 2` call runs (B saw it start and not
  finish) ends the turn `cancelled`; otherwise a turn that still completed is counted as
  raced (what was left of it ran faster than the cancel travelled), not flagged;
- **every call answered** (I1, I5) — each tool call committed in the turn has exactly
  one `tool_call_finished`, and a call finished as `cancelled` after it started says so;
- **no gap** (I7, I8) — the events A sees are numbered without a gap from its first one;
- **nothing left running** (I4) — once `turn_ended` is seen, no process carrying the
  session's marker is alive (checked again after a second, for a reap in flight);

and, after the host is stopped with SIGTERM, for every stored session: I1 pairing of the
model context and I2 one stored ending per turn (`stress.acp_ws.check_store`).

Exit status 0 when all held, 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from rawtrio.host.paths import host_paths, read_registration
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from stress.acp_ws import LIVENESS_S, check_store, drain
from stress.acp_ws import SCENARIO as ACP_SCENARIO
from stress.invariants import session_processes

#: A tool call long enough that a cancel sent while it runs always lands before it ends.
LONG_SLEEP_S = 2
_LONG_SLEEP = f"sleep {LONG_SLEEP_S}"
#: acp_ws's script, its short sleep swapped for the long one.
SCENARIO: dict[str, Any] = {
    "rules": [
        *(r for r in ACP_SCENARIO["rules"] if r["match"] != "sleep a bit"),
        {
            "match": "sleep long",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": _LONG_SLEEP}}]},
                {"text": "slept"},
            ],
        },
    ]
}
#: The prompts a case sweeps, in turn.
PROMPTS = ("use a tool", "sleep long", "stream slowly", "say hello")
SIGTERM_GRACE_S = 0.2


@dataclass
class Stats:
    cases: int = 0
    cancelled: int = 0
    raced: int = 0
    late_joins: int = 0
    violations: list[str] = field(default_factory=list)
    summary: str = ""


class Client:
    """One connection to the host: JSON-RPC requests with ids, and the `_rawtrio/event`
    notifications of every session it started or joined, kept per session."""

    def __init__(self, stream: trio.SocketStream, name: str) -> None:
        self.stream = stream
        self.name = name
        self._next = 0
        self._replies: dict[int, Any] = {}
        self._waiters: dict[int, trio.Event] = {}
        self.events: dict[str, list[dict[str, Any]]] = {}
        self._changed = trio.Event()
        self.closed = False

    async def reader(self) -> None:
        buf = b""
        try:
            while True:
                chunk = await self.stream.receive_some(65536)
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        await self._dispatch(json.loads(line))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
        finally:
            self.closed = True
            self._wake()
            for waiter in self._waiters.values():
                waiter.set()

    async def _dispatch(self, msg: dict[str, Any]) -> None:
        if msg.get("method") == "_rawtrio/event":
            params = msg["params"]
            self.events.setdefault(params["sessionId"], []).append(params["event"])
            self._wake()
        elif "method" in msg:
            if "id" in msg:  # a request of the host's: nothing here answers it
                await self._send(
                    {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
                )
        elif isinstance(msg.get("id"), int):
            self._replies[msg["id"]] = msg
            if msg["id"] in self._waiters:
                self._waiters[msg["id"]].set()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _send(self, msg: dict[str, Any]) -> None:
        await self.stream.send_all(json.dumps(msg).encode() + b"\n")

    async def call(self, method: str, params: Any) -> Any:
        self._next += 1
        rid = self._next
        self._waiters[rid] = trio.Event()
        await self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        await self._waiters[rid].wait()
        del self._waiters[rid]
        msg = self._replies.pop(rid, None)
        if msg is None:
            raise ConnectionError(f"{self.name}: the host closed the connection during {method}")
        if "error" in msg:
            raise RuntimeError(f"{self.name}: {method}: {msg['error']}")
        return msg["result"]

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def turn_events(self, sid: str, turn_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events.get(sid, []) if e.get("turn_id") == turn_id]

    async def wait_for(self, sid: str, turn_id: str, count: int) -> list[dict[str, Any]]:
        """Until `count` events of the turn were seen, or it ended, or the link closed."""
        while True:
            seen = self.turn_events(sid, turn_id)
            if len(seen) >= count or self.closed or _ended(seen):
                return seen
            await self._changed.wait()

    async def wait_end(self, sid: str, turn_id: str) -> list[dict[str, Any]]:
        while True:
            seen = self.turn_events(sid, turn_id)
            if _ended(seen) or self.closed:
                return seen
            await self._changed.wait()


def _ended(events: list[dict[str, Any]]) -> bool:
    return any(e["type"] == "turn_ended" for e in events)


@dataclass
class Host:
    socket: str
    flags: dict[str, Any]
    env: dict[str, str]
    cwd: str
    #: What the store check found after the host stopped (`open_host`).
    problems: list[str] = field(default_factory=list)


async def connect(host: Host, name: str, nursery: trio.Nursery) -> Client:
    client = Client(await trio.open_unix_socket(host.socket), name)
    nursery.start_soon(client.reader)
    await client.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": name}})
    return client


def start_params(host: Host, resume: str | None = None, since: int | None = None) -> dict[str, Any]:
    params = {
        "cwd": host.cwd,
        "env": host.env,
        "flags": host.flags,
        "choice": {"continue": False, "resume": resume, "fork": False},
        "headless": True,
    }
    return params if since is None else {**params, "since": since}


async def one_case(host: Host, prompt: str, k: int | None, late_join: bool, stats: Stats) -> int:
    """One session, one turn; B cancels after its k-th event (None: nobody cancels).
    Returns how many events B saw of the turn."""
    where = f"{prompt!r} k={k}{' (late join)' if late_join else ''}"
    async with trio.open_nursery() as nursery:
        a = await connect(host, "A", nursery)
        b = await connect(host, "B", nursery)
        sid = (await a.call("_rawtrio/session/start", start_params(host)))["sessionId"]
        stuck: trio.SocketStream | None = None
        if not late_join:
            await b.call("_rawtrio/session/start", start_params(host, sid))
            stuck = await _stuck_client(host, sid)
        turn_id = (await a.call("_rawtrio/session/submit", {"sessionId": sid, "text": prompt}))[
            "turnId"
        ]
        if late_join:  # the turn may have ended already: B gets the history first
            await b.call("_rawtrio/session/start", start_params(host, sid, since=0))
        before_cancel: list[dict[str, Any]] = []
        with trio.move_on_after(LIVENESS_S) as liveness:
            if k is not None:
                before_cancel = await b.wait_for(sid, turn_id, k)
                reason = f"stress: the second client, after event {k}"
                await b.notify("_rawtrio/session/cancel", {"sessionId": sid, "reason": reason})
            seen_a = await a.wait_end(sid, turn_id)
            seen_b = await b.wait_end(sid, turn_id)
        if liveness.cancelled_caught:
            stats.violations.append(f"{where}: no turn_ended within {LIVENESS_S} s")
            nursery.cancel_scope.cancel(reason="case failed")
            return 0
        _check_case(where, seen_a, seen_b, before_cancel, k, stats)
        await _check_processes(where, sid, stats)
        if stuck is not None:
            await stuck.aclose()
        await a.stream.aclose()
        await b.stream.aclose()
        nursery.cancel_scope.cancel(reason="case done")
    return len(seen_b)


async def _stuck_client(host: Host, sid: str) -> trio.SocketStream:
    """A connection that joins the session and then never reads a byte."""
    stream = await trio.open_unix_socket(host.socket)
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "_rawtrio/session/start",
            "params": start_params(host, sid),
        },
    ]
    await stream.send_all(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
    return stream


def _check_case(
    where: str,
    seen_a: list[dict[str, Any]],
    seen_b: list[dict[str, Any]],
    before_cancel: list[dict[str, Any]],
    k: int | None,
    stats: Stats,
) -> None:
    ends_a = [e for e in seen_a if e["type"] == "turn_ended"]
    ends_b = [e for e in seen_b if e["type"] == "turn_ended"]
    if len(ends_a) != 1 or len(ends_b) != 1:
        stats.violations.append(f"{where}: I2 A saw {len(ends_a)} endings, B {len(ends_b)}")
        return
    outcome = ends_a[0]["outcome"]
    if ends_b[0]["outcome"] != outcome or ends_b[0]["seq"] != ends_a[0]["seq"]:
        stats.violations.append(f"{where}: I2 A and B saw different endings")
    if k is not None:
        if outcome == "cancelled":
            stats.cancelled += 1
        elif _long_call_running(before_cancel):
            stats.violations.append(
                f"{where}: cancelled while a {LONG_SLEEP_S} s call ran, ended {outcome}"
            )
        else:
            stats.raced += 1  # what was left of the turn ran faster than the cancel came
    seqs = [e["seq"] for e in seen_a]
    if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        stats.violations.append(f"{where}: I7 A's events have a gap: {seqs}")
    committed = {c[0] for e in seen_a if e["type"] == "assistant_message" for c in e["tool_calls"]}
    finished = [e for e in seen_a if e["type"] == "tool_call_finished"]
    for call in committed:
        results = [e for e in finished if e["call_id"] == call]
        if len(results) != 1:
            stats.violations.append(f"{where}: I1 call {call} has {len(results)} results")
    for e in finished:
        if e["status"] != "cancelled":
            continue
        honest = (
            "elapsed_s" in (e.get("details") or {}) if e["started"] else "not run" in e["content"]
        )
        if not honest:
            stats.violations.append(f"{where}: I5 cancelled call {e['call_id']}: {e['content']!r}")


def _long_call_running(seen: list[dict[str, Any]]) -> bool:
    """A `sleep LONG_SLEEP_S` call had started and not finished in `seen`."""
    started = {
        e["call_id"]
        for e in seen
        if e["type"] == "tool_call_started" and "sleep" in json.dumps(e["arguments"])
    }
    return bool(started - {e["call_id"] for e in seen if e["type"] == "tool_call_finished"})


async def _check_processes(where: str, sid: str, stats: Stats) -> None:
    left = session_processes(sid)
    if left:  # a reap in flight: look again once
        await trio.sleep(1.0)
        left = session_processes(sid)
    if left:
        stats.violations.append(f"{where}: I4 processes left running after turn_ended: {left}")


async def sweep(host: Host, deadline: float, stats: Stats) -> None:
    lengths: dict[str, int] = {}
    late = False
    while trio.current_time() < deadline:
        for prompt in PROMPTS:
            if prompt not in lengths:
                lengths[prompt] = await one_case(host, prompt, None, False, stats)
                stats.cases += 1
            for k in range(1, lengths[prompt] + 1):
                if trio.current_time() >= deadline:
                    return
                late = not late
                stats.late_joins += late
                await one_case(host, prompt, k, late, stats)
                stats.cases += 1


@contextlib.asynccontextmanager
async def open_host(scenario: dict[str, Any]) -> AsyncIterator[tuple[Host, trio.Process]]:
    """A real `rawtrio serve` in an isolated state and runtime directory, on a fake model
    server playing `scenario`; on the way out it is stopped with SIGTERM (every running turn
    recorded), then its store is checked (`check_store`, I1 and I2). Yields the host and its
    process; `Host.problems` holds what the store check found once the block has ended."""
    with tempfile.TemporaryDirectory(prefix="rawtrio-host-") as tmp:
        root = Path(tmp)
        cwd = root / "work"
        cwd.mkdir()
        runtime_dir = root / "rt"
        runtime_dir.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAWTRIO_", "XDG_"))}
        env.update(
            HOME=str(root),
            RAWTRIO_STATE_DIR=str(root / "state"),
            XDG_CONFIG_HOME=str(root / "config"),
            XDG_RUNTIME_DIR=str(runtime_dir),
            ANTHROPIC_API_KEY="stress",
            RAWTRIO_PERMISSION_MODE="bypass",
        )
        paths = host_paths(root / "state", env)
        async with open_fake_model_server(Scenario.from_dict(scenario)) as server:
            argv = [sys.executable, "-m", "rawtrio", "serve", "--idle-exit", "0"]
            proc = await trio.lowlevel.open_process(
                argv, env=env, cwd=cwd, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
            )
            host = Host(
                socket=str(paths.socket),
                flags={"base_url": server.base_url, "sigterm_grace": SIGTERM_GRACE_S},
                env=env,
                cwd=str(cwd),
            )
            try:
                assert proc.stderr is not None
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(drain, proc.stderr)
                    await _until_registered(paths.registration, proc)
                    yield host, proc
                    proc.terminate()  # records every running turn, then exits 0
                    with trio.move_on_after(LIVENESS_S):
                        await proc.wait()
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        host.problems = await check_store(root / "state" / "sessions.db")


async def run(budget: float) -> tuple[int, str]:
    stats = Stats()
    async with open_host(SCENARIO) as (host, proc):
        await sweep(host, trio.current_time() + budget, stats)
    violations = stats.violations + host.problems
    print(
        f"host-attach stress: {stats.cases} cases, {stats.cancelled} cancelled from the "
        f"second client, {stats.raced} after the turn had ended, {stats.late_joins} late "
        f"joins; host exit {proc.returncode}"
    )
    for v in violations:
        print(f"VIOLATION {v}")
    failed = len(violations) + (proc.returncode != 0)
    stats.summary = (
        f"host-attach: {stats.cases:,} cases, {stats.cancelled:,} turns cancelled from a "
        f"second client; {len(violations):,} violation{'s' if len(violations) != 1 else ''}"
        + ("" if proc.returncode == 0 else f"; host exit {proc.returncode}")
    )
    return (1 if failed else 0), stats.summary


async def _until_registered(registration: Path, proc: trio.Process) -> None:
    with trio.fail_after(LIVENESS_S):
        while read_registration(registration) is None:
            if proc.poll() is not None:
                raise RuntimeError(f"rawtrio serve exited {proc.returncode} before listening")
            await trio.sleep(0.05)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m stress.host_attach", description=__doc__)
    p.add_argument("--budget", type=float, default=30.0, help="seconds of cases (default 30)")
    args = p.parse_args(argv)
    if args.budget <= 0:
        p.error("--budget must be > 0")
    started = time.monotonic()
    code, summary = trio.run(run, args.budget)
    print(f"took {time.monotonic() - started:.1f} s")
    print(summary, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
