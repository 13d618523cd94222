"""The built-in configuration as plain values, for a run that has no config file.

Such a run validates nothing, so it needs none of the schema's pydantic models: importing
pydantic and building the models' classes was about a quarter of a headless run's own work
before the provider SDK (docs/benchmarks.md). The classes here have the attributes that
`rawtrio.config.resolve` reads from `RawtrioConfig`, `AgentConfig`, `CompactionConfig` and
`ValueRef`, with the schema's defaults; `tests/config/test_defaults.py` compares every
default with the schema's, so the two cannot drift apart. Light: no pydantic, no schema.

The names of the schema's closed choices (providers, permission modes) are in
`rawtrio.config.choices`, below this module and the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from rawtrio.config.choices import PermissionModeName
    from rawtrio.config.schema import (
        AgentConfig,
        HookConfig,
        McpServerConfig,
        ModelConfig,
        PermissionRuleConfig,
        VariableConfig,
    )

#: The agent used when no file defines one by the chosen name.
BUILTIN_AGENT: Final = "default"


@dataclass(frozen=True, slots=True)
class EnvRef:
    """`{env = NAME}`, like `ValueRef(env=NAME)`: where a model's key comes from when the
    configuration names none."""

    env: str
    value: None = None
    var: None = None


@dataclass(frozen=True, slots=True)
class BuiltinCompaction:
    """`CompactionConfig()`'s values."""

    auto: bool = True
    threshold: float = 0.8
    keep_last_turns: int = 2
    prune_tool_outputs: bool = True
    prune_keep_chars: int = 2_000
    summary_max_tokens: int = 4_096


@dataclass(frozen=True, slots=True)
class BuiltinAgent:
    """`AgentConfig()`'s values: the agent named `default` when no file defines it."""

    description: None = None
    model: None = None
    system_prompt: None = None
    prompt_file: None = None
    replace_base_prompt: bool = False
    tools: tuple[str, ...] = ("*",)
    permissions: tuple[PermissionRuleConfig, ...] = ()
    permission_mode: PermissionModeName = "default"
    hooks: tuple[HookConfig, ...] = ()
    skills: tuple[str, ...] = ("*",)
    mcp_servers: tuple[str, ...] = ()
    max_steps: int = 50
    tool_output_cap: int = 30_000
    request_timeout_s: float = 600.0
    stream_idle_timeout_s: float = 90.0
    max_retries: int = 6
    retry_budget_s: float = 300.0
    confine_paths: bool = False
    compaction: BuiltinCompaction = BuiltinCompaction()
    max_parallel_tool_calls: int = 8
    max_subagent_depth: int = 2
    max_concurrent_subagents: int = 4


@dataclass(frozen=True, slots=True)
class BuiltinConfig:
    """`RawtrioConfig()`'s values: the whole configuration when no file exists."""

    default_agent: str = BUILTIN_AGENT
    default_model: None = None
    sigterm_grace_s: float = 2.0
    models: Mapping[str, ModelConfig] = field(default_factory=dict)
    agents: Mapping[str, AgentConfig] = field(default_factory=dict)
    variables: Mapping[str, VariableConfig] = field(default_factory=dict)
    mcp_servers: Mapping[str, McpServerConfig] = field(default_factory=dict)
    hooks: tuple[HookConfig, ...] = ()
    skill_dirs: tuple[str, ...] = ()
