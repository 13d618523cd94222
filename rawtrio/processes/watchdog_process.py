"""The watchdog process that ends what a dead rawtrio left running. Standard library only.

rawtrio starts it lazily (see `rawtrio.processes.watchdog`) as

    python -I -S watchdog_process.py RAWTRIO_RUNTIME=<marker> <grace_s> <rawtrio's pid>

with a pipe on its stdin whose only writer is rawtrio. Over the pipe rawtrio sends one
line per change: `+<pgid>` when it started a process group, `-<pgid>` once that group was
stopped and reaped, and `q` just before it closes the pipe on a normal exit. The watchdog
does nothing else until the pipe reaches end of file — which happens however rawtrio
ends, `kill -9` and the OOM killer included, because the kernel closes a dead process's
descriptors. Then it ends everything rawtrio left: SIGTERM to every registered group and
to every process whose environment carries the runtime marker (descendants that left
their group with `setsid` included), up to `grace_s` for them to go, SIGKILL to what is
left, a last scan for processes that were between fork and exec; then it exits. On a
normal close rawtrio has ended its processes itself and closes the pipe after a `q`: the
watchdog makes one quick scan (ending what the runtime's own cleanup could not) and exits.

It runs in its own session with "/" as its working directory, so a Ctrl-C or a hangup
sent to the terminal's process group reaches rawtrio and not the watchdog (it ignores
SIGINT, SIGHUP and SIGQUIT too), and it keeps no directory busy. In case the pipe's write
end leaked into another process, it also checks every second that its parent is still
the rawtrio that started it.

A group id is signalled only while its leader has the start time seen at registration,
or, the leader being gone, while the group still has members (Linux never reuses a pid
that is still a group id), so a recycled pid is never hit.

The `/proc` readers here are shared with the runtime's start sweep, which imports this
module; run as a script it must import nothing but the standard library, so that it
starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Collection, Iterable, Mapping

#: How often the grace period looks for processes that are still there.
_POLL_S = 0.02
#: The pause before the last scan, for children forked but not yet executed at the kill.
_SETTLE_S = 0.05
#: How often the watchdog checks that its parent is alive while the pipe stays open.
_PARENT_CHECK_S = 1.0
#: One read of a /proc file; an environment is usually much smaller.
_READ_SIZE = 65536


def read_proc_file(path: str) -> bytes | None:
    """The whole of a /proc file, or None when it cannot be read (the process is gone, or
    not ours to read). Plain descriptors, no file object: a /proc scan opens one file per
    process, and this is its cost."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, _READ_SIZE)
        if len(data) < _READ_SIZE:  # /proc's stat and environ: a short read is the end
            return data
        chunks = [data]
        while data:
            data = os.read(fd, _READ_SIZE)
            chunks.append(data)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None."""
    stat = read_proc_file(f"/proc/{pid}/stat")
    if stat is None:
        return None
    # "pid (comm) state ppid pgrp ..." — comm may contain spaces and parentheses.
    return stat[stat.rfind(b")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks after boot), or None when it is gone."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def is_running(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    fields = stat_fields(pid)
    return fields is not None and fields[:1] not in ([b"Z"], [b"X"])


def environ_scan(variables: Collection[bytes]) -> dict[int, dict[bytes, bytes]]:
    """Scan /proc once: pid → {variable: value} for every readable process (other than
    this one) that has at least one of `variables` in its environment."""
    prefixes = [(var, var + b"=") for var in variables]
    found: dict[int, dict[bytes, bytes]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        environ = read_proc_file(f"/proc/{entry}/environ")
        if environ is None:
            continue  # gone, or not ours to read
        values: dict[bytes, bytes] = {}
        for var, prefix in prefixes:
            if prefix not in environ:
                continue
            for item in environ.split(b"\0"):
                if item.startswith(prefix):
                    values[var] = item[len(prefix) :]
                    break
        if values:
            found[int(entry)] = values
    return found


def environ_values(var: bytes) -> dict[int, bytes]:
    """Scan /proc once: pid → value of `var` for every readable process that has it."""
    return {pid: values[var] for pid, values in environ_scan((var,)).items()}


def marked_pids(var: bytes, values: Collection[bytes]) -> list[int]:
    """Running processes whose `var` is one of `values`."""
    return [
        pid for pid, value in environ_values(var).items() if value in values and is_running(pid)
    ]


def _group_is_ours(pgid: int, leader_started: int | None) -> bool:
    leader = start_time(pgid)
    if leader is not None:
        return leader == leader_started
    try:  # the leader is gone: the id cannot be reused while the group has members
        os.killpg(pgid, 0)
    except OSError:
        return False
    return True


def _signal(pids: Iterable[int], groups: Mapping[int, int | None], sig: int) -> None:
    for pgid, started in groups.items():
        if _group_is_ours(pgid, started):
            with contextlib.suppress(OSError):
                os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def _group_alive(pgid: int) -> bool:
    """Whether the group has a member that is not a zombie (one scan of /proc)."""
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        fields = stat_fields(int(entry)) if entry.isdigit() else None
        member = fields is not None and len(fields) > 2 and int(fields[2]) == pgid
        if member and fields is not None and fields[0] not in (b"Z", b"X"):
            return True
    return False


def end_all(
    var: bytes,
    values: Collection[bytes],
    groups: Mapping[int, int | None],
    grace_s: float,
    *,
    settle: bool = True,
) -> int:
    """SIGTERM the groups and every process marked `var` ∈ `values`, wait up to `grace_s`,
    SIGKILL what is left. Returns how many marked processes were found. `settle`: when
    nothing is found, look once more after a pause (a child forked just before its parent
    died shows the marker only once it has executed its program)."""
    seen: set[int] = set()
    marked = marked_pids(var, values) if values else []
    groups = {g: s for g, s in groups.items() if _group_is_ours(g, s)}
    if not marked and not groups and settle and values:
        time.sleep(_SETTLE_S)
        marked = marked_pids(var, values)
    if not marked and not groups:
        return 0
    seen.update(marked)
    _signal(marked, groups, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        time.sleep(_POLL_S)
        new = [p for p in marked_pids(var, values) if p not in seen] if values else []
        seen.update(new)
        _signal(new, {}, signal.SIGTERM)
        if not any(is_running(p) for p in seen) and not any(_group_alive(g) for g in groups):
            break
    for attempt in range(3):
        left = [p for p in seen if is_running(p)]
        left += [p for p in (marked_pids(var, values) if values else []) if p not in seen]
        live_groups = {g: s for g, s in groups.items() if _group_alive(g)}
        seen.update(left)
        if not left and not live_groups and attempt > 0:
            break
        _signal(left, live_groups, signal.SIGKILL)
        time.sleep(_SETTLE_S)
    return len(seen)


def _ignore_terminal_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)


def watch(var: bytes, value: bytes, grace_s: float, parent: int) -> None:
    """Read registrations until end of file (or the parent is gone), then end it all."""
    groups: dict[int, int | None] = {}
    pending = b""
    clean = False
    while True:
        ready, _, _ = select.select([0], [], [], _PARENT_CHECK_S)
        if not ready:
            if os.getppid() != parent:
                break
            continue
        data = os.read(0, 4096)
        if not data:
            break
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            if line == b"q":
                clean = True
                continue
            if len(line) < 2 or not line[1:].isdigit():
                continue
            pgid = int(line[1:])
            if line[:1] == b"+":
                groups[pgid] = start_time(pgid)
            elif line[:1] == b"-":
                groups.pop(pgid, None)
    end_all(var, (value,), groups, grace_s, settle=not clean)


def main(argv: list[str]) -> int:
    _ignore_terminal_signals()
    marker, grace, parent = argv
    var, _, value = marker.encode().partition(b"=")
    watch(var, value, float(grace), int(parent))
    return 0


if __name__ == "__main__":
    # No interpreter teardown: nothing is buffered, and rawtrio's close waits for the exit.
    os._exit(main(sys.argv[1:]))
