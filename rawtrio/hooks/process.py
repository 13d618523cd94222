"""Run one hook command: JSON on stdin, stdout and stderr kept apart, in its own group.

A hook differs from a tool's process in two ways: it reads its input from stdin, and its
stdout (a decision) and stderr (a reason or a complaint) mean different things. Everything
else — the process group, SIGTERM → grace → SIGKILL → reap in a shielded scope bounded by
`CLEANUP_DEADLINE_S`, the session marker in the environment, bounded output — is the tools'
`process_group` machinery, reused here rather than written twice. `run_in_process_group`
itself cannot be called: it gives the child /dev/null for stdin and merges stderr into
stdout, so this module drives its `_GroupRun` directly and adds a stdin writer and a stderr
reader next to it.

Exception-group policy: the nursery here runs the stdin writer, the stderr reader and the
wait; `rawtrio.groups.collapse_group` turns what it raises back into one plain exception,
so callers can `except trio.Cancelled` and `except OSError` as usual.
"""

from __future__ import annotations

import math
import subprocess
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.groups import collapse_group
from rawtrio.processes.bounded_output import BoundedOutput
from rawtrio.processes.group import (
    EndedBy,
    ProcessResult,
    _GroupRun,
    child_environment,
)
from rawtrio.processes.watchdog import WATCHDOG

_READ_SIZE: Final = 65536
#: How long to wait for stderr's end of file once the leader exited or the group stopped.
_DRAIN_S: Final = 0.1


@dataclass(frozen=True, slots=True)
class HookProcessResult:
    """How one hook process ended. `process.output` is its stdout."""

    process: ProcessResult
    stderr: str

    @property
    def stdout(self) -> str:
        return self.process.output


class HookWatch:
    """Filled in as the run goes, so a cancelled caller can still write a receipt."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.result: HookProcessResult | None = None


async def run_hook_process(
    argv: Sequence[str],
    *,
    stdin: bytes,
    cwd: Path,
    session_id: str,
    timeout_s: float | None,
    grace_s: float,
    output_cap: int,
    env: Mapping[str, str] | None = None,
    strip_env: Iterable[str] = (),
    watch: HookWatch | None = None,
) -> HookProcessResult:
    """Run `argv` with `stdin` until it exits or `timeout_s` passes; then stop its group.

    On cancellation the group is stopped (shielded, bounded), `watch.result` is set and
    the exception propagates. Raises OSError when the program cannot be started.
    """
    watch = watch if watch is not None else HookWatch()
    stdout_buf, stderr_buf = BoundedOutput(output_cap), BoundedOutput(output_cap)
    # The per-run marker lets the group stopper find descendants that escaped the group.
    marker = uuid.uuid4().hex
    WATCHDOG.ensure_started()
    proc = await trio.lowlevel.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=child_environment(env, session_id=session_id, strip=strip_env, call_marker=marker),
        start_new_session=True,
    )
    # No checkpoint between the start and the `try`: a cancel cannot leak the process.
    WATCHDOG.register(proc.pid)
    run = _GroupRun(proc, stdout_buf, None, grace_s, marker)
    errors = _StderrReader(proc, stderr_buf)
    watch.pid = proc.pid
    ended_by = EndedBy.CANCEL  # unless the wait below finishes
    try:
        with collapse_group():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_feed_stdin, proc, stdin)
                nursery.start_soon(errors.read)
                deadline = math.inf if timeout_s is None else timeout_s
                with trio.move_on_after(deadline) as timeout:
                    await run.until_leader_exits()
                    with trio.move_on_after(_DRAIN_S):
                        await errors.eof.wait()
                timed_out = timeout.cancelled_caught and proc.returncode is None
                ended_by = EndedBy.TIMEOUT if timed_out else EndedBy.EXIT
                nursery.cancel_scope.cancel(reason="hook process finished")
    finally:
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            with collapse_group():
                async with trio.open_nursery() as nursery:
                    if not errors.eof.is_set():
                        nursery.start_soon(errors.read)
                    await run.stop_group()
                    with trio.move_on_after(_DRAIN_S):
                        await errors.eof.wait()
                    nursery.cancel_scope.cancel(reason="hook process group stopped")
            await errors.aclose()
            assert proc.stdin is not None
            await proc.stdin.aclose()
        run.unregister_if_gone()
        watch.result = HookProcessResult(run.result(ended_by), stderr_buf.text())
    return watch.result


async def _feed_stdin(proc: trio.Process, data: bytes) -> None:
    """Write the input and close stdin. A hook that exits without reading it is fine."""
    assert proc.stdin is not None
    try:
        if data:
            await proc.stdin.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        with trio.CancelScope(shield=True):
            await proc.stdin.aclose()


class _StderrReader:
    def __init__(self, proc: trio.Process, buf: BoundedOutput) -> None:
        assert proc.stderr is not None
        self.stream = proc.stderr
        self.buf = buf
        self.eof = trio.Event()

    async def read(self) -> None:
        """Read until end of file; safe to restart after a cancel (no data is lost)."""
        while not self.eof.is_set():
            data = await self.stream.receive_some(_READ_SIZE)
            if not data:
                self.eof.set()
                return
            self.buf.feed(data)

    async def aclose(self) -> None:
        await self.stream.aclose()
