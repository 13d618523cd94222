"""No process rawtrio started outlives it: the runtime's watchdog and the sweep at start.

A session ends its processes itself (see `group.py`); that cannot help when rawtrio is
killed outright. Two mechanisms cover that case:

- **The watchdog** (`watchdog_process.py`), one small process per rawtrio process, started
  lazily by the first process group a runtime starts (a runtime that runs no command
  starts none; `rawtrio --version` never gets here). rawtrio holds the write end of its
  stdin pipe and registers each process group it starts (`register`) and stops
  (`unregister`). When rawtrio dies, however it dies, the pipe closes and the watchdog
  ends every registered group and every process carrying this process's
  `RAWTRIO_RUNTIME=<marker>` — SIGTERM, `WATCHDOG_GRACE_S`, SIGKILL — then exits. The
  runtime owns it: when the last open runtime closes, the pipe is closed after a `q`
  line and the watchdog, finding nothing left, exits and is reaped.
- **The sweep at start**: each runtime with a state directory records itself in
  `<state dir>/runtimes/<marker>` (pid, process start time, pid namespace) for as long as
  it is open. When a runtime opens, one scan of /proc finds processes whose
  `RAWTRIO_RUNTIME` names a runtime recorded in the same state directory whose process
  is gone (or whose pid now belongs to a younger process); those are ended the same way,
  in the background, and the stale record is removed. Processes of a live rawtrio, or of
  a runtime recorded elsewhere, are never touched. This catches what the watchdog could
  not (the watchdog killed together with rawtrio, a whole container frozen and restored).

Every child gets `RAWTRIO_RUNTIME=<marker>` through `environment.child_environment`,
next to the session and call markers. The same limits as for escaped descendants apply: a
process that clears its environment and leaves its process group cannot be found.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import trio

from rawtrio.private_files import open_private
from rawtrio.processes import watchdog_process
from rawtrio.processes.watchdog_process import end_all, environ_values, start_time

log = logging.getLogger(__name__)

RUNTIME_ENV_VAR: Final = "RAWTRIO_RUNTIME"
#: SIGTERM → SIGKILL for what a dead rawtrio left: nobody waits for their output, and
#: everything must be gone within 2 s of rawtrio's death.
WATCHDOG_GRACE_S: Final = 1.0
#: How long a normal close waits for the watchdog to exit before killing it.
_EXIT_WAIT_S: Final = WATCHDOG_GRACE_S + 2.0
_POLL_S: Final = 0.005
RECORDS_DIR: Final = "runtimes"


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


class Watchdog:
    """This process's watchdog: its marker, the registered groups, the watchdog process."""

    def __init__(self) -> None:
        self.marker = uuid.uuid4().hex
        #: Open runtimes; the watchdog is only started while there is one.
        self.owners = 0
        self.groups: set[int] = set()
        self.proc: subprocess.Popen[bytes] | None = None
        #: How many watchdog processes were started (a restart after one was killed).
        self.starts = 0
        #: A forked child's copies of its parent's watchdog (see `forget_after_fork`).
        self.inherited: list[subprocess.Popen[bytes]] = []

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure_started(self) -> None:
        """Start the watchdog if a runtime is open and none runs. Call before starting a
        child, so that it is covered from its first instant."""
        if self.owners and not self.running and sys.platform.startswith("linux"):
            self._start()

    def register(self, pgid: int) -> None:
        self.groups.add(pgid)
        self._send(f"+{pgid}\n".encode())

    def unregister(self, pgid: int) -> None:
        self.groups.discard(pgid)
        self._send(f"-{pgid}\n".encode())

    def _start(self) -> None:
        self._reap()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                watchdog_process.__file__,
                f"{RUNTIME_ENV_VAR}={self.marker}",
                str(WATCHDOG_GRACE_S),
                str(os.getpid()),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env={},
            start_new_session=True,
            bufsize=0,
        )
        self.proc, self.starts = proc, self.starts + 1
        if self.groups:
            self._send("".join(f"+{g}\n" for g in sorted(self.groups)).encode())

    def _send(self, line: bytes) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None:
            return
        try:
            proc.stdin.write(line)
        except (BrokenPipeError, ValueError):
            # Someone ended the watchdog: start another, which gets every live group.
            if self.owners:
                self._start()

    def _reap(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    async def stop(self) -> None:
        """Close the pipe after a `q` and wait (bounded) for the watchdog to exit."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.write(b"q\n")
            with contextlib.suppress(OSError):
                proc.stdin.close()
        with trio.move_on_after(_EXIT_WAIT_S):
            # Polling: a child started by `subprocess` has no trio wait; this runs once.
            while proc.poll() is None:  # noqa: ASYNC110
                await trio.sleep(_POLL_S)
        if proc.poll() is None:
            log.warning("the process watchdog did not exit; killing it")
            proc.kill()
            await trio.to_thread.run_sync(proc.wait)

    def forget_after_fork(self) -> None:
        """In a forked child: another process, so another marker and no watchdog yet (the
        copy of the parent's pipe is closed, so the parent's death still reaches it)."""
        if self.proc is not None:
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
            # Not ours to wait for: kept, so that no `Popen.__del__` ever looks at it.
            self.inherited.append(self.proc)
        self.marker = uuid.uuid4().hex
        self.owners, self.groups, self.proc, self.starts = 0, set(), None, 0


#: The process-wide watchdog: one per rawtrio process, shared by the runtimes open in it.
WATCHDOG: Final = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG.forget_after_fork)


def runtime_marker() -> str:
    """The value of `RAWTRIO_RUNTIME` for this process's children."""
    return WATCHDOG.marker


# --- records of open runtimes, and the sweep at start -----------------------------------


def write_record(state_dir: Path, marker: str | None = None, pid: int | None = None) -> Path:
    """Record a live runtime of `state_dir` (default: this process's) as
    `runtimes/<marker>` holding "<pid> <start time> <pid namespace>"; 0600 in a 0700
    directory."""
    marker = WATCHDOG.marker if marker is None else marker
    pid = os.getpid() if pid is None else pid
    path = state_dir / RECORDS_DIR / marker
    with open_private(path, "w") as f:  # 0600 in a 0700 folder, looser ones tightened
        f.write(f"{pid} {start_time(pid) or 0} {_pid_namespace()}\n")
    return path


def _record_is_dead(path: Path, namespace: int) -> bool:
    """Whether the recorded runtime's process is gone. Records of another pid namespace
    (a container sharing the state directory) or unreadable ones are never judged dead."""
    try:
        pid_text, started_text, ns_text = path.read_text().split()
        pid, started, ns = int(pid_text), int(started_text), int(ns_text)
    except (OSError, ValueError):
        return False
    if ns != namespace:
        return False
    return start_time(pid) != started  # gone, or the pid now names another process


def find_leftovers(state_dir: Path) -> tuple[dict[str, list[int]], list[Path]]:
    """(dead runtime's marker → its processes still running, records of dead runtimes).

    One scan of /proc; only markers recorded in `state_dir`'s runtimes are considered."""
    records = state_dir / RECORDS_DIR
    try:
        names = [n for n in os.listdir(records) if n != WATCHDOG.marker]
    except OSError:
        return {}, []
    if not names:
        return {}, []
    namespace = _pid_namespace()
    dead = {n for n in names if _record_is_dead(records / n, namespace)}
    leftovers: dict[str, list[int]] = {}
    if dead:
        for pid, value in environ_values(RUNTIME_ENV_VAR.encode()).items():
            name = value.decode(errors="replace")
            if name in dead:
                leftovers.setdefault(name, []).append(pid)
    return leftovers, [records / n for n in sorted(dead)]


def sweep_leftovers(state_dir: Path) -> int:
    """End the processes dead runtimes of `state_dir` left and remove their records;
    how many there were. Blocking (up to about `WATCHDOG_GRACE_S`): run it in a thread."""
    leftovers, dead = find_leftovers(state_dir)
    count = 0
    if leftovers:
        markers = [m.encode() for m in leftovers]
        count = end_all(RUNTIME_ENV_VAR.encode(), markers, {}, WATCHDOG_GRACE_S, settle=False)
    for path in dead:
        with contextlib.suppress(OSError):
            path.unlink()
    return count


async def _sweep(state_dir: Path) -> None:
    try:
        count = await trio.to_thread.run_sync(sweep_leftovers, state_dir)
    except OSError as exc:
        log.warning("could not sweep processes left by a dead rawtrio: %s", exc)
        return
    if count:
        log.warning("ended %d process(es) left running by a rawtrio that died", count)


#: State directory → runtimes of this process recorded there (tests open several).
_recorded: dict[Path, int] = {}


@asynccontextmanager
async def guard_processes(db_path: Path | None) -> AsyncIterator[None]:
    """Own the watchdog while a runtime is open; record the runtime and sweep leftovers in
    the directory of `db_path` (its session database; None: no record, no sweep)."""
    state_dir = db_path.parent.resolve() if isinstance(db_path, Path) else None
    if state_dir is not None:
        try:
            await trio.to_thread.run_sync(write_record, state_dir)
            _recorded[state_dir] = _recorded.get(state_dir, 0) + 1
        except OSError as exc:
            log.warning("could not record the runtime in %s: %s", state_dir, exc)
            state_dir = None
    WATCHDOG.owners += 1
    try:
        async with trio.open_nursery() as nursery:
            if state_dir is not None:
                nursery.start_soon(_sweep, state_dir, name="sweep leftover processes")
            yield
    finally:
        WATCHDOG.owners -= 1
        with trio.move_on_after(_EXIT_WAIT_S + 1) as cleanup:
            cleanup.shield = True
            if not WATCHDOG.owners:
                await WATCHDOG.stop()
        if state_dir is not None:
            _recorded[state_dir] -= 1
            if not _recorded[state_dir]:
                del _recorded[state_dir]
                with contextlib.suppress(OSError):
                    (state_dir / RECORDS_DIR / WATCHDOG.marker).unlink()
