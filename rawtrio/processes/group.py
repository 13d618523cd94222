"""A program in its own process group, and the one way rawtrio stops such a group.

`open_process_group(ProcessSpec(...))` starts a program as the leader of a new process
group (a new session: no terminal), registered with the runtime's watchdog from its first
instant. Its stdin is /dev/null or a pipe, its stdout a pipe, its stderr merged into stdout
or a pipe of its own; the spec's environment carries the markers (`environment.py`).
Leaving the block stops the group (unless the block did), closes the pipes and tells the
watchdog the group is gone. `PipeReader` reads one pipe into a `BoundedOutput`, as the data
arrives, and can be restarted after a cancel without losing data.

`ProcessGroup.stop()` is the only TERM → grace → KILL in rawtrio; bash, background jobs,
hooks and MCP stdio servers all end their processes with it:

1. optionally (MCP's lifecycle) close the program's stdin and give it `ask_first_s` to exit
   on its own;
2. find the descendants that left the group (`setsid`, double fork) by the call marker;
3. SIGTERM to the group and to those escapees, up to `grace_s` for the leader to exit and
   every other member to die;
4. SIGKILL to the group and the escapees if anything is left;
5. reap the leader with the trio `Process`'s own `wait()` (never `waitpid(-1)`, which would
   steal other children's statuses), wait up to `grace_s` for SIGKILLed members to go, and
   reap the escapees that are our (re-parented) children, by pid.

It runs in a shielded scope bounded by `CLEANUP_DEADLINE_S`, while the caller's pipe
readers keep reading, so a child that prints on SIGTERM cannot block on a full pipe.

How `run_in_process_group` (the tools' runner: stdin /dev/null, stderr merged) ends:

- **exit** — the group leader exited. Output still in the pipe is drained briefly; any
  group member left behind (a stray `cmd &`) is stopped like on a cancel, so nothing a call
  started outlives it.
- **timeout** — `timeout_s` passed. The group is stopped and the result is returned.
- **cancel** — `trio.Cancelled` (or any other exception) reached us. The group is stopped,
  `watch.result` is filled in, and the exception propagates.

Zombies: orphaned members are reparented to PID 1 (or a subreaper), which may be slow to
reap them — some container inits never do. A member counts as alive only while it is not a
zombie (checked in /proc on Linux), so a dead-but-unreaped grandchild does not cost the
whole grace period.

Exception-group policy: the nurseries here (readers next to a wait or a stop) go through
`rawtrio.groups.collapse_group`, so callers see one plain exception.
"""

from __future__ import annotations

import codecs
import contextlib
import enum
import math
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S, DEFAULT_SIGTERM_GRACE_S, DEFAULT_TOOL_OUTPUT_CAP
from rawtrio.groups import collapse_group
from rawtrio.processes.bounded_output import BoundedOutput
from rawtrio.processes.environment import CALL_ENV_VAR, child_environment, new_call_marker
from rawtrio.processes.subreaper import (
    WAITED_FOR,
    find_marked,
    is_alive,
    process_state,
    reap_if_child,
    signal_pids,
)
from rawtrio.processes.watchdog import WATCHDOG

_READ_SIZE: Final = 65536
#: How long to wait for the pipes' end of file once the group is done or stopped.
_DRAIN_S: Final = 0.1
#: How often to look for surviving group members while the leader is already gone.
_POLL_S: Final = 0.005


class EndedBy(enum.StrEnum):
    EXIT = "exit"
    TIMEOUT = "timeout"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """What happened to one process (group). Exactly one of exit_code / signal is set once
    the leader was reaped; both are None only if it could not be reaped in time."""

    pid: int
    exit_code: int | None
    signal: int | None
    elapsed_s: float
    output: str
    total_bytes: int
    elided_bytes: int
    ended_by: EndedBy
    sigterm_sent: bool
    #: SIGKILL was sent to the group (something outlived SIGTERM and the grace period).
    killed: bool

    @property
    def status_text(self) -> str:
        """ "exit code 2", "killed by signal SIGKILL (9)" or "exit status unknown"."""
        if self.exit_code is not None:
            return f"exit code {self.exit_code}"
        if self.signal is not None:
            return f"killed by signal {signal_name(self.signal)} ({self.signal})"
        return "exit status unknown (the process could not be reaped in time)"

    @property
    def stopped_with(self) -> str | None:
        """ "SIGTERM", "SIGTERM, then SIGKILL", or None when rawtrio sent no signal."""
        if self.killed:
            return "SIGTERM, then SIGKILL" if self.sigterm_sent else "SIGKILL"
        return "SIGTERM" if self.sigterm_sent else None


