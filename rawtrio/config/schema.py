"""The configuration file's schema: pydantic models for untrusted TOML (STYLE.md §9).

Every model forbids unknown keys and is strict (no `"1"` → `1` coercion), so a misspelled
key or a wrong type is an error that `rawtrio.config.errors` turns into one line naming
the file, the key path and what was expected. The validated models are frozen and handed
inward as they are; `docs/config.schema.json` is generated from them
(`python -m rawtrio.config.json_schema`).

Cross-references (an agent's model, a `{var = ...}` reference, an agent's MCP servers) are
checked by the loader after the files are merged, because one file may name what another
defines.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from rawtrio.config.choices import PermissionModeName, ProviderName

Effect = Literal["allow", "ask", "deny"]
#: The hook events (Claude Code's names, plus rawtrio's `Interrupt`); docs/hooks.md.
HookEvent = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PreCompact",
    "Stop",
    "Interrupt",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
]

PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
NonEmptyStr = Annotated[str, Field(min_length=1)]

#: `a.b`, `edits[*].path`, `items[0]`: keys, array indices and `[*]` for every element.
ARGUMENT_PATH_RE = re.compile(r"^[A-Za-z_][\w-]*(\[(\*|\d+)\]|\.[A-Za-z_][\w-]*)*$")


def _string_or_table(schema: dict[str, Any]) -> None:
    """JSON Schema of a model that also accepts a plain string (see ValueRef)."""
    table = dict(schema)
    title = table.pop("title", None)
    schema.clear()
    if title:
        schema["title"] = title
    schema["anyOf"] = [{"type": "string"}, table]


def _string_or_argv(schema: dict[str, Any]) -> None:
    argv = {k: schema.pop(k) for k in ("type", "items", "minItems") if k in schema}
    schema["anyOf"] = [{"type": "string", "minLength": 1}, argv]


def _command_argv(value: object) -> object:
    """`"make lint"` runs through `sh -c`; a list is the argv itself."""
    return ["sh", "-c", value] if isinstance(value, str) else value


#: A program to run: a string (run by `sh -c`) or a non-empty argv list.
Command = Annotated[
    list[NonEmptyStr],
    BeforeValidator(_command_argv),
    Field(min_length=1, json_schema_extra=lambda s: _string_or_argv(s)),
]


class _Strict(BaseModel):
    # TOML has `nan` and `inf`: no timeout, grace or price may be either.
    # `defer_build`: a model's validator is built when it first validates, i.e. when a
    # config file exists (a run without one uses `rawtrio.config.defaults` and does not
    # import this module at all; the headless path's budget in docs/benchmarks.md).
    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, allow_inf_nan=False, defer_build=True
    )


def _exactly_one(model: BaseModel, names: tuple[str, ...]) -> None:
    given = [n for n in names if getattr(model, n) is not None]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise ValueError(f"expected exactly one of {', '.join(names)}, got {what}")


class ValueRef(_Strict):
    """A string value: a literal (`"text"` or `{value = "text"}`), `{var = "name"}` for a
    variable of `[variables]`, or `{env = "NAME"}` for an environment variable."""

    model_config = ConfigDict(json_schema_extra=_string_or_table)

    value: str | None = None
    var: NonEmptyStr | None = None
    env: NonEmptyStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: object) -> object:
        return {"value": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_source(self) -> ValueRef:
        _exactly_one(self, ("value", "var", "env"))
        return self


class VariableConfig(_Strict):
    """A named value, read only when needed and cached for one runtime."""

    value: str | None = None
    env: NonEmptyStr | None = None
    #: A file whose text (stripped) is the value; relative to the config file's folder.
    file: NonEmptyStr | None = None
    #: A command whose stdout is JSON: a string, or an object picked with `json_key`.
    command: Command | None = None
    json_key: NonEmptyStr | None = None
    timeout_s: PositiveFloat = 10.0
    #: Re-read after this many seconds; unset keeps the value for the runtime's life.
    ttl_s: PositiveFloat | None = None
    #: Redact the value from transcripts, tool output and events.
    secret: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> VariableConfig:
        _exactly_one(self, ("value", "env", "file", "command"))
        if self.json_key is not None and self.command is None:
            raise ValueError("json_key applies only to a variable with a command")
        return self


class Prices(_Strict):
    """Prices in the account's currency per million tokens."""

    input: NonNegativeFloat = 0.0
    output: NonNegativeFloat = 0.0
    cache_read: NonNegativeFloat = 0.0
    cache_write: NonNegativeFloat = 0.0


