"""`python -m stress.crash`: SIGKILL a real rawtrio process mid-turn, reopen, check I1, I6, I7.

Each run is a fresh temporary directory with a SQLite store. A child process
(`stress.crash_child`) creates a session and runs the turns of a scenario through the
real runtime and SDK against this process's fake model server, saying on stdout what it
has made durable: `tools`, two turns with `bash` calls; `subagents`, one turn whose two
`task` children (one at a time: the other waits for a slot) each stream, wait for an
approval and run a `bash` call. After a seeded random delay from its `ready` line the
parent sends it SIGKILL, checks that no process of the session or of its children still
runs 2 s after the kill (the killed child's watchdog must have ended them; a survivor is
a violation), and then:

1. reads the session's rows with a read-only connection (`before`);
2. reopens the session through the real runtime (`open_runtime(SqliteStore(db))`,
   `runtime.open_session`), which takes the lease and runs crash recovery, and reads the
   rows again (`reopened`);
3. runs a follow-up turn in it against the validating fake server, and reads the rows
   once more (`after`);

and checks them (`stress.crash_checks`): I1 (pairing, the follow-up accepted with HTTP
200 and completed), I6 (cut calls get `outcome_unknown` when their start was recorded and
`cancelled` when not, unfinished turns become `interrupted` with one `turn_ended` each,
no call ran without a recorded start, ran twice or re-ran; the follow-up carries the
recovery note) and I7 (every commit, call start and outcome the child reported, and every
event recorded before one of them, is still there; recovery only appends). A `task`
child's session is snapshotted the same three times (reopening the parent repairs it) and
checked the same way, but for the follow-up, which runs in the parent only.

Children are forked from a fork server (`crash_child.serve`) that has imported everything,
so a kill costs no SDK import. The last line printed is the summary
(`crash: N SIGKILLs, M interrupted turns recovered, S survivors, V violations`).

The scenario, wire and kill moment are drawn per run from `random.Random(f"{seed}:{run}")`:
half of the runs are killed at a uniform random time over the scenario's baseline run
(one per scenario, not killed); the other half 0–2 ms after the child announced its n-th
store write (n random), so kills land inside commits too (a write takes about a
millisecond: a uniform time would rarely hit one). The phase reported is read from the
last line the child wrote (`child …` when it was about a `task` child).
The seed is printed; `--seed S --run K` replays run K (timing differs a little).

Exit status: 0 when every invariant held, 1 on any violation, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Final

import trio

from rawtrio.contracts import ToolStatus
from rawtrio.messages import ProviderKind, ToolResult
from rawtrio.providers import make_provider
from rawtrio.runtime.runtime import open_runtime
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server
from stress.crash_checks import (
    CrashObservation,
    DbSnapshot,
    check_crash,
    check_runs_owned,
    lines_of,
    read_children,
    read_snapshot,
    runs_for,
)
from stress.crash_child import RUNS_FILE, SCENARIOS, SCRIPT, send_request, session_options
from stress.invariants import session_processes
from stress.report import Violation

ROOT: Final = Path(__file__).resolve().parents[1]
WIRES: Final[tuple[ProviderKind, ...]] = ("anthropic", "openai-chat", "openai-responses")
#: Liveness bounds (never performance judgements).
START_LIMIT_S: Final = 60.0
TURN_LIMIT_S: Final = 30.0
#: The requirement: no process rawtrio started runs this long after its `kill -9`.
SURVIVOR_LIMIT_S: Final = 2.0
#: Pause before the scan that confirms no orphan is left (fork → exec takes far less).
ORPHAN_SETTLE_S: Final = 0.1
#: Phases a run of the full budget should land kills in (reported when missing).
EXPECTED_PHASES: Final[dict[str, tuple[str, ...]]] = {
    "tools": ("streaming", "tool running", "writing (commit)"),
    "subagents": ("child streaming", "child tool running", "child permission wait"),
}

_EVENT_PHASES: Final = {
    "step_started": "streaming",
    "text_delta": "streaming",
    "thinking_delta": "streaming",
    "usage": "streaming",
    "tool_call_announced": "streaming tool call",
    "tool_call_started": "tool running",
    "tool_output_delta": "tool running",
    "tool_call_finished": "tool finished",
    "permission_requested": "permission wait",
    "permission_answered": "tool starting",
    "subagent_started": "child starting",
    "subagent_ended": "child ended",
    "user_message": "after commit",
    "assistant_message": "after commit",
    "turn_ended": "between turns",
}
_LINE_PHASES: Final = {
    "ready": "before turn",
    "begun": "turn started",
    "committed": "after commit",
    "started": "tool starting",
    "ended": "between turns",
    "done": "finished (no kill)",
}


def phase_of(lines: Sequence[str]) -> str:
    """Where the child was when it died: read from the last line it wrote — the parent
    session's copies of a `task` child's events (`subagent_event`, and its relayed
    `permission_*`) passed over, a line about the child read as the child's phase."""
    lines = [line for line in lines if not line.endswith(" subagent_event")] or list(lines)
    if not lines:
        return "starting"
    last = lines[-1]
    if len(lines) > 1 and lines[-2].startswith("child ") and last.startswith("event "):
        kind = last.split()[-1]
        if kind.startswith("permission_") and lines[-2].endswith(f" {kind}"):
            last = lines[-2]  # the parent's copy of a child's permission event
    if last.startswith("child "):
        own = last.split(" ", 2)[2:]
        return f"child {phase_of(own)}" if own else "child starting"
    word, _, rest = last.partition(" ")
    if word == "begin":
        return f"writing ({rest})"
    if word == "event":
        kind = rest.split()[-1]
        return _EVENT_PHASES.get(kind, kind)
    return _LINE_PHASES.get(word, word)


