"""Run one hook command: JSON on stdin, stdout and stderr kept apart, in its own group.

A hook differs from a tool's process in two ways: it reads its input from stdin, and its
stdout (a decision) and stderr (a reason or a complaint) mean different things. Everything
else — the process group, the one stop (SIGTERM → grace → SIGKILL → reap, shielded and
bounded by `CLEANUP_DEADLINE_S`), the markers in the environment, bounded output — is
`rawtrio.processes`: the spec asks for a stdin pipe and a separate stderr pipe, and this
module adds the stdin writer and a reader per pipe.

Exception-group policy: the nursery here runs the stdin writer next to the wait;
`rawtrio.groups.collapse_group` turns what it raises back into one plain exception, so
callers can `except trio.Cancelled` and `except OSError` as usual.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from rawtrio.groups import collapse_group
from rawtrio.processes import (
    BoundedOutput,
    EndedBy,
    PipeReader,
    ProcessResult,
    ProcessSpec,
    child_environment,
    new_call_marker,
    open_process_group,
)


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
    # The per-run marker lets the stop find descendants that escaped the group.
    marker = new_call_marker()
    environment = child_environment(env, session_id=session_id, strip=strip_env, call_marker=marker)
    spec = ProcessSpec(
        argv=tuple(argv),
        cwd=cwd,
        env=environment,
        marker=marker,
        grace_s=grace_s,
        stdin="pipe",
        stderr="pipe",
    )
    async with open_process_group(spec) as group:
        readers = (PipeReader(group.stdout, stdout_buf), PipeReader(group.stderr, stderr_buf))
        watch.pid = group.pid
        ended_by = EndedBy.CANCEL  # unless the wait below finishes
        try:
            with collapse_group():
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_feed_stdin, group.stdin, stdin)
                    deadline = math.inf if timeout_s is None else timeout_s
                    with trio.move_on_after(deadline) as timeout:
                        await group.wait(readers)
                    timed_out = timeout.cancelled_caught and group.proc.returncode is None
                    ended_by = EndedBy.TIMEOUT if timed_out else EndedBy.EXIT
                    nursery.cancel_scope.cancel(reason="hook process finished")
        finally:
            await group.stop(readers)
            result = HookProcessResult(group.result(ended_by, stdout_buf), stderr_buf.text())
            watch.result = result
    return result


async def _feed_stdin(stream: trio.abc.SendStream, data: bytes) -> None:
    """Write the input and close stdin. A hook that exits without reading it is fine."""
    try:
        if data:
            await stream.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        with trio.CancelScope(shield=True):
            await stream.aclose()
