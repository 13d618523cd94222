"""The values every layer shares (docs/contracts.md), decided once.

`docs/contracts.md` is the prose version of this module; change both together.
Store rows, events, stream-json, the TUI and ACP all use these exact strings.
"""

from __future__ import annotations

import enum
import re
from typing import Final


class TurnOutcome(enum.StrEnum):
    """How a turn ended. Exactly one per turn, as an event and in the store."""

    COMPLETED = "completed"
    MAX_STEPS = "max_steps"
    CANCELLED = "cancelled"
    ERROR = "error"
    #: Only ever written by crash recovery: a turn found without an outcome on reopen.
    INTERRUPTED = "interrupted"


class ToolStatus(enum.StrEnum):
    """The one status enum for a tool call's result."""

    OK = "ok"
    ERROR = "error"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    DENIED = "denied"  # with `denied_by`
    NOT_RUN = "not_run"  # max_steps reached before it could run
    CANCELLED = "cancelled"  # with `started`
    TIMED_OUT = "timed_out"
    OUTCOME_UNKNOWN = "outcome_unknown"  # crash recovery: it may have started


class DeniedBy(enum.StrEnum):
    RULE = "rule"
    USER = "user"
    HOOK = "hook"
    POLICY = "policy"
    MODE = "mode"


class ExitCode(enum.IntEnum):
    """Exit codes of headless runs (`rawtrio -p`)."""

    COMPLETED = 0
    ERROR = 1
    USAGE = 2
    MAX_STEPS = 3
    NO_CREDENTIALS = 4
    SESSION_LOCKED = 5
    SIGINT = 130
    SIGTERM = 143


BUILTIN_TOOL_NAMES: Final = (
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "glob",
    "grep",
    "bash",
    "todo_write",
    "todo_read",
    "bash_output",
    "bash_stop",
    "task",
)

#: Names sent to providers must match this (the strictest of the three APIs).
PROVIDER_TOOL_NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# Defaults until configured.
DEFAULT_MAX_STEPS: Final = 50
#: Calls of one read-only group of a reply running at once (docs/contracts.md).
DEFAULT_MAX_PARALLEL_TOOL_CALLS: Final = 8
#: How deep `task` may nest, and how many children of one session run at once.
DEFAULT_MAX_SUBAGENT_DEPTH: Final = 2
DEFAULT_MAX_CONCURRENT_SUBAGENTS: Final = 4
DEFAULT_SIGTERM_GRACE_S: Final = 2.0
DEFAULT_TOOL_OUTPUT_CAP: Final = 30_000
DEFAULT_REQUEST_TIMEOUT_S: Final = 600.0
#: Sessions without committed conversation activity for this long are removed (0 = never).
DEFAULT_RETENTION_DAYS: Final = 30.0
#: Upper bound for any shielded cleanup (commit, kill, reap) after a cancel.
CLEANUP_DEADLINE_S: Final = 10.0

STREAM_JSON_VERSION: Final = 1