def without_child_prefix(line: str) -> str:
    """A line about a `task` child as if it were about the session (`begin commit`)."""
    return line.split(" ", 2)[2] if line.startswith("child ") else line


@dataclass(frozen=True)
class CrashOptions:
    budget_s: float = 60.0
    seed: int = 1
    jobs: int = 4
    wires: tuple[ProviderKind, ...] = WIRES
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    #: Stop after this many runs (None: as many as the budget allows).
    max_runs: int | None = None
    #: Replay only these run numbers.
    only: tuple[int, ...] = ()
    #: Fork the children from a server that imported everything once (else spawn each).
    fork_server: bool = True


@dataclass(frozen=True)
class KillPlan:
    mode: str
    #: Seconds after `ready`, or after the child announced write number `write`, or
    #: after its first line that `after_line` (a regular expression) is found in.
    delay_s: float
    write: int | None = None
    after_line: str | None = None

    def __str__(self) -> str:
        if self.after_line is not None:
            return f"kill {self.delay_s * 1000:.0f} ms after a line like {self.after_line!r}"
        if self.write is None:
            return f"kill {self.delay_s * 1000:.0f} ms after ready"
        return f"kill {self.delay_s * 1000:.1f} ms into store write #{self.write}"


@dataclass
class ChildLog:
    #: (seconds after `ready`, line); lines before `ready` have negative times.
    lines: list[tuple[float, str]] = field(default_factory=list)
    session_id: str | None = None
    returncode: int | None = None
    killed: bool = False
    startup_s: float = 0.0
    stderr: str = ""
    #: `time.monotonic()` when the SIGKILL was sent.
    killed_at: float | None = None

    @property
    def texts(self) -> list[str]:
        return [line for _, line in self.lines]


@dataclass
class CrashRun:
    index: int | None  # None: a baseline
    wire: str
    plan: KillPlan | None  # None: no kill
    scenario: str = "tools"
    phase: str = "starting"
    killed: bool = False
    duration_s: float = 0.0
    violations: list[Violation] = field(default_factory=list)
    #: Interrupted turns and recovered results, the children's included.
    interrupted: int = 0
    results: Counter[str] = field(default_factory=Counter)
    #: `task` children found in the store after the kill (each checked like the parent).
    children: int = 0
    #: Tool processes found running after the kill (then ended by rawtrio's watchdog).
    orphans: int = 0
    #: Processes still running `SURVIVOR_LIMIT_S` after the kill (each is a violation).
    survivors: int = 0
    #: Where the run's time went: "start" (to `ready`), "turns" (to the kill or the end),
    #: "orphans" (waiting for the tool processes to go), "reopen" (recovery + follow-up).
    times: dict[str, float] = field(default_factory=dict)


