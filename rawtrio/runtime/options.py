"""What a session is opened with: its directory, model, tools, permissions, hooks, MCP
servers and context settings (the config layer builds it; `set_model` derives a new one).

Kept apart from `Session` so the parts that read it (the model binding, the loop's host
interface) need not import the session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rawtrio.context.accounting import ModelPrices
from rawtrio.context.compaction_state import CompactionSettings
from rawtrio.contracts import (
    DEFAULT_MAX_CONCURRENT_SUBAGENTS,
    DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    DEFAULT_MAX_STEPS,
    DEFAULT_MAX_SUBAGENT_DEPTH,
)
from rawtrio.hooks import HookSpec
from rawtrio.permissions.rules import PermissionMode, Rule
from rawtrio.providers.base import ProviderSettings
from rawtrio.skills import Skill
from rawtrio.tools.base import Tool
from rawtrio.tools.settings import ToolSettings

if TYPE_CHECKING:
    from rawtrio.config.schema import McpServerConfig
    from rawtrio.config.variables import VariableResolver


@dataclass(frozen=True)
class SessionOptions:
    cwd: Path
    provider: ProviderSettings
    max_steps: int = DEFAULT_MAX_STEPS
    #: Calls of one read-only group running at once (1: one after another).
    max_parallel_tool_calls: int = DEFAULT_MAX_PARALLEL_TOOL_CALLS
    #: `task` children: how deep this session is (top level: 0), how deep they may nest,
    #: how many run at once, and how to get the options of a configured agent by name
    #: (the config layer provides it; None: only the session's own agent).
    subagent_depth: int = 0
    max_subagent_depth: int = DEFAULT_MAX_SUBAGENT_DEPTH
    max_concurrent_subagents: int = DEFAULT_MAX_CONCURRENT_SUBAGENTS
    options_for_agent: Callable[[str], Awaitable[SessionOptions]] | None = None
    max_output_tokens: int = 8192
    tools: ToolSettings = field(default_factory=ToolSettings)
    #: Replaces the built-in base prompt when set (fixed at session creation).
    system_prompt: str | None = None
    #: Permission rules in order (last match wins) and the starting mode. The library
    #: default is `bypass` with no rules: front ends pass what the configuration says.
    permission_rules: tuple[Rule, ...] = ()
    permission_mode: PermissionMode = PermissionMode.BYPASS
    #: The permission rules of a session that works in another directory (`in_directory`):
    #: the command line's path patterns (`Edit(src/**)`) are anchored at the session's
    #: working directory (the config layer provides it; None: the same rules anywhere).
    rules_for_cwd: Callable[[Path], tuple[Rule, ...]] | None = None
    #: Headless runs cannot ask: `ask` becomes a policy denial unless `assume_yes`.
    headless: bool = False
    assume_yes: bool = False
    #: Saves an "allow always for this project" rule (the config layer provides it).
    save_allow_rule: Callable[[Rule], None] | None = None
    hooks: tuple[HookSpec, ...] = ()
    #: Tools beyond the built-ins (e.g. `load_skill`), registered the same way.
    extra_tools: tuple[Tool, ...] = ()
    #: The tool ids the agent selected, in order; None selects every tool.
    tool_selection: tuple[str, ...] | None = None
    #: The skills listed in the system prompt; a resumed session is told when they changed.
    skills: tuple[Skill, ...] = ()
    #: The configured model names this session may switch to (`set_model`), the one in
    #: use (None: a built-in default or a raw `--model` id), and how to derive the options
    #: for another one (the config layer provides it; reading its API key may run a command).
    model_name: str | None = None
    model_names: tuple[str, ...] = ()
    options_for_model: Callable[[str], Awaitable[SessionOptions]] | None = None
    #: The model's context window (None: a well-known model's default, else unknown),
    #: its prices (None: cost unknown) and when and how to compact (rawtrio.context).
    context_window: int | None = None
    prices: ModelPrices | None = None
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    #: The MCP servers the agent selected (docs/mcp.md) and the agent's tool globs, which
    #: also select among their tools (`mcp/<server>/<tool>` ids).
    mcp_servers: Mapping[str, McpServerConfig] = field(default_factory=dict)
    mcp_tool_patterns: tuple[str, ...] = ("*",)
    #: Where MCP tool lists are cached (None: no cache; every server starts with the session).
    mcp_cache_dir: Path | None = None
    #: Resolves `{var = ...}` in MCP servers' env and headers (None: literals and env only).
    variables: VariableResolver | None = None
    #: (session id, a path `read_file` read) → project memory below the working directory
    #: to append to that result, once per file and session (rawtrio.config.agents_md
    #: `NestedMemory`); None: nested memory is not offered. Blocking file reads: called in
    #: a worker thread.
    nested_memory: Callable[[str, Path], str | None] | None = None
    #: The environment every process of the session starts from (bash, background jobs,
    #: hooks, MCP stdio servers and their `{env = "NAME"}` values), before the secrets of
    #: `tools.strip_env` are removed; an attached client's on a host. None: this process's
    #: environment (`os.environ`, read when each process starts). Holds keys: not in repr.
    env: Mapping[str, str] | None = field(default=None, repr=False)
    #: Where the session's checkpoints go (`<state>/checkpoints`, rawtrio.checkpoints);
    #: None: its turns capture nothing (what earlier runs of it recorded stays undoable
    #: from the store: docs/checkpoints.md, "Who may undo").
    checkpoint_dir: Path | None = None

    def in_directory(self, cwd: Path) -> SessionOptions:
        """These options for a session that works in `cwd` (a resumed session keeps the
        directory it was made in), the permission rules anchored there."""
        if cwd == self.cwd:
            return self
        rules = self.permission_rules if self.rules_for_cwd is None else self.rules_for_cwd(cwd)
        return dataclasses.replace(self, cwd=cwd, permission_rules=rules)
