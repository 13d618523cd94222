"""The processes rawtrio starts, and how none of them outlives what started it.

Every local process — a `bash` call, a background job, a hook, an MCP stdio server — is
started and stopped through this package's public API, re-exported here:

- `group.py`: `ProcessSpec` (what to start), `open_process_group` (start it in its own
  process group, registered with the watchdog), `ProcessGroup.stop()` (the one
  TERM → grace → KILL → reap, shielded with its own deadline), `PipeReader`, and
  `run_in_process_group` (the tools' runner: one merged output, a timeout, a `ProcessWatch`);
- `environment.py`: `child_environment` and the markers every child carries;
- `bounded_output.py`: the head and tail of any amount of output in bounded memory;
- `subreaper.py`: becoming the subreaper of orphaned descendants, finding marked processes,
  ending a closing session's leftovers;
- `watchdog.py` / `watchdog_process.py`: the watchdog and the sweep at start.

(The ACP terminal runs commands in the editor, not here: it only reuses `ProcessResult`,
`ProcessWatch` and the marker names.)

Lifetime policy: no process rawtrio starts — tool, hook, MCP server, and whatever they
start — outlives the session that started it, nor rawtrio itself by more than about a
second however rawtrio ends:

- a call, hook or server ends its group and escaped descendants when it ends
  (`ProcessGroup.stop()`);
- a closing session sweeps what still carries its `RAWTRIO_SESSION` marker
  (`subreaper.end_session_processes`);
- should rawtrio die without cleaning up (`kill -9`, the OOM killer), the runtime's
  watchdog, to which every group is registered, ends the registered groups and every
  process carrying this process's `RAWTRIO_RUNTIME` marker (`watchdog.py`);
- should the watchdog have died too, the next rawtrio opening the same state directory
  ends what dead runtimes recorded there left (the sweep at start, `watchdog.py`).

Limits (this is not a sandbox): a program that clears its environment and leaves its
process group cannot be found; `/proc` is needed for everything beyond the group itself.
"""

from __future__ import annotations

from rawtrio.processes.bounded_output import BoundedOutput
from rawtrio.processes.environment import (
    CALL_ENV_VAR,
    RUNTIME_ENV_VAR,
    SESSION_ENV_VAR,
    child_environment,
    is_stripped,
    new_call_marker,
)
from rawtrio.processes.group import (
    EndedBy,
    PipeReader,
    ProcessGroup,
    ProcessResult,
    ProcessSpec,
    ProcessWatch,
    open_process_group,
    run_in_process_group,
    signal_name,
)
from rawtrio.processes.subreaper import become_child_subreaper, end_session_processes
from rawtrio.processes.watchdog import guard_processes

__all__ = [
    "CALL_ENV_VAR",
    "RUNTIME_ENV_VAR",
    "SESSION_ENV_VAR",
    "BoundedOutput",
    "EndedBy",
    "PipeReader",
    "ProcessGroup",
    "ProcessResult",
    "ProcessSpec",
    "ProcessWatch",
    "become_child_subreaper",
    "child_environment",
    "end_session_processes",
    "guard_processes",
    "is_stripped",
    "new_call_marker",
    "open_process_group",
    "run_in_process_group",
    "signal_name",
]