class ModelConfig(_Strict):
    provider: ProviderName
    model_id: NonEmptyStr
    base_url: NonEmptyStr | None = None
    #: Unset: the provider's usual environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY).
    api_key: ValueRef | None = None
    context_window: PositiveInt | None = None
    max_output_tokens: PositiveInt = 8192
    prices: Prices | None = None


class WhenConfig(_Strict):
    #: Where in the call's arguments to look: `command`, `path`, `edits[*].path`.
    path: Annotated[str, Field(pattern=ARGUMENT_PATH_RE.pattern)]
    #: A Python regular expression searched in each value found there.
    regex: str

    @model_validator(mode="after")
    def _compiles(self) -> WhenConfig:
        try:
            re.compile(self.regex)
        except re.error as e:
            raise PydanticCustomError(
                "regex_invalid",
                "regex: expected a valid regular expression ({error})",
                {"error": str(e)},
            ) from None
        return self


class PermissionRuleConfig(_Strict):
    #: A glob over tool ids: `bash`, `mcp/github/*`, `*`.
    match: NonEmptyStr
    effect: Effect
    when: WhenConfig | None = None


class HookConfig(_Strict):
    event: HookEvent
    #: Tool id glob, for the tool events (`|` separates alternatives).
    match: NonEmptyStr = "*"
    #: An argv list, or a string split like a shell would (no expansion) — or, with
    #: `shell = true`, a string run by `/bin/sh -c`.
    command: list[NonEmptyStr] | NonEmptyStr
    shell: bool = False
    timeout_s: PositiveFloat = 30.0
    env: dict[str, ValueRef] = Field(default_factory=dict)
    #: `rawtrio`: `match` is a glob over rawtrio tool ids and the hook reads rawtrio's tool
    #: ids and arguments; `claude-code`: `match` is a Claude Code matcher (`Bash`,
    #: `Edit|Write`, `mcp__github__.*`) and the hook reads Claude Code's tool names and
    #: input shapes, and may answer allow/ask (docs/compat.md). A script written for Claude
    #: Code runs unchanged with `dialect = "claude-code"`.
    dialect: Literal["rawtrio", "claude-code"] = "rawtrio"


class McpServerConfig(_Strict):
    """An MCP server: a `command` started over stdio, or a streamable-HTTP `url`."""

    command: Command | None = None
    url: NonEmptyStr | None = None
    cwd: NonEmptyStr | None = None
    env: dict[str, ValueRef] = Field(default_factory=dict)
    headers: dict[str, ValueRef] = Field(default_factory=dict)
    startup_timeout_s: PositiveFloat = 30.0
    call_timeout_s: PositiveFloat = 600.0
    #: `lazy`: started on the first call (its tool list comes from a cache written the
    #: last time it ran); `session`: started when the session starts. docs/mcp.md.
    start: Literal["lazy", "session"] = "lazy"
    #: Globs over the server's own tool names; `!glob` removes. Evaluated in order.
    tools: list[NonEmptyStr] = Field(default_factory=lambda: ["*"])
    #: Let `readOnlyHint` tools run without asking (like `read_file`); false: every tool asks.
    trust_annotations: bool = True
    #: First wait before restarting a server that failed; doubles per failure (max 30 s).
    restart_backoff_s: PositiveFloat = 1.0

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        _exactly_one(self, ("command", "url"))
        return self


