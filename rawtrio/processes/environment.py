"""A child's environment, and the markers in it that find its processes again.

Every process rawtrio starts carries three markers, inherited by whatever it starts:

- `RAWTRIO_SESSION=<session id>`: a closing session ends what still carries it
  (`subreaper.end_session_processes`);
- `RAWTRIO_RUNTIME=<this process's marker>`: the watchdog, and the next rawtrio's sweep at
  start, end what a dead rawtrio left (`watchdog.py`);
- `RAWTRIO_CALL=<call marker>`, unique per foreground call, background job, hook run or MCP
  server: stopping its group also ends the descendants that left the group (`group.py`).

The names are defined where they are used (`subreaper`, `watchdog`) and gathered here.
"""

from __future__ import annotations

import fnmatch
import os
import uuid
from collections.abc import Iterable, Mapping

from rawtrio.processes.subreaper import CALL_ENV_VAR, SESSION_ENV_VAR
from rawtrio.processes.watchdog import RUNTIME_ENV_VAR, runtime_marker

__all__ = [
    "CALL_ENV_VAR",
    "RUNTIME_ENV_VAR",
    "SESSION_ENV_VAR",
    "child_environment",
    "is_stripped",
    "new_call_marker",
]


def new_call_marker() -> str:
    """A fresh `RAWTRIO_CALL` value."""
    return uuid.uuid4().hex


def is_stripped(name: str, strip: Iterable[str]) -> bool:
    """Whether `name` matches one of the shell-style patterns in `strip` (`*_API_KEY`)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in strip)


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
        if is_stripped(name, patterns):
            del env[name]
    env[SESSION_ENV_VAR] = session_id
    env[RUNTIME_ENV_VAR] = runtime_marker()
    if call_marker is not None:
        env[CALL_ENV_VAR] = call_marker
    return env