@dataclass
class Timeline:
    """The baseline run's moments (seconds after `ready`) to draw kill moments from."""

    end_s: float
    #: (start, end) of each store write.
    writes: list[tuple[float, float]]

    @staticmethod
    def of(log: ChildLog) -> Timeline:
        writes: list[tuple[float, float]] = []
        began: float | None = None
        end = 0.0
        for t, raw in log.lines:
            line = without_child_prefix(raw)
            end = max(end, t)
            if line.startswith("begin "):
                began = t
            elif began is not None and line.split(" ", 1)[0] in _LINE_PHASES:
                writes.append((began, t))
                began = None
        return Timeline(end, writes)

    def draw(self, rng: random.Random) -> KillPlan:
        if self.writes and rng.random() < 0.5:
            nth = rng.randrange(len(self.writes)) + 1
            return KillPlan("at a store write", rng.uniform(0.0, 0.002), nth)
        return KillPlan("uniform", rng.uniform(0.0, self.end_s * 1.05))


@dataclass
class CrashReport:
    budget_s: float
    seed: int
    jobs: int
    #: One run without a kill per scenario, and its moments, by scenario.
    baselines: dict[str, CrashRun] = field(default_factory=dict)
    timelines: dict[str, Timeline] = field(default_factory=dict)
    runs: list[CrashRun] = field(default_factory=list)
    elapsed_s: float = 0.0
    error: str | None = None

    @property
    def violations(self) -> list[tuple[CrashRun, Violation]]:
        runs = [*self.baselines.values(), *self.runs]
        return [(r, v) for r in runs for v in r.violations]

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.baselines) and not self.violations


class Child:
    """A crash child as the parent sees it: its pid, output streams and exit status."""

    def __init__(
        self,
        pid: int,
        stdout: trio.abc.ReceiveStream,
        stderr: trio.abc.ReceiveStream,
        process: trio.Process | None = None,
    ) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        #: Set for a child started the plain way; a forked one's exit comes from the server.
        self.process = process
        self.returncode: int | None = None
        self.exited = trio.Event()

    def exit(self, returncode: int) -> None:
        self.returncode = returncode
        self.exited.set()

    async def wait(self) -> None:
        if self.process is not None:
            self.exit(await self.process.wait())
        await self.exited.wait()

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    async def aclose(self) -> None:
        for stream in (self.stdout, self.stderr):
            await stream.aclose()


class ForkServer:
    """Children forked by `python -m stress.crash_child --serve` (see `crash_child.serve`):
    the imports (1–3 s of CPU for the SDKs) are paid once, not once per kill."""

    def __init__(self, process: trio.Process, control: socket.socket) -> None:
        self.process = process
        self.control = control
        self.ids = itertools.count(1)
        self.forked: dict[int, trio.MemorySendChannel[int]] = {}
        self.children: dict[int, Child] = {}
        self.serving = trio.Event()

    async def read_replies(self) -> None:
        assert self.process.stdout is not None
        buffer = b""
        while chunk := await self.process.stdout.receive_some():
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                reply = json.loads(line)
                if "serving" in reply:
                    self.serving.set()
                elif "id" in reply:
                    self.forked.pop(reply["id"]).send_nowait(reply["pid"])
                elif reply["pid"] in self.children:
                    self.children.pop(reply["pid"]).exit(reply["status"])
        for child in self.children.values():
            child.exit(-signal.SIGKILL)

    async def spawn(self, args: Sequence[str]) -> Child:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request_id = next(self.ids)
        send, receive = trio.open_memory_channel[int](1)
        self.forked[request_id] = send
        try:
            send_request(self.control, [request_id, *args], [out_w, err_w])
        finally:
            os.close(out_w)
            os.close(err_w)
        stdout, stderr = trio.lowlevel.FdStream(out_r), trio.lowlevel.FdStream(err_r)
        with trio.fail_after(START_LIMIT_S):
            pid = await receive.receive()
        child = self.children[pid] = Child(pid, stdout, stderr)
        return child


