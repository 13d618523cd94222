"""Run a child process in its own process group, and stop the whole group when asked.

Used by every tool that starts a program (bash now; hooks and user tools later). The child
gets stdin from /dev/null (nothing can wait for a keyboard), stdout and stderr merged into
one pipe that is read as it arrives, and `RAWTRIO_SESSION=<session id>`,
`RAWTRIO_RUNTIME=<this process's marker>` and `RAWTRIO_CALL=<call marker>` in its
environment, so that descendants which escape the group can later be attributed to their
session, runtime and call.

How a run ends:

- **exit** — the group leader exited. Output still in the pipe is drained briefly; any
  group member left behind (a stray `cmd &`) is stopped like on a cancel, so nothing a call
  started outlives it.
- **timeout** — `timeout_s` passed. The group is stopped and the result is returned.
- **cancel** — `trio.Cancelled` (or any other exception) reached us. The group is stopped,
  `watch.result` is filled in, and the exception propagates.

Stopping a group means SIGTERM to the group, up to `grace_s` for the leader to exit and the
other members to die, SIGKILL to the group if anything is left, then reaping the leader with
the trio `Process`'s own `wait()` (never `waitpid(-1)`, which would steal other children's
statuses). It runs in a shielded scope bounded by `CLEANUP_DEADLINE_S`, while the pipe keeps
being read so a child that prints on SIGTERM cannot block on a full pipe.

Lifetime policy: no process rawtrio starts — tool, hook, MCP server, and whatever they
start — outlives the session that started it, nor rawtrio itself by more than about a
second however rawtrio ends:

- a call, hook or server ends its group and escaped descendants when it ends (above);
- a closing session sweeps what still carries its `RAWTRIO_SESSION` marker
  (`subreaper.end_session_processes`);
- should rawtrio die without cleaning up (`kill -9`, the OOM killer), the runtime's
  watchdog, to which every group is registered here, ends the registered groups and every
  process carrying this process's `RAWTRIO_RUNTIME` marker (`watchdog.py`);
- should the watchdog have died too, the next rawtrio opening the same state directory
  ends what dead runtimes recorded there left (the sweep at start, `watchdog.py`).

Zombies: orphaned members are reparented to PID 1 (or a subreaper), which may be slow to
reap them — some container inits never do. A member counts as alive only while it is not a
zombie (checked in /proc on Linux), so a dead-but-unreaped grandchild does not cost the
whole grace period.
"""

from __future__ import annotations

import codecs
import enum
import fnmatch
import math
import os
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S, DEFAULT_SIGTERM_GRACE_S, DEFAULT_TOOL_OUTPUT_CAP
from rawtrio.groups import collapse_group
from rawtrio.processes.bounded_output import BoundedOutput
from rawtrio.processes.subreaper import CALL_ENV_VAR as CALL_ENV_VAR
from rawtrio.processes.subreaper import SESSION_ENV_VAR as SESSION_ENV_VAR
from rawtrio.processes.subreaper import (
    is_alive,
    marked_processes,
    process_state,
    reap_if_child,
    signal_pids,
)
from rawtrio.processes.watchdog import RUNTIME_ENV_VAR, WATCHDOG, runtime_marker

_READ_SIZE: Final = 65536
#: How long to wait for the pipe's end of file once the group is done or stopped.
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


def child_environment(
    base: Mapping[str, str] | None,
    *,
    session_id: str,
    strip: Iterable[str] = (),
    call_marker: str | None = None,
) -> dict[str, str]:
    """The environment for a child: `base` (default os.environ) minus the variables named
    in `strip` (shell-style patterns such as `*_API_KEY` allowed), plus the markers
    (session, runtime, call)."""
    env = dict(os.environ if base is None else base)
    patterns = tuple(strip)
    for name in list(env):
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            del env[name]
    env[SESSION_ENV_VAR] = session_id
    env[RUNTIME_ENV_VAR] = runtime_marker()
    if call_marker is not None:
        env[CALL_ENV_VAR] = call_marker
    return env


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
    """Run `argv` to completion or timeout; see the module docstring for the endings.

    `call_marker` (default: a fresh random one) is put in the child's environment as
    `RAWTRIO_CALL`; descendants carrying it that escaped the group are ended with it.
    `on_started` is called once the process exists (e.g. a `task_status.started`).
    Raises OSError when the program cannot be started (missing program or cwd).
    """
    watch = watch if watch is not None else ProcessWatch()
    marker = call_marker if call_marker is not None else uuid.uuid4().hex
    output = BoundedOutput(output_cap)
    WATCHDOG.ensure_started()
    proc = await trio.lowlevel.open_process(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=child_environment(env, session_id=session_id, strip=strip_env, call_marker=marker),
        start_new_session=True,
    )
    # No checkpoint between the start and the `try`: a cancel cannot leak the process.
    WATCHDOG.register(proc.pid)
    run = _GroupRun(proc, output, on_output, grace_s, marker)
    watch.pid, watch.started_at, watch.output = proc.pid, run.started_at, output
    ended_by = EndedBy.CANCEL  # unless the wait below finishes
    try:
        if on_started is not None:
            on_started()
        with trio.move_on_after(math.inf if timeout_s is None else timeout_s) as timeout:
            await run.until_leader_exits()
        # The leader may have exited just before the deadline cut the drain short.
        timed_out = timeout.cancelled_caught and proc.returncode is None
        ended_by = EndedBy.TIMEOUT if timed_out else EndedBy.EXIT
    finally:
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            await run.stop_group()
        run.unregister_if_gone()
        watch.result = run.result(ended_by)
    return watch.result


