"""A hook `match` in rawtrio's own config that no tool answers to is a config error.

A PreToolUse guard written `match = "Bash"` (Claude Code's name) never fires in rawtrio,
whose tool is `bash`: a security hook that fails open without a word. So every `|`
alternative of a tool event's `match` must match some tool the agent can have (the built-in
tools, `load_skill`, or `mcp/<server>/…` of a configured server); otherwise the error names
the file, the key and the close match. Hooks of the `claude-code` dialect use Claude Code's
names and are checked where their files are read (`rawtrio.config.claude_settings`).

The config layer does not know the tools (they live above it): the caller passes their ids.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from rawtrio.compat.claude_code import rawtrio_tool_id
from rawtrio.config.errors import ConfigFileError, ConfigProblem

if TYPE_CHECKING:
    from rawtrio.config.schema import HookConfig, McpServerConfig

#: The events whose `match` compares tool ids.
TOOL_EVENTS: Final = frozenset(
    {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"}
)
_GLOB_CHARS: Final = frozenset("*?[")


def check_hook_matchers(
    hooks: Sequence[HookConfig],
    origins: Sequence[str],
    tool_ids: Iterable[str],
    mcp_servers: Mapping[str, McpServerConfig],
) -> None:
    """Raise ConfigFileError listing every rawtrio hook whose `match` names no tool.
    `origins[i]` is "FILE: KEY.PATH" of `hooks[i]`."""
    ids = tuple(tool_ids)
    problems: list[ConfigProblem] = []
    for i, hook in enumerate(hooks):
        if hook.dialect != "rawtrio" or hook.event not in TOOL_EVENTS:
            continue
        origin = origins[i] if i < len(origins) else ""
        source, _, key = origin.rpartition(": ")
        for alt in hook.match.split("|"):
            why = _unmatched(alt.strip(), ids, mcp_servers)
            if why is not None:
                problems.append(ConfigProblem(source, f"{key}.match", why))
    if problems:
        raise ConfigFileError(problems)


def _unmatched(
    alt: str, ids: tuple[str, ...], servers: Mapping[str, McpServerConfig]
) -> str | None:
    """Why `alt` matches no tool, or None when it matches one."""
    if alt in ("", "*") or any(fnmatch.fnmatchcase(t, alt) for t in ids):
        return None
    if alt.startswith("mcp/"):
        server = alt.split("/")[1]
        if server in servers or _GLOB_CHARS & set(server):
            return None
        known = ", ".join(sorted(servers)) or "none configured"
        return f"{alt!r} names no configured MCP server (servers: {known}); this hook never runs"
    return f"{alt!r} names no tool; this hook never runs{_hint(alt, ids)}"


def _hint(alt: str, ids: tuple[str, ...]) -> str:
    for_claude = rawtrio_tool_id(alt)
    if for_claude is not None and for_claude in ids:
        return (
            f" (did you mean {for_claude!r}? {alt!r} is Claude Code's name: use rawtrio's "
            'tool id, or dialect = "claude-code" to match Claude Code names)'
        )
    import difflib  # only for a matcher that names no tool

    lowered = {t.lower(): t for t in ids}
    close = difflib.get_close_matches(alt.lower(), list(lowered), n=1)
    if close:
        return f" (did you mean {lowered[close[0]]!r}?)"
    return f" (tools: {', '.join(ids)}, mcp/<server>/<tool>)"
