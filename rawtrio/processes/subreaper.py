"""Find and end the descendants that left their process group (double fork, `setsid`, `nohup`).

Every process rawtrio starts for a session carries two markers in its environment,
inherited by everything it starts: `RAWTRIO_SESSION=<session id>` and
`RAWTRIO_CALL=<call marker>` (unique per foreground call or background job). Killing a
process group misses a descendant that called `setsid()`; the markers still find it, by
scanning `/proc/<pid>/environ` (which shows a process's environment as it was at exec).

On Linux the runtime should also call `become_child_subreaper()` once at start: orphaned
descendants are then re-parented to rawtrio instead of PID 1, stay in its process tree,
and `end_marked()` reaps the ones it ended — by their pids only. Never `waitpid(-1)`: it
would steal exit statuses from trio's `Process.wait`. An escaped descendant that exits on
its own (unsignalled) while rawtrio is its subreaper is reaped by the next session sweep
only if it was seen alive before; otherwise it stays a zombie until rawtrio exits, which
costs a process-table slot and nothing else.

Finding marked processes means reading the environment of every process in /proc, which
costs about a millisecond per hundred processes; `find_marked` shares one scan between
the tasks of the trio run that ask for one within a few passes of the scheduler (the
children of a cancelled parent stop their calls and close their sessions together), and
each caller still gets a scan that began after it asked.

Limits (these are not a sandbox): a program that clears its environment (`env -i`) before
escaping carries no marker; `/proc` is needed (elsewhere only the group is signalled).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import trio

from rawtrio.processes.watchdog_process import environ_scan, is_running, marked_pids, stat_fields

SESSION_ENV_VAR: Final = "RAWTRIO_SESSION"
CALL_ENV_VAR: Final = "RAWTRIO_CALL"

_PR_SET_CHILD_SUBREAPER: Final = 36
_PR_GET_CHILD_SUBREAPER: Final = 37
_POLL_S: Final = 0.005


def become_child_subreaper(enable: bool = True) -> bool:
    """Make this process the subreaper of its orphaned descendants (Linux); False elsewhere
    or when the kernel refuses."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(enable), 0, 0, 0)) == 0


def is_child_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    value = ctypes.c_int(0)
    if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0) != 0:
        return False
    return value.value != 0


def marked_processes(var: str, value: str) -> list[int]:
    """Live (non-zombie) processes, other than this one, whose environment has var=value."""
    return marked_pids(var.encode(), (value.encode(),))


@dataclass(eq=False)
class _Scan:
    """A /proc scan that callers are waiting for."""

    done: trio.Event = field(default_factory=trio.Event)
    found: dict[int, dict[bytes, bytes]] = field(default_factory=dict)


#: How many passes of the scheduler a scan waits for others to join it: tasks woken
#: together reach their scans a few checkpoints apart. Each costs microseconds, a scan
#: about a millisecond per hundred processes.
_JOIN_PASSES: Final = 8
#: The markers one shared scan reads.
_SHARED: Final = (CALL_ENV_VAR.encode(), SESSION_ENV_VAR.encode())
#: The scan of this trio run that has been asked for and not started yet.
_DUE: Final = trio.lowlevel.RunVar[_Scan | None]("rawtrio_marker_scan", default=None)


async def find_marked(var: str, value: str) -> list[int]:
    """`marked_processes` from a scan shared with every task that asks within a few passes
    of the scheduler: the first to ask lets the others run, then scans for all of them
    (module docstring). Every caller gets a scan that began after it asked."""
    key = var.encode()
    if key not in _SHARED:
        await trio.lowlevel.checkpoint()
        return marked_processes(var, value)
    scan = _DUE.get()
    if scan is None:
        scan = _Scan()
        _DUE.set(scan)
        try:
            for _ in range(_JOIN_PASSES):
                await trio.lowlevel.cancel_shielded_checkpoint()
        finally:
            _DUE.set(None)  # whoever asks from now on gets the next scan
            scan.found = environ_scan(_SHARED)
            scan.done.set()
    else:
        await scan.done.wait()
    want = value.encode()
    return [p for p, v in scan.found.items() if v.get(key) == want and is_running(p)]


def process_state(pid: int) -> tuple[str, int, int] | None:
    """(state letter, parent pid, process group) from /proc, or None when it is gone."""
    fields = stat_fields(pid)
    if fields is None or len(fields) < 3:
        return None
    return fields[0].decode(), int(fields[1]), int(fields[2])


def is_alive(pid: int) -> bool:
    return is_running(pid)


def signal_pids(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


#: Our children whose exit status a trio `Process` waits for (the leaders of process
#: groups, `group.open_process_group`): a sweep that ends one leaves its reaping to that
#: `Process`, which would otherwise report "exit code 0" for it.
WAITED_FOR: Final[set[int]] = set()


def reap_if_child(pids: Iterable[int]) -> None:
    """Reap those of `pids` that are our (re-parented) zombie children, by pid only;
    never one in `WAITED_FOR`."""
    me = os.getpid()
    for pid in pids:
        if pid in WAITED_FOR:
            continue
        state = process_state(pid)
        if state is None or state[1] != me or state[0] not in ("Z", "X"):
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


async def end_marked(var: str, value: str, *, grace_s: float) -> list[int]:
    """SIGTERM every live process marked var=value, SIGKILL what is left after `grace_s`,
    reap those that are our children. Returns the pids it signalled. Call shielded."""
    signalled: set[int] = set()
    pids = await find_marked(var, value)
    if not pids:
        return []
    signalled.update(pids)
    signal_pids(pids, signal.SIGTERM)
    with trio.move_on_after(grace_s):
        await _until_gone(signalled)
    # A process may have started new marked ones during the grace period.
    for _ in range(3):
        left = [p for p in signalled if is_alive(p)]
        left += [p for p in await find_marked(var, value) if p not in signalled]
        if not left:
            break
        signalled.update(left)
        signal_pids(left, signal.SIGKILL)
        with trio.move_on_after(1.0):
            await _until_gone(left)
    reap_if_child(signalled)
    return sorted(signalled)


async def end_session_processes(session_id: str, *, grace_s: float) -> list[int]:
    """Everything still running for a session (call when the session closes, after its
    nursery finished): ended and, where they are our children, reaped."""
    return await end_marked(SESSION_ENV_VAR, session_id, grace_s=grace_s)


async def _until_gone(pids: Iterable[int]) -> None:
    # Polling: there is no event for "a process that is not our child died".
    pids = list(pids)
    while True:
        reap_if_child(pids)
        if not any(is_alive(p) for p in pids):
            return
        await trio.sleep(_POLL_S)
