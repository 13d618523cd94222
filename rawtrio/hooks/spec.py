"""What a hook is: a command bound to an event, and which events there are.

The event names are Claude Code's (plus rawtrio's `Interrupt`), so a hook configuration
written for Claude Code names the same events. A hook is a frozen `HookSpec`; the config
layer builds them, this package runs them.

Matchers: for tool events the matcher is a glob on the tool id (`bash`, `mcp/github/*`);
`|` separates alternatives (`edit_file|write_file`). `SessionStart` matches on its
`source` and `PreCompact` on its `trigger`, like in Claude Code. Other events take no
matcher (`""` or `"*"`).

A hook of the `claude-code` dialect (one read from a Claude Code settings file) is matched
with Claude Code's matcher syntax against Claude Code's tool names, and reads Claude Code's
tool names and input shapes (`rawtrio.hooks.claude_code`); on events without a match field
its matcher is ignored, as Claude Code does.
"""

from __future__ import annotations

import enum
import fnmatch
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

from rawtrio.compat import claude_code

#: Default timeout of one hook run (Claude Code's default too).
DEFAULT_HOOK_TIMEOUT_S: Final = 60.0
#: Shell used for `shell = true` hooks.
SHELL: Final = ("/bin/sh", "-c")


class HookEvent(enum.StrEnum):
    SESSION_START = "SessionStart"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"
    PERMISSION_REQUEST = "PermissionRequest"
    PRE_COMPACT = "PreCompact"
    STOP = "Stop"
    #: rawtrio's own: a turn was cancelled.
    INTERRUPT = "Interrupt"
    #: A `task` call is about to start a child session / its child's turn ended.
    SUBAGENT_START = "SubagentStart"
    SUBAGENT_STOP = "SubagentStop"
    SESSION_END = "SessionEnd"


TOOL_EVENTS: Final = frozenset(
    {
        HookEvent.PRE_TOOL_USE,
        HookEvent.POST_TOOL_USE,
        HookEvent.POST_TOOL_USE_FAILURE,
        HookEvent.PERMISSION_REQUEST,
    }
)

#: Events whose hooks can stop something (exit 2, `decision: "block"`, `continue: false`).
#: For the others a block turns into a warning: there is nothing left to stop.
BLOCKING_EVENTS: Final = frozenset(
    {
        HookEvent.USER_PROMPT_SUBMIT,
        HookEvent.PRE_TOOL_USE,
        HookEvent.POST_TOOL_USE,
        HookEvent.POST_TOOL_USE_FAILURE,
        HookEvent.PERMISSION_REQUEST,
        HookEvent.STOP,
    }
)

#: Events where a hook can deny a tool call through `permissionDecision` / `decision`.
DENYING_EVENTS: Final = frozenset({HookEvent.PRE_TOOL_USE, HookEvent.PERMISSION_REQUEST})

#: Events where plain (non-JSON) stdout of a successful hook is context for the model.
PLAIN_CONTEXT_EVENTS: Final = frozenset({HookEvent.SESSION_START, HookEvent.USER_PROMPT_SUBMIT})

#: The input field a matcher is compared with, per event that takes a matcher.
MATCH_FIELD: Final[Mapping[HookEvent, str]] = MappingProxyType(
    {
        **dict.fromkeys(TOOL_EVENTS, "tool_name"),
        HookEvent.SESSION_START: "source",
        HookEvent.PRE_COMPACT: "trigger",
    }
)

_MATCH_ALL: Final = frozenset({"", "*"})

#: `rawtrio`: rawtrio's tool ids and input; `claude-code`: Claude Code's (docs/compat.md).
HookDialect = Literal["rawtrio", "claude-code"]


@dataclass(frozen=True, slots=True)
class HookSpec:
    """One hook. `command` is an argv tuple, or a string: split like a shell would split
    it (no expansion, no pipes) unless `shell` is true, in which case `/bin/sh -c` runs it.

    ValueError on an empty command, a non-positive timeout or a matcher on an event that
    takes none.
    """

    event: HookEvent
    command: tuple[str, ...] | str
    matcher: str = "*"
    shell: bool = False
    timeout_s: float = DEFAULT_HOOK_TIMEOUT_S
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: Shown in receipts; defaults to the command.
    name: str | None = None
    dialect: HookDialect = "rawtrio"
    _pattern: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "event", HookEvent(self.event))
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        if not isinstance(self.command, str):
            object.__setattr__(self, "command", tuple(self.command))
        if not self.argv() or not self.argv()[0]:
            raise ValueError(f"{self.event} hook: the command is empty")
        if not self.timeout_s > 0:
            raise ValueError(f"{self.event} hook {self.label!r}: timeout must be > 0 seconds")
        if self.dialect == "claude-code":
            try:
                object.__setattr__(self, "_pattern", claude_code.compile_matcher(self.matcher))
            except ValueError as exc:
                raise ValueError(f"{self.event} hook {self.label!r}: {exc}") from None
        elif self.dialect != "rawtrio":
            raise ValueError(f"{self.event} hook {self.label!r}: unknown dialect {self.dialect!r}")
        elif self.event not in MATCH_FIELD and self.matcher not in _MATCH_ALL:
            raise ValueError(
                f"{self.event} hook {self.label!r}: this event takes no matcher "
                f"(got {self.matcher!r}; use '*' or leave it out)"
            )

    def argv(self) -> tuple[str, ...]:
        """The argv that runs this hook."""
        if isinstance(self.command, str):
            if self.shell:
                return (*SHELL, self.command) if self.command.strip() else ()
            try:
                return tuple(shlex.split(self.command))
            except ValueError as exc:
                raise ValueError(f"{self.event} hook {self.command!r}: {exc}") from None
        if self.shell:
            return (*SHELL, shlex.join(self.command)) if self.command else ()
        return self.command

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        text = self.command if isinstance(self.command, str) else shlex.join(self.command)
        return text if len(text) <= 120 else text[:117] + "..."

    def matches(self, subject: str | None) -> bool:
        """Whether this hook runs for an event whose match field is `subject`."""
        if self.matcher in _MATCH_ALL or self.event not in MATCH_FIELD:
            return True
        if subject is None:
            return False
        if self.dialect == "claude-code":
            if self.event in TOOL_EVENTS:
                subject = claude_code.claude_tool_name(subject)
            return claude_code.matches(self._pattern, subject)
        return any(fnmatch.fnmatchcase(subject, alt.strip()) for alt in self.matcher.split("|"))