class ProcessWatch:
    """The caller's view of a run, filled in as it goes.

    A caller that is cancelled while `run_in_process_group` runs reads `result` (set before
    the exception propagates, whenever the process had started) to report honestly what
    happened; `pid`, `started_at` and `partial_output()` are available while it runs.
    """

    def __init__(self) -> None:
        self.pid: int | None = None
        self.started_at: float | None = None
        self.result: ProcessResult | None = None
        self.output: BoundedOutput | None = None

    def partial_output(self) -> str:
        return self.output.text() if self.output is not None else ""


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """What to start. `env` is the child's whole environment (see `child_environment`) and
    must carry `RAWTRIO_CALL=<marker>`: the marker finds the descendants that leave the
    group. ValueError names what is wrong."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    marker: str
    #: SIGTERM → SIGKILL, and how long SIGKILLed members may take to go.
    grace_s: float = DEFAULT_SIGTERM_GRACE_S
    stdin: Literal["null", "pipe"] = "null"
    stderr: Literal["stdout", "pipe"] = "stdout"

    def __post_init__(self) -> None:
        if not self.argv:
            raise ValueError("ProcessSpec.argv is empty: name the program to run")
        if not self.marker:
            raise ValueError("ProcessSpec.marker is empty")
        if self.env.get(CALL_ENV_VAR) != self.marker:
            raise ValueError(
                f"ProcessSpec.env must carry {CALL_ENV_VAR}={self.marker!r} "
                f"(found {self.env.get(CALL_ENV_VAR)!r}); build it with child_environment"
            )
        if not self.grace_s >= 0:
            raise ValueError(f"ProcessSpec.grace_s must be >= 0 seconds, not {self.grace_s!r}")


class PipeReader:
    """Reads one pipe until end of file into `output`, passing the text to `on_text` as it
    arrives (decoded as UTF-8, undecodable bytes replaced)."""

    def __init__(
        self,
        stream: trio.abc.ReceiveStream,
        output: BoundedOutput,
        on_text: Callable[[str], None] | None = None,
    ) -> None:
        self.stream = stream
        self.output = output
        self.on_text = on_text
        self.eof = trio.Event()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    async def read(self) -> None:
        """Read until end of file. Safe to restart after a cancel: a cancelled
        `receive_some` loses no data."""
        while not self.eof.is_set():
            data = await self.stream.receive_some(_READ_SIZE)
            if not data:
                self.eof.set()
                self._emit(self._decoder.decode(b"", final=True))
                return
            self.output.feed(data)
            self._emit(self._decoder.decode(data))

    def _emit(self, text: str) -> None:
        if self.on_text is not None and text:
            self.on_text(text)


class ProcessGroup:
    """A started program leading its own process group. Create with `open_process_group`."""

    def __init__(self, proc: trio.Process, spec: ProcessSpec) -> None:
        self.proc = proc
        self.spec = spec
        self.pgid = proc.pid  # start_new_session: the leader's pid is the group id
        self.started_at = trio.current_time()
        #: Marked processes outside the group's reach (escaped with setsid), once seen.
        self.escaped: set[int] = set()
        self.sigterm_sent = False
        #: SIGKILL was sent (something outlived SIGTERM and the grace period).
        self.killed = False
        #: `stop()` ran (to its end or to its deadline).
        self.stop_attempted = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def stdin(self) -> trio.abc.SendStream:
        assert self.proc.stdin is not None, "the spec gave the program no stdin pipe"
        return self.proc.stdin

    @property
    def stdout(self) -> trio.abc.ReceiveStream:
        assert self.proc.stdout is not None
        return self.proc.stdout

    @property
    def stderr(self) -> trio.abc.ReceiveStream:
        assert self.proc.stderr is not None, "the spec merged stderr into stdout"
        return self.proc.stderr

    async def wait(self, readers: Sequence[PipeReader] = ()) -> None:
        """Until the leader exits, with `readers` reading; then up to a moment for their
        end of file (whatever the leader left in the pipes)."""
        with collapse_group():
            async with trio.open_nursery() as nursery:
                for reader in readers:
                    if not reader.eof.is_set():
                        nursery.start_soon(reader.read)
                await self.proc.wait()
                with trio.move_on_after(_DRAIN_S):
                    for reader in readers:
                        await reader.eof.wait()
                nursery.cancel_scope.cancel(reason="process exited; output drained")

    async def stop(self, readers: Sequence[PipeReader] = (), *, ask_first_s: float = 0.0) -> None:
        """The one stop (see the module docstring): with `ask_first_s`, close stdin and
        wait that long for the program to exit on its own; then SIGTERM, grace, SIGKILL,
        reap — group and escaped descendants — with `readers` reading all along. Shielded,
        bounded by `CLEANUP_DEADLINE_S`; safe to call from a cancelled scope."""
        self.stop_attempted = True
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            with collapse_group():
                async with trio.open_nursery() as nursery:
                    for reader in readers:
                        if not reader.eof.is_set():
                            nursery.start_soon(reader.read)
                    if ask_first_s > 0:
                        await self._ask_to_exit(ask_first_s)
                    await self._terminate()
                    with trio.move_on_after(_DRAIN_S):
                        for reader in readers:
                            await reader.eof.wait()
                    nursery.cancel_scope.cancel(reason="process group stopped")

    async def _ask_to_exit(self, seconds: float) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                await self.proc.stdin.aclose()
        with trio.move_on_after(seconds):
            await self.proc.wait()
            await self._until_members_gone()

    async def _terminate(self) -> None:
        await self._find_escaped()
        if self.proc.returncode is None or self.members_alive():
            self.sigterm_sent = self._signal(signal.SIGTERM) or self.sigterm_sent
            with trio.move_on_after(self.spec.grace_s):
                await self.proc.wait()
                await self._until_members_gone()
            await self._find_escaped()
            if self.proc.returncode is None or self.members_alive():
                self.killed = self._signal(signal.SIGKILL) or self.killed
        await self.proc.wait()
        with trio.move_on_after(self.spec.grace_s):
            await self._until_members_gone()  # SIGKILLed escapees take a moment
        reap_if_child(self.escaped)

    def members_alive(self) -> bool:
        """Whether a process of the group or an escaped one, other than a zombie, exists
        (the leader included until it is reaped)."""
        if any(is_alive(p) for p in self.escaped):
            return True
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return _live_member_in_proc(self.pgid)

    async def _until_members_gone(self) -> None:
        # Polling: there is no event for "the last member of a process group died".
        while self.members_alive():  # noqa: ASYNC110
            await trio.sleep(_POLL_S)

    async def _find_escaped(self) -> None:
        """Remember marked processes outside the group (the group is signalled as one, so
        that its members all get the signal at once). The /proc scan is shared with the
        other groups stopping at the same moment (`subreaper.find_marked`)."""
        for pid in await find_marked(CALL_ENV_VAR, self.spec.marker):
            state = process_state(pid)
            if pid != self.proc.pid and state is not None and state[2] != self.pgid:
                self.escaped.add(pid)

    def _signal(self, sig: signal.Signals) -> bool:
        """Signal the group and the live escapees; whether anything was there to get it."""
        live = [p for p in self.escaped if is_alive(p)]
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            signal_pids(live, sig)
            return bool(live)
        signal_pids(live, sig)
        return True

    def result(self, ended_by: EndedBy, output: BoundedOutput) -> ProcessResult:
        code = self.proc.returncode
        return ProcessResult(
            pid=self.proc.pid,
            exit_code=code if code is not None and code >= 0 else None,
            signal=-code if code is not None and code < 0 else None,
            elapsed_s=trio.current_time() - self.started_at,
            output=output.text(),
            total_bytes=output.total_bytes,
            elided_bytes=output.elided_bytes,
            ended_by=ended_by,
            sigterm_sent=self.sigterm_sent,
            killed=self.killed,
        )


@asynccontextmanager
async def open_process_group(spec: ProcessSpec) -> AsyncIterator[ProcessGroup]:
    """Start `spec` in its own process group, registered with the watchdog. Leaving the
    block stops the group (unless the block called `stop()`), closes its pipes and, once
    everything is gone, unregisters it (otherwise the watchdog still ends the group should
    rawtrio die). OSError when the program cannot be started (missing program or cwd)."""
    WATCHDOG.ensure_started()
    proc = await trio.lowlevel.open_process(
        list(spec.argv),
        stdin=subprocess.PIPE if spec.stdin == "pipe" else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if spec.stderr == "pipe" else subprocess.STDOUT,
        cwd=spec.cwd,
        env=dict(spec.env),
        start_new_session=True,
    )
    # No checkpoint between the start and the `try`: a cancel cannot leak the process.
    WATCHDOG.register(proc.pid)
    WAITED_FOR.add(proc.pid)  # its exit status is `proc`'s: no sweep reaps it
    group = ProcessGroup(proc, spec)
    try:
        yield group
    finally:
        try:
            if not group.stop_attempted:
                await group.stop()
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                for pipe in (proc.stdin, proc.stdout, proc.stderr):
                    if pipe is not None:
                        with contextlib.suppress(trio.ClosedResourceError, OSError):
                            await pipe.aclose()
        finally:
            WAITED_FOR.discard(proc.pid)
        if proc.returncode is not None and not group.members_alive():
            WATCHDOG.unregister(group.pgid)


async def run_in_process_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    session_id: str,
    output_cap: int = DEFAULT_TOOL_OUTPUT_CAP,
    grace_s: float = DEFAULT_SIGTERM_GRACE_S,
    timeout_s: float | None = None,
    on_output: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
    strip_env: Iterable[str] = (),
    watch: ProcessWatch | None = None,
    call_marker: str | None = None,
    on_started: Callable[[], None] | None = None,
) -> ProcessResult:
    """Run `argv` (stdin /dev/null, stderr merged into stdout) to completion or timeout;
    see the module docstring for the endings.

    `call_marker` (default: a fresh random one) is put in the child's environment as
    `RAWTRIO_CALL`; descendants carrying it that escaped the group are ended with it.
    `on_started` is called once the process exists (e.g. a `task_status.started`).
    Raises OSError when the program cannot be started (missing program or cwd).
    """
    watch = watch if watch is not None else ProcessWatch()
    marker = call_marker if call_marker is not None else new_call_marker()
    output = BoundedOutput(output_cap)
    environment = child_environment(env, session_id=session_id, strip=strip_env, call_marker=marker)
    spec = ProcessSpec(argv=tuple(argv), cwd=cwd, env=environment, marker=marker, grace_s=grace_s)
    async with open_process_group(spec) as group:
        reader = PipeReader(group.stdout, output, on_output)
        watch.pid, watch.started_at, watch.output = group.pid, group.started_at, output
        ended_by = EndedBy.CANCEL  # unless the wait below finishes
        try:
            if on_started is not None:
                on_started()
            with trio.move_on_after(math.inf if timeout_s is None else timeout_s) as timeout:
                await group.wait([reader])
            # The leader may have exited just before the deadline cut the drain short.
            timed_out = timeout.cancelled_caught and group.proc.returncode is None
            ended_by = EndedBy.TIMEOUT if timed_out else EndedBy.EXIT
        finally:
            await group.stop([reader])
            result = watch.result = group.result(ended_by, output)
    return result


def _live_member_in_proc(pgid: int) -> bool:
    """Scan /proc for a non-zombie process in group `pgid`; True where /proc is missing."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it ended while we looked
        # "pid (comm) state ppid pgrp ..." — comm may contain spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False