@asynccontextmanager
async def open_fork_server(scenarios: Sequence[str] = ()) -> AsyncIterator[ForkServer]:
    """The fork server, warmed up for `scenarios` (empty: all)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "stress.crash_child", "--serve", *scenarios],
            cwd=ROOT,
            stdin=theirs.fileno(),
            stdout=subprocess.PIPE,
        )
    finally:
        theirs.close()
    server = ForkServer(process, ours)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.read_replies)
            with trio.fail_after(START_LIMIT_S):
                await server.serving.wait()
            yield server
            ours.close()  # the server exits on end of file
            with trio.move_on_after(TURN_LIMIT_S):
                await process.wait()
            nursery.cancel_scope.cancel(reason="fork server stopped")
    finally:
        ours.close()
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            assert process.stdout is not None
            await process.stdout.aclose()


@asynccontextmanager
async def _no_fork_server() -> AsyncIterator[None]:
    yield None


async def spawn_child(args: Sequence[str]) -> Child:
    """A child started the plain way (`--no-fork-server`)."""
    argv = [sys.executable, "-m", "stress.crash_child", *args]
    process = await trio.lowlevel.open_process(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    assert process.stdout is not None
    assert process.stderr is not None
    return Child(process.pid, process.stdout, process.stderr, process)


async def run_child(
    db: Path,
    cwd: Path,
    wire: ProviderKind,
    server: FakeModelServer,
    plan: KillPlan | None,
    forks: ForkServer | None = None,
    scenario: str = "tools",
) -> ChildLog:
    """Run the child and SIGKILL it as `plan` says (None: let it finish)."""
    base_url = server.base_url if wire == "anthropic" else server.openai_base_url
    args = [str(db), str(cwd), wire, base_url, scenario]
    log = ChildLog()
    started = time.monotonic()
    ready_at = started
    ready = trio.Event()
    anchor = trio.Event()
    writes = 0
    child = await (forks.spawn(args) if forks is not None else spawn_child(args))

    async def read_lines(stream: trio.abc.ReceiveStream) -> None:
        nonlocal ready_at, writes
        buffer = b""
        while chunk := await stream.receive_some():
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            now = time.monotonic()
            for raw in complete:
                line = raw.decode()
                if line.startswith("ready ") and log.session_id is None:
                    log.session_id = line.split()[1]
                    ready_at = now
                    log.startup_s = now - started
                    ready.set()
                log.lines.append((now - ready_at if log.session_id else -1.0, line))
                if without_child_prefix(line).startswith("begin "):
                    writes += 1
                    if plan is not None and writes == plan.write:
                        anchor.set()
                after = plan.after_line if plan is not None else None
                if after is not None and re.search(after, line):
                    anchor.set()
        ready.set()  # the child is gone, ready or not
        anchor.set()

    async def read_stderr(stream: trio.abc.ReceiveStream) -> None:
        data = b""
        while chunk := await stream.receive_some():
            data = (data + chunk)[-4000:]
        log.stderr = data.decode(errors="replace")

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_lines, child.stdout)
            nursery.start_soon(read_stderr, child.stderr)
            with trio.move_on_after(START_LIMIT_S):
                await ready.wait()
            if plan is not None and log.session_id is not None:
                if plan.write is not None or plan.after_line is not None:
                    await anchor.wait()
                await trio.sleep(plan.delay_s)
            if child.returncode is None and (plan is not None or log.session_id is None):
                child.kill()
                log.killed_at = time.monotonic()
            with trio.move_on_after(TURN_LIMIT_S):
                await child.wait()
    finally:
        with trio.CancelScope(shield=True):
            if child.returncode is None:
                child.kill()
                await child.wait()
            await child.aclose()
    log.returncode = child.returncode
    log.killed = child.returncode == -signal.SIGKILL
    return log


async def wait_for_orphans(
    session_id: str | Sequence[str], killed_at: float
) -> tuple[int, list[str]]:
    """Wait for the tool processes the killed child left to be ended (by its watchdog):
    those of `session_id`, or of each of several sessions (a parent and its children).

    Returns (how many were seen, the command lines of those still running
    `SURVIVOR_LIMIT_S` after the kill, which are then killed here). A process the child
    forked just before it died shows the child's environment (without the session marker)
    until it execs, so the scan is repeated after a pause until one finds nothing.
    """
    ids = [session_id] if isinstance(session_id, str) else list(session_id)

    def scan() -> list[int]:
        return [pid for one in ids for pid in session_processes(one)]

    seen: set[int] = set()
    found: list[int] = []
    deadline = killed_at + SURVIVOR_LIMIT_S - time.monotonic()
    with trio.move_on_after(max(0.0, deadline)):
        while True:
            found = await trio.to_thread.run_sync(scan)
            seen.update(found)
            if not found:
                await trio.sleep(ORPHAN_SETTLE_S)
                found = await trio.to_thread.run_sync(scan)
                seen.update(found)
                if not found:
                    break
            await trio.sleep(0.01)
    survivors = await trio.to_thread.run_sync(scan) if found else []
    described = command_lines(survivors)
    for pid in survivors:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(seen), described


def command_lines(pids: Sequence[int]) -> list[str]:
    lines = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                lines.append(f"{pid}: " + f.read().replace(b"\0", b" ").decode().strip())
        except OSError:
            lines.append(f"{pid}: (gone)")
    return lines


#: The commands the tool processes run; only zombies of these are reaped here.
_TOOL_COMMANDS: Final = frozenset({b"bash", b"sh", b"sleep"})


def reap_zombies() -> None:
    """Reap exited tool processes re-parented to this process.

    Only zombies of the tool commands are touched: the children trio awaits (the crash
    children, Python) are never taken from it.
    """
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.find(b"(") + 1 : stat.rfind(b")")]
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields[:1] == [b"Z"] and int(fields[1]) == me and comm in _TOOL_COMMANDS:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(name), os.WNOHANG)


async def run_one(
    server: FakeModelServer,
    tmp: Path,
    run: CrashRun,
    wire: ProviderKind,
    forks: ForkServer | None = None,
) -> ChildLog | None:
    """One child, killed (or not, for the baseline), then reopened and checked."""
    started = time.monotonic()
    db, cwd = tmp / "sessions.db", tmp / "work"
    await trio.Path(cwd).mkdir(parents=True)
    try:
        log = await run_child(db, cwd, wire, server, run.plan, forks, run.scenario)
    except Exception as exc:
        run.violations.append(Violation("harness", f"the child could not run: {exc!r}"))
        return None
    run.phase = phase_of(log.texts)
    run.killed = log.killed
    ended_at = log.killed_at or time.monotonic()
    run.times["start"] = log.startup_s
    run.times["turns"] = ended_at - started - log.startup_s
    if log.session_id is None:
        tail = log.stderr.strip().splitlines()[-3:]
        run.violations.append(
            Violation("harness", f"the child never got ready (exit {log.returncode}): {tail}")
        )
        return log
    if not log.killed and log.returncode != 0:
        tail = log.stderr.strip().splitlines()[-3:]
        run.violations.append(Violation("harness", f"the child failed ({log.returncode}): {tail}"))
    children = await trio.to_thread.run_sync(read_children, db, log.session_id)
    run.children = len(children)
    run.orphans, survivors = await wait_for_orphans([log.session_id, *children], ended_at)
    run.times["orphans"] = time.monotonic() - ended_at
    reopen_at = time.monotonic()
    run.survivors = len(survivors)
    if survivors:
        run.violations.append(
            Violation(
                "processes",
                f"{len(survivors)} process(es) still ran {SURVIVOR_LIMIT_S:g} s after the kill: "
                + "; ".join(survivors),
            )
        )
    reap_zombies()
    try:
        seen = await reopen(server, db, cwd, wire, log, f"crash-followup {run.index}", run.scenario)
    except Exception as exc:  # a crash of the reopen is a finding, not the end of the suite
        run.violations.append(Violation("I6", f"the reopen raised {type(exc).__name__}: {exc}"))
        return log
    run.times["reopen"] = time.monotonic() - reopen_at
    for observation in seen.family:
        run.violations += check_crash(observation)
        before = observation.before
        run.interrupted += sum(1 for o in before.turns.values() if o is None)
        for msg in observation.reopened.messages()[len(before.context) :]:
            if isinstance(msg, ToolResult):
                run.results[msg.status.value] += 1
    run.violations += check_runs_owned(seen.family, seen.runs_before, seen.runs_after)
    run.duration_s = time.monotonic() - started
    return log


@dataclass(frozen=True)
class Reopened:
    """What a reopen saw: the session's observation first, then each child's; the runs
    file (every session's calls) before the reopen and at the end."""

    family: list[CrashObservation]
    runs_before: list[str]
    runs_after: list[str]


async def reopen(
    server: FakeModelServer,
    db: Path,
    cwd: Path,
    wire: ProviderKind,
    log: ChildLog,
    prompt: str,
    scenario: str = "tools",
) -> Reopened:
    """Reopen the session, run the follow-up; what was seen of it, then of each of its
    `task` children (repaired by the parent's reopen; no follow-up runs in them)."""
    assert log.session_id is not None
    session_id = log.session_id
    children = await trio.to_thread.run_sync(read_children, db, session_id)
    runs = trio.Path(cwd / RUNS_FILE)
    runs_before = (await runs.read_text()).splitlines() if await runs.exists() else []

    async def snapshots() -> dict[str, DbSnapshot]:
        ids = [session_id, *children]
        return {i: await trio.to_thread.run_sync(read_snapshot, db, i) for i in ids}

    before = await snapshots()
    base_url = server.base_url if wire == "anthropic" else server.openai_base_url
    seen = len(server.requests)
    outcome: str | None = "hung"
    options = session_options(cwd, wire, base_url, scenario)
    async with SqliteStore(db) as store, open_runtime(store, retention_days=0) as runtime:
        session = await runtime.open_session(session_id, options)
        context = list(session.context)
        reopened = await snapshots()
        with trio.move_on_after(TURN_LIMIT_S):
            outcome = (await session.run_turn(prompt)).outcome.value
        context_after = list(session.context)
    after = await snapshots()
    runs_after = (await runs.read_text()).splitlines() if await runs.exists() else []
    followups = [r for r in server.requests[seen:] if r.user_text and prompt in r.user_text]
    parent_own = before[session_id].messages()
    family = [
        CrashObservation(
            lines=lines_of(log.texts, None),
            before=before[session_id],
            reopened=reopened[session_id],
            after=after[session_id],
            context=context,
            runs_before=runs_for(parent_own, runs_before),
            runs_after=runs_for(parent_own, runs_after),
            followup_outcome=outcome,
            followup_statuses=[r.status for r in followups],
            followup_user_texts=[r.user_text or "" for r in followups],
            context_after_followup=context_after,
        )
    ]
    for child in children:
        own = before[child].messages()
        family.append(
            CrashObservation(
                lines=lines_of(log.texts, child),
                before=before[child],
                reopened=reopened[child],
                after=after[child],
                context=reopened[child].messages(),
                runs_before=runs_for(own, runs_before),
                runs_after=runs_for(own, runs_after),
                followup_outcome=None,
                followup_statuses=[],
                followup_user_texts=[],
                context_after_followup=after[child].messages(),
                followup=False,
                label=f"child {child}",
            )
        )
    return Reopened(family, runs_before, runs_after)


async def run_crash(options: CrashOptions) -> CrashReport:
    """Kill and reopen as many runs as `options.budget_s` allows; never raises on findings."""
    report = CrashReport(options.budget_s, options.seed, options.jobs)
    started = time.monotonic()
    deadline = trio.current_time() + options.budget_s
    async with (
        open_fake_model_server(Scenario.from_dict(SCRIPT)) as server,
        trio.open_nursery() as nursery,
    ):
        # The reopens build SDK clients here: import the SDKs while the children start.
        nursery.start_soon(partial(trio.to_thread.run_sync, import_providers))
        serving = open_fork_server(options.scenarios) if options.fork_server else None
        async with serving or _no_fork_server() as forks:
            await _run_all(options, report, server, forks, deadline)
    report.runs.sort(key=lambda r: r.index or 0)
    report.elapsed_s = time.monotonic() - started
    return report


def import_providers() -> None:
    from stress.crash_child import WIRES as ALL_WIRES

    for wire in ALL_WIRES:
        make_provider(session_options(Path("/"), wire, "http://127.0.0.1:9").provider)


async def _run_all(
    options: CrashOptions,
    report: CrashReport,
    server: FakeModelServer,
    forks: ForkServer | None,
    deadline: float,
) -> None:
    """A baseline per scenario, then the killed runs, `options.jobs` at a time, until the
    deadline."""
    with tempfile.TemporaryDirectory(prefix="rawtrio-crash-") as tmp_dir:
        tmp = Path(tmp_dir)
        durations: list[float] = []

        async def baseline_of(scenario: str) -> None:
            baseline = CrashRun(None, "openai-chat", None, scenario)
            where = tmp / f"baseline-{scenario}"
            log = await run_one(server, where, baseline, "openai-chat", forks)
            report.baselines[scenario] = baseline
            if log is None or log.session_id is None or baseline.violations:
                report.error = f"the {scenario} baseline run (no kill) failed"
                return
            report.timelines[scenario] = Timeline.of(log)
            durations.append(baseline.duration_s)

        async with trio.open_nursery() as nursery:  # side by side, like the runs
            for scenario in options.scenarios:
                nursery.start_soon(baseline_of, scenario)
        if report.error is not None:
            return
        report.baselines = {sc: report.baselines[sc] for sc in options.scenarios}
        numbers = iter(options.only) if options.only else itertools.count(1)
        started_runs = 0

        async def worker() -> None:
            nonlocal started_runs
            for index in numbers:
                if options.max_runs is not None and started_runs >= options.max_runs:
                    return
                expected = sum(durations[-6:]) / len(durations[-6:])
                late = trio.current_time() + expected > deadline
                if late and started_runs and not options.only:
                    return  # at least one kill, however small the budget
                started_runs += 1
                rng = random.Random(f"{options.seed}:{index}")
                wire = rng.choice(options.wires)
                scenario = rng.choice(options.scenarios)
                run = CrashRun(index, wire, report.timelines[scenario].draw(rng), scenario)
                await run_one(server, tmp / f"run{index}", run, wire, forks)
                durations.append(run.duration_s or expected)
                report.runs.append(run)

        async with trio.open_nursery() as nursery:
            for _ in range(max(1, options.jobs)):
                nursery.start_soon(worker)


def format_report(report: CrashReport) -> str:
    lines = [
        f"rawtrio crash stress: budget {report.budget_s:g} s, seed {report.seed} "
        f"(replay: python -m stress.crash --seed {report.seed}), {report.jobs} concurrent run(s)"
    ]
    for scenario, b in report.baselines.items():
        t = report.timelines.get(scenario)
        if t is not None:
            lines.append(
                f"   baseline {scenario} (no kill): turns {t.end_s:.2f} s after ready, "
                f"{len(t.writes)} store writes, {'ok' if not b.violations else 'FAILED'}"
            )
    runs = report.runs
    killed = sum(r.killed for r in runs)
    lines.append(f"   runs: {len(runs)} ({killed} killed, {len(runs) - killed} finished first)")
    if runs:
        wires = Counter(r.wire for r in runs)
        scenarios = Counter(r.scenario for r in runs)
        modes = Counter(r.plan.mode for r in runs if r.plan)
        phases = Counter(r.phase for r in runs)
        lines.append("   wires: " + ", ".join(f"{w} {n}" for w, n in sorted(wires.items())))
        lines.append("   scenarios: " + ", ".join(f"{w} {n}" for w, n in sorted(scenarios.items())))
        lines.append("   kill moments: " + ", ".join(f"{m} {n}" for m, n in sorted(modes.items())))
        lines.append("   phases: " + ", ".join(f"{p} {n}" for p, n in phases.most_common()))
        results: Counter[str] = Counter()
        for r in runs:
            results.update(r.results)
        lines.append(
            f"   recovered: {sum(r.interrupted for r in runs)} interrupted turn(s); results "
            f"{results[ToolStatus.OUTCOME_UNKNOWN.value]} outcome_unknown, "
            f"{results[ToolStatus.CANCELLED.value]} cancelled "
            f"(children's included: {sum(r.children for r in runs)} child session(s) checked)"
        )
        lines.append(
            f"   processes: {sum(r.orphans for r in runs)} tool process(es) found running after "
            f"a kill, {sum(r.survivors for r in runs)} still running "
            f"{SURVIVOR_LIMIT_S:g} s after it"
        )
        spent: Counter[str] = Counter()
        for r in runs:
            spent.update(r.times)
        lines.append(
            "   time per run (mean): "
            + ", ".join(f"{k} {v / len(runs):.2f} s" for k, v in spent.items())
        )
        missing = [p for sc in scenarios for p in EXPECTED_PHASES[sc] if p not in phases]
        if missing and len(runs) >= 12 * len(scenarios):
            lines.append(f"   note: no kill landed in {', '.join(missing)} (a larger budget helps)")
    if report.error:
        lines.append(f"   FAIL {report.error}")
    for run, v in report.violations:
        where = "baseline" if run.index is None else f"run {run.index}"
        lines.append(
            f"   FAIL {v.invariant} {where} ({run.scenario}, {run.wire}, {run.plan}, "
            f"{run.phase}): {v.text}"
        )
    rate = len(runs) / report.elapsed_s if report.elapsed_s else 0.0
    verdict = (
        "all invariants held" if report.ok else f"FAILED ({len(report.violations)} finding(s))"
    )
    lines.append(f"== {len(runs)} runs in {report.elapsed_s:.1f} s ({rate:.2f} runs/s); {verdict}")
    lines.append(summary_line(report))
    return "\n".join(lines)


def summary_line(report: CrashReport) -> str:
    """The suite's one-line summary, printed last."""
    runs = report.runs
    everything = [*report.baselines.values(), *runs]
    return (
        f"crash: {sum(r.killed for r in runs)} SIGKILLs, "
        f"{sum(r.interrupted for r in runs)} interrupted turns recovered, "
        f"{sum(r.survivors for r in everything)} survivors, "
        f"{len(report.violations) + (report.error is not None)} violations"
    )


def parse_args(argv: Sequence[str] | None = None) -> CrashOptions:
    parser = argparse.ArgumentParser(
        prog="python -m stress.crash",
        description="SIGKILL a rawtrio process at random points of turns with tools and "
        "subagents, reopen the session, and check invariants I1, I6, I7 on it and its children.",
    )
    parser.add_argument("--budget", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="seed (default: a new one)")
    parser.add_argument("--jobs", type=int, default=4, help="runs at the same time (default 4)")
    parser.add_argument("--wire", action="append", choices=WIRES, help="repeatable; default all")
    parser.add_argument(
        "--scenario",
        action="append",
        choices=tuple(SCENARIOS),
        help="`tools` (two turns of bash calls) or `subagents` (task children); repeatable; "
        "default all (drawn per run)",
    )
    parser.add_argument("--max-runs", type=int, default=None, help="stop after N runs")
    parser.add_argument(
        "--no-fork-server",
        action="store_true",
        help="start each child as a new program (slower: it imports everything each time)",
    )
    parser.add_argument(
        "--run", type=int, action="append", metavar="K", help="replay only run K (repeatable)"
    )
    args = parser.parse_args(argv)
    if args.budget <= 0 or args.jobs < 1 or (args.max_runs is not None and args.max_runs < 1):
        parser.error("--budget, --jobs and --max-runs must be positive")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    return CrashOptions(
        budget_s=args.budget,
        seed=seed,
        jobs=args.jobs,
        wires=tuple(args.wire or WIRES),
        scenarios=tuple(args.scenario or SCENARIOS),
        max_runs=args.max_runs,
        only=tuple(args.run or ()),
        fork_server=not args.no_fork_server,
    )


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    print(f"rawtrio crash stress: seed {options.seed}", flush=True)
    # The OpenAI SDK's streams leave exhausted async generators to the GC (STACK-NOTES.md).
    warnings.filterwarnings(
        "ignore", message="Async generator .* was garbage collected", category=ResourceWarning
    )
    report = trio.run(partial(run_crash, options))
    print(format_report(report), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