class CompactionConfig(_Strict):
    """When and how the model context is compacted (docs/context.md)."""

    #: Compact automatically when the next request would pass `threshold` of the usable
    #: window (the context window less the reply's reserve).
    auto: bool = True
    threshold: Annotated[float, Field(gt=0, le=1)] = 0.8
    #: Complete turns kept verbatim after the summary.
    keep_last_turns: Annotated[int, Field(ge=0)] = 2
    #: Cut old tool outputs to head and tail (`prune_keep_chars` characters) first.
    prune_tool_outputs: bool = True
    prune_keep_chars: PositiveInt = 2_000
    #: The output bound of each summary request.
    summary_max_tokens: PositiveInt = 4_096


class AgentConfig(_Strict):
    description: str | None = None
    #: A name in `[models]`; unset: `default_model`, else the built-in default.
    model: NonEmptyStr | None = None
    system_prompt: str | None = None
    #: A file holding the agent's prompt; relative to the config file's folder.
    prompt_file: NonEmptyStr | None = None
    #: Replace rawtrio's base prompt instead of adding to it.
    replace_base_prompt: bool = False
    #: Tool id globs; `!glob` removes. Evaluated in order.
    tools: list[NonEmptyStr] = Field(default_factory=lambda: ["*"])
    permissions: list[PermissionRuleConfig] = Field(default_factory=list)
    permission_mode: PermissionModeName = "default"
    hooks: list[HookConfig] = Field(default_factory=list)
    skills: list[NonEmptyStr] = Field(default_factory=lambda: ["*"])
    mcp_servers: list[NonEmptyStr] = Field(default_factory=list)
    max_steps: PositiveInt = 50
    tool_output_cap: PositiveInt = 30_000
    request_timeout_s: PositiveFloat = 600.0
    #: A streaming reply that sends no byte for this long has stalled (then retried).
    stream_idle_timeout_s: PositiveFloat = 90.0
    #: Retries of a failed model request (docs/configuration.md#retries), and their time.
    max_retries: NonNegativeInt = 6
    retry_budget_s: PositiveFloat = 300.0
    #: Refuse file-tool paths that resolve outside the working directory (symlinks
    #: included). Not a sandbox: `bash` can still reach anything the user can.
    confine_paths: bool = False
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    #: Calls of one group of consecutive read-only calls running at once (1: one by one).
    max_parallel_tool_calls: PositiveInt = 8
    #: How deep `task` children may nest (0: no `task` tool).
    max_subagent_depth: NonNegativeInt = 2
    #: `task` children of one session running at once.
    max_concurrent_subagents: PositiveInt = 4

    @model_validator(mode="after")
    def _one_prompt(self) -> AgentConfig:
        if self.system_prompt is not None and self.prompt_file is not None:
            raise ValueError("expected at most one of system_prompt, prompt_file, got both")
        return self


class HostConfig(_Strict):
    """The warm host (`rawtrio serve`). Read from the user config file only: a project
    never decides whether a background host runs. `rawtrio.host.settings` reads the same
    table without pydantic, before a front end decides whether to attach."""

    #: `auto`: a front end attaches when a host of the same version is running; `never`:
    #: it always runs in its own process.
    attach: Literal["auto", "never"] = "auto"
    #: A front end that finds no host starts one (detached) and attaches.
    autostart: bool = False
    #: A host with no client and no running turn exits after this many seconds (0: never).
    idle_exit: NonNegativeFloat = 1800.0


class RawtrioConfig(_Strict):
    """The whole file. Every table is optional; an empty file is valid."""

    default_agent: NonEmptyStr = "default"
    default_model: NonEmptyStr | None = None
    sigterm_grace_s: NonNegativeFloat = 2.0
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    variables: dict[str, VariableConfig] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    #: Hooks for every agent, run before the agent's own.
    hooks: list[HookConfig] = Field(default_factory=list)
    #: Extra folders to look for skills in.
    skill_dirs: list[NonEmptyStr] = Field(default_factory=list)
    #: The warm host (user file only; ignored with a notice in a project file).
    host: HostConfig = Field(default_factory=HostConfig)