class _GroupRun:
    def __init__(
        self,
        proc: trio.Process,
        output: BoundedOutput,
        on_output: Callable[[str], None] | None,
        grace_s: float,
        marker: str,
    ) -> None:
        assert proc.stdout is not None
        self.marker = marker
        #: Marked processes outside the group's reach (escaped with setsid), once seen.
        self.escaped: set[int] = set()
        self.proc = proc
        self.pgid = proc.pid  # start_new_session: the leader's pid is the group id
        self.stdout = proc.stdout
        self.output = output
        self.on_output = on_output
        self.grace_s = grace_s
        self.started_at = trio.current_time()
        self.eof = trio.Event()
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.sigterm_sent = False
        self.killed = False

    async def read_output(self) -> None:
        """Read the pipe until end of file. Safe to restart after a cancel: a cancelled
        `receive_some` loses no data."""
        while not self.eof.is_set():
            data = await self.stdout.receive_some(_READ_SIZE)
            if not data:
                self.eof.set()
                self._emit(self.decoder.decode(b"", final=True))
                return
            self.output.feed(data)
            self._emit(self.decoder.decode(data))

    def _emit(self, text: str) -> None:
        if self.on_output is not None and text:
            self.on_output(text)

    async def until_leader_exits(self) -> None:
        with collapse_group():
            await self._until_leader_exits()

    async def _until_leader_exits(self) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.read_output)
            await self.proc.wait()
            with trio.move_on_after(_DRAIN_S):
                await self.eof.wait()
            nursery.cancel_scope.cancel(reason="process exited; output drained")

    async def stop_group(self) -> None:
        """SIGTERM, grace, SIGKILL, reap; reading the pipe all along. Call shielded."""
        async with trio.open_nursery() as nursery:
            if not self.eof.is_set():
                nursery.start_soon(self.read_output)
            self._find_escaped()
            if self.proc.returncode is None or self._members_alive():
                self.sigterm_sent = self._signal_group(signal.SIGTERM)
                with trio.move_on_after(self.grace_s):
                    await self.proc.wait()
                    await self._until_members_gone()
                self._find_escaped()
                if self.proc.returncode is None or self._members_alive():
                    self.killed = self._signal_group(signal.SIGKILL)
            await self.proc.wait()
            with trio.move_on_after(self.grace_s):
                await self._until_members_gone()  # SIGKILLed escapees take a moment
            reap_if_child(self.escaped)
            with trio.move_on_after(_DRAIN_S):
                await self.eof.wait()
            nursery.cancel_scope.cancel(reason="process group stopped")
        await self.stdout.aclose()

    def unregister_if_gone(self) -> None:
        """Tell the watchdog the group is gone, unless the stop could not finish (then the
        watchdog still ends the group should rawtrio die)."""
        if self.proc.returncode is not None and not self._members_alive():
            WATCHDOG.unregister(self.pgid)

    async def _until_members_gone(self) -> None:
        # Polling: there is no event for "the last member of a process group died".
        while True:
            if not self._members_alive():
                return
            await trio.sleep(_POLL_S)

    def _find_escaped(self) -> None:
        """Remember marked processes outside the group (the group is signalled as one, so
        that its members all get the signal at once)."""
        for pid in marked_processes(CALL_ENV_VAR, self.marker):
            state = process_state(pid)
            if pid != self.proc.pid and state is not None and state[2] != self.pgid:
                self.escaped.add(pid)

    def _signal_group(self, sig: signal.Signals) -> bool:
        live = [p for p in self.escaped if is_alive(p)]
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            signal_pids(live, sig)
            return bool(live)
        signal_pids(live, sig)
        return True

    def _members_alive(self) -> bool:
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

    def result(self, ended_by: EndedBy) -> ProcessResult:
        code = self.proc.returncode
        return ProcessResult(
            pid=self.proc.pid,
            exit_code=code if code is not None and code >= 0 else None,
            signal=-code if code is not None and code < 0 else None,
            elapsed_s=trio.current_time() - self.started_at,
            output=self.output.text(),
            total_bytes=self.output.total_bytes,
            elided_bytes=self.output.elided_bytes,
            ended_by=ended_by,
            sigterm_sent=self.sigterm_sent,
            killed=self.killed,
        )


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
