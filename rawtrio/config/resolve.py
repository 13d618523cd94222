"""One agent resolved for one session, from flags, `RAWTRIO_*` variables and the files.

Precedence, highest first: command-line flag > `RAWTRIO_*` environment variable > project
file > user file > built-in default. The variables read here:

    RAWTRIO_CONFIG           the user config file (like --config)
    RAWTRIO_AGENT            the agent (like --agent)
    RAWTRIO_MODEL            a model name from [models], or a raw model id (like --model)
    RAWTRIO_PROVIDER         the provider wire format (like --provider)
    RAWTRIO_PERMISSION_MODE  default | accept-edits | plan | bypass (like --mode)
    RAWTRIO_MAX_STEPS        model requests per turn (like --max-steps)
    RAWTRIO_STATE_DIR        where the trust store lives

The result holds everything the runtime needs; the API key stays a reference until
`provider_settings()` reads it, so a session that never sends a request never runs a
variable's command.

Keys and endpoints (docs/security.md): a configured model is one endpoint with one key, and
its key is only ever sent to that endpoint. When `--provider` / `RAWTRIO_PROVIDER` or
`--base-url` name another endpoint than the chosen model's, that model (its key *and* its
model id) is not used: rawtrio takes the configured model for exactly that provider and
base URL if there is one, else the provider's default model with the key from that
provider's own variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) — the variable the official
SDKs pair with their `*_BASE_URL`. A model named explicitly (`--model NAME`,
`RAWTRIO_MODEL`) together with another endpoint is an error, not a silent redirect.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, get_args

from rawtrio.config.agents_md import AgentsFiles, find_agents_files
from rawtrio.config.choices import PermissionModeName, ProviderName
from rawtrio.config.claude_files import find_settings_files
from rawtrio.config.defaults import BUILTIN_AGENT, BuiltinCompaction, EnvRef
from rawtrio.config.errors import ConfigFileError, key_path, problem
from rawtrio.config.hook_matchers import check_hook_matchers
from rawtrio.config.loader import (
    LoadedConfig,
    find_project_config,
    load_config,
    project_root,
    user_config_path,
)
from rawtrio.config.safe_read import MAX_PROMPT_BYTES, UnsafeFileError, read_bounded
from rawtrio.config.trust import TrustStore
from rawtrio.config.variables import VariableError, VariableResolver
from rawtrio.contracts import (
    DEFAULT_MAX_CONCURRENT_SUBAGENTS,
    DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    DEFAULT_MAX_SUBAGENT_DEPTH,
)
from rawtrio.errors import NoCredentials

if TYPE_CHECKING:
    from rawtrio.config.schema import (
        CompactionConfig,
        HookConfig,
        McpServerConfig,
        ModelConfig,
        PermissionRuleConfig,
        Prices,
        ValueRef,
        VariableConfig,
    )
    from rawtrio.providers.base import ProviderSettings

ENV_AGENT: Final = "RAWTRIO_AGENT"
ENV_MODEL: Final = "RAWTRIO_MODEL"
ENV_PROVIDER: Final = "RAWTRIO_PROVIDER"
ENV_MODE: Final = "RAWTRIO_PERMISSION_MODE"
ENV_MAX_STEPS: Final = "RAWTRIO_MAX_STEPS"
#: Used when no model is configured: the provider's default model id.
BUILTIN_MODEL_IDS: Final[dict[str, str]] = {
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-5",
    "openai-responses": "gpt-5",
}
API_KEY_ENV: Final[dict[str, str]] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}
#: The base-URL variable each provider's SDK reads when it is given no base URL. rawtrio
#: reads it from the session's environment and passes it explicitly, so that on a host an
#: attached client's variable counts, never the host's.
BASE_URL_ENV: Final[dict[str, str]] = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai-chat": "OPENAI_BASE_URL",
    "openai-responses": "OPENAI_BASE_URL",
}
#: Every variable the provider SDKs read from the process environment on their own. A host
#: removes them from its environment (`rawtrio.host.server`): each session's come from its
#: own environment, explicitly, or not at all.
SDK_ENV: Final = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_WEBHOOK_SECRET",
)


@dataclass(frozen=True, slots=True)
class CliOverrides:
    """The flags that override configuration (None: not given)."""

    config: str | None = None
    agent: str | None = None
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    max_steps: int | None = None
    permission_mode: str | None = None
    sigterm_grace: float | None = None
    trust: bool = False
    yes: bool = False
    headless: bool = False

    @classmethod
    def from_args(cls, args: object) -> CliOverrides:
        """From an argparse namespace (missing attributes count as not given)."""

        def get(name: str) -> Any:
            return getattr(args, name, None)

        headless = get("headless")
        return cls(
            config=get("config"),
            agent=get("agent"),
            model=get("model"),
            provider=get("provider"),
            base_url=get("base_url"),
            max_steps=get("max_steps"),
            permission_mode=get("permission_mode") or get("mode"),
            sigterm_grace=get("sigterm_grace"),
            trust=bool(get("trust")),
            yes=bool(get("yes")),
            headless=bool(headless) if headless is not None else get("prompt") is not None,
        )


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    #: The name in `[models]`, or None for a built-in default or a raw `--model` id.
    name: str | None
    provider: ProviderName
    model_id: str
    base_url: str | None
    #: Where the key comes from; `{env = "<provider's usual variable>"}` when not configured.
    api_key: ValueRef | EnvRef
    context_window: int | None = None
    max_output_tokens: int = 8192
    prices: Prices | None = None
    #: Set when the command line's endpoint set a configured model aside: says so.
    note: str | None = None


@dataclass(frozen=True, slots=True)
class ResolvedAgent:
    name: str
    description: str | None
    model: ResolvedModel
    agent_prompt: str | None
    replace_base_prompt: bool
    agents_md: AgentsFiles
    tools: tuple[str, ...]
    permission_rules: tuple[PermissionRuleConfig, ...]
    #: Where each rule was written, parallel to `permission_rules`.
    rule_origins: tuple[str, ...]
    permission_mode: PermissionModeName
    max_steps: int
    tool_output_cap: int
    request_timeout_s: float
    stream_idle_timeout_s: float
    max_retries: int
    retry_budget_s: float
    confine_paths: bool
    compaction: CompactionConfig | BuiltinCompaction
    sigterm_grace_s: float
    hooks: tuple[HookConfig, ...]
    skills: tuple[str, ...]
    skill_dirs: tuple[str, ...]
    mcp_servers: Mapping[str, McpServerConfig]
    variables: Mapping[str, VariableConfig]
    headless: bool
    assume_yes: bool
    loaded: LoadedConfig
    #: Where each hook was written, parallel to `hooks`.
    hook_origins: tuple[str, ...] = ()
    max_parallel_tool_calls: int = DEFAULT_MAX_PARALLEL_TOOL_CALLS
    max_subagent_depth: int = DEFAULT_MAX_SUBAGENT_DEPTH
    max_concurrent_subagents: int = DEFAULT_MAX_CONCURRENT_SUBAGENTS

    @property
    def notices(self) -> tuple[str, ...]:
        """Warnings for the user (an untrusted project file, an unreadable AGENTS.md)."""
        model = (self.model.note,) if self.model.note else ()
        claude = self.loaded.claude.notices if self.loaded.claude else ()
        return self.loaded.notices + self.agents_md.notices + model + claude

    def system_prompt(self, base: str) -> str:
        """Base prompt + agent prompt + project memory (AGENTS.md, CLAUDE.md), fixed when
        the session is created."""
        parts = [] if self.replace_base_prompt and self.agent_prompt else [base]
        if self.agent_prompt:
            parts.append(self.agent_prompt.strip())
        if section := self.agents_md.prompt_section():
            parts.append(section)
        return "\n\n".join(parts)

    def check_hook_matchers(self, tool_ids: Iterable[str]) -> None:
        """ConfigFileError when a hook's `match` names no tool of `tool_ids`
        (rawtrio.config.hook_matchers: `Bash` for `bash` is an error, not a silent no-op)."""
        servers = self.loaded.config.mcp_servers
        check_hook_matchers(self.hooks, self.hook_origins, tool_ids, servers)

    def select_tools(self, tool_ids: Iterable[str]) -> tuple[str, ...]:
        """The ids the agent's `tools` globs select (`!glob` removes), in the given order."""
        return select_tools(self.tools, tool_ids)

    @property
    def model_names(self) -> tuple[str, ...]:
        """The configured models a session of this agent may switch to."""
        return tuple(self.loaded.config.models)

    def with_model(self, name: str) -> ResolvedAgent:
        """This agent on the configured model `name` (its own base URL and key)."""
        mc = self.loaded.config.models.get(name)
        if mc is None:
            known = ", ".join(self.model_names) or "none"
            raise ConfigFileError([problem("--model", "", f"a configured model ({known})", name)])
        return dataclasses.replace(self, model=_configured_model(name, mc))

    async def provider_settings(self, variables: VariableResolver) -> ProviderSettings:
        """Reads the API key (NoCredentials when the provider's usual variable is unset)."""
        from rawtrio.providers.base import ProviderSettings

        m = self.model
        default_env = API_KEY_ENV[m.provider]
        try:
            key = await variables.value_of(m.api_key, secret=True, label="api_key")
        except VariableError:
            if m.api_key.env is not None:
                raise NoCredentials(m.provider, m.api_key.env) from None
            raise
        if not key:
            raise NoCredentials(m.provider, m.api_key.env or default_env)
        return ProviderSettings(
            kind=m.provider,
            model=m.model_id,
            api_key=key,
            base_url=m.base_url or variables.environ.get(BASE_URL_ENV[m.provider]) or None,
            request_timeout_s=self.request_timeout_s,
            stream_idle_timeout_s=self.stream_idle_timeout_s,
            max_retries=self.max_retries,
            retry_budget_s=self.retry_budget_s,
        )

    def describe(self, env: Mapping[str, str] | None = None) -> str:
        """What `rawtrio config check` prints; `env` tells whether a key's variable is set."""
        env = os.environ if env is None else env
        m = self.model
        lines = [f"agent: {self.name}" + (f" — {self.description}" if self.description else "")]
        lines.append(
            f"model: {m.name or '(built-in)'} → {m.provider} {m.model_id}"
            + (f" at {m.base_url}" if m.base_url else "")
        )
        lines.append(f"api key: {self._key_status(env)}")
        lines.append(f"tools: {', '.join(self.tools)}")
        lines.append(f"permission mode: {self.permission_mode}")
        for rule, origin in zip(self.permission_rules, self.rule_origins, strict=False):
            cond = f" when {rule.when.path} ~ /{rule.when.regex}/" if rule.when else ""
            lines.append(f"  {rule.effect} {rule.match}{cond}  ({origin})")
        lines.append(
            f"max_steps: {self.max_steps}, tool output cap: {self.tool_output_cap}, "
            f"request timeout: {self.request_timeout_s:g} s"
        )
        lines.append(f"hooks: {len(self.hooks)}")
        for hook, origin in zip(self.hooks, self.hook_origins, strict=False):
            command = hook.command if isinstance(hook.command, str) else " ".join(hook.command)
            dialect = " (Claude Code dialect)" if hook.dialect == "claude-code" else ""
            lines.append(f"  {hook.event} {hook.match}: {command}{dialect}  ({origin})")
        lines.append(f"MCP servers: {', '.join(self.mcp_servers) or 'none'}")
        claude = self.loaded.claude
        if claude is not None and claude.files:
            shown = [
                f"{f.kind} {f.path}" + ("" if f.trusted else " (not trusted)") for f in claude.files
            ]
            lines.append("Claude Code settings: " + "; ".join(shown))
        memory = self.agents_md.files
        lines.append("project memory (AGENTS.md, CLAUDE.md):" + ("" if memory else " none"))
        lines.extend(f"  {f.label()}" for f in memory)
        files = [f"{layer.kind} {layer.path}" for layer in self.loaded.layers]
        lines.append("config files: " + ("; ".join(files) or "none (built-in defaults)"))
        lines.extend(f"note: {n}" for n in self.notices)
        return "\n".join(lines)

    def _key_status(self, env: Mapping[str, str]) -> str:
        """Where the key comes from, and whether its environment variable is set (the value
        itself is never read or shown; a command or file variable is not run)."""
        key = self.model.api_key
        if key.value is not None:
            return "a literal in the config file"
        name = key.env
        source = f"env {key.env}"
        if key.var is not None:
            spec = self.variables.get(key.var)
            if spec is None or spec.env is None:
                return f"from variable {key.var} (not read by config check)"
            name, source = spec.env, f"variable {key.var} (env {spec.env})"
        assert name is not None
        if env.get(name):
            return f"from {source} (set)"
        return (
            f"from {source} — {name} is NOT set: requests to {self.model.provider} will fail "
            f"until you set it"
        )


def select_tools(patterns: Iterable[str], tool_ids: Iterable[str]) -> tuple[str, ...]:
    patterns = tuple(patterns)
    chosen = []
    for tool_id in tool_ids:
        included = False
        for p in patterns:
            negated = p.startswith("!")
            if fnmatch.fnmatchcase(tool_id, p[1:] if negated else p):
                included = not negated
        if included:
            chosen.append(tool_id)
    return tuple(chosen)


def resolve_session_config(
    args: object,
    cwd: Path,
    env: Mapping[str, str],
    *,
    trust_store: TrustStore | None = None,
) -> ResolvedAgent:
    """Load the files and resolve the session's agent. ConfigError (exit 2) when bad."""
    cli = args if isinstance(args, CliOverrides) else CliOverrides.from_args(args)
    user_file, explicit = user_config_path(cli.config, env)
    store = trust_store if trust_store is not None else TrustStore.default(env)
    loaded = load_config(
        user_file,
        find_project_config(cwd),
        user_file_required=explicit,
        trust_store=store,
        trust_project=cli.trust,
    )
    claude = None  # most folders and homes have no Claude Code settings file
    if find_settings_files(cwd, env):
        from rawtrio.config.claude_settings import load_claude_settings

        claude = load_claude_settings(cwd, env, trust_store=store, trust_project=cli.trust)
    return resolve_agent(dataclasses.replace(loaded, claude=claude), cli, cwd, env)


def resolve_agent(
    loaded: LoadedConfig, cli: CliOverrides, cwd: Path, env: Mapping[str, str]
) -> ResolvedAgent:
    config = loaded.config
    name, name_src = _pick(cli.agent, "--agent", env.get(ENV_AGENT), ENV_AGENT)
    name = name or config.default_agent
    agent = loaded.agent(name)
    if agent is None:
        known = ", ".join(sorted({*config.agents, BUILTIN_AGENT}))
        hint = f"; {loaded.untrusted_project.notice()}" if loaded.untrusted_project else ""
        src = name_src or _file_of(loaded, "default_agent")
        raise ConfigFileError([problem(src, "", f"expected an agent name ({known}){hint}", name)])
    mode, mode_src = _pick(cli.permission_mode, "--mode", env.get(ENV_MODE), ENV_MODE)
    modes = get_args(PermissionModeName)
    if mode is not None and mode not in modes:
        raise ConfigFileError([problem(mode_src, "", f"expected one of {', '.join(modes)}", mode)])
    max_steps = cli.max_steps if cli.max_steps is not None else _env_int(env, ENV_MAX_STEPS)
    if max_steps is not None and max_steps < 1:
        raise ConfigFileError(
            [problem("--max-steps", "", "expected a positive integer", max_steps)]
        )
    grace = cli.sigterm_grace
    if grace is not None and not (math.isfinite(grace) and grace >= 0):
        raise ConfigFileError(
            [problem("--sigterm-grace", "", "expected seconds >= 0 (a finite number)", grace)]
        )
    prompt = agent.system_prompt
    if agent.prompt_file is not None:
        prompt = _read_prompt_file(loaded, name, Path(agent.prompt_file))
    mcp = {s: config.mcp_servers[s] for s in agent.mcp_servers}
    claude = loaded.claude  # None: no Claude Code settings file, nothing from it
    claude_rules, claude_rule_origins = (claude.rules, claude.rule_origins) if claude else ((), ())
    claude_hooks, claude_hook_origins = (claude.hooks, claude.hook_origins) if claude else ((), ())
    # rawtrio's own rules come last: under "last match wins" they decide every conflict.
    own_rules = loaded.rule_origins.get(name, ())
    hook_origins = (
        *(f"{_file_of(loaded, 'hooks')}: hooks[{i}]" for i in range(len(config.hooks))),
        *(
            f"{_file_of(loaded, 'agents', name, 'hooks')}: agents.{name}.hooks[{i}]"
            for i in range(len(agent.hooks))
        ),
        *claude_hook_origins,
    )
    return ResolvedAgent(
        name=name,
        description=agent.description,
        model=_resolve_model(loaded, agent.model, cli, env),
        agent_prompt=prompt,
        replace_base_prompt=agent.replace_base_prompt,
        agents_md=find_agents_files(cwd, env),
        tools=tuple(agent.tools),
        permission_rules=(*claude_rules, *agent.permissions),
        rule_origins=(*claude_rule_origins, *own_rules),
        permission_mode=mode or agent.permission_mode,  # type: ignore[arg-type]
        max_steps=max_steps or agent.max_steps,
        max_parallel_tool_calls=agent.max_parallel_tool_calls,
        max_subagent_depth=agent.max_subagent_depth,
        max_concurrent_subagents=agent.max_concurrent_subagents,
        tool_output_cap=agent.tool_output_cap,
        request_timeout_s=agent.request_timeout_s,
        stream_idle_timeout_s=agent.stream_idle_timeout_s,
        max_retries=agent.max_retries,
        retry_budget_s=agent.retry_budget_s,
        confine_paths=agent.confine_paths,
        compaction=agent.compaction,
        sigterm_grace_s=grace if grace is not None else config.sigterm_grace_s,
        hooks=(*config.hooks, *agent.hooks, *claude_hooks),
        hook_origins=hook_origins,
        skills=tuple(agent.skills),
        skill_dirs=tuple(config.skill_dirs),
        mcp_servers=mcp,
        variables=dict(config.variables),
        headless=cli.headless,
        assume_yes=cli.yes,
        loaded=loaded,
    )


def _read_prompt_file(loaded: LoadedConfig, agent: str, path: Path) -> str:
    """An agent's prompt file; one set by the project file must lie inside the project."""
    loc = ("agents", agent, "prompt_file")
    source = _file_of(loaded, *loc)
    layer = next((lay for lay in loaded.layers if str(lay.path) == source), None)
    within = project_root(layer.path.parent.parent) if layer and layer.kind == "project" else None
    try:
        raw = read_bounded(path, limit=MAX_PROMPT_BYTES, within=within)
        return raw.decode("utf-8")
    except UnsafeFileError as e:
        reason = e.reason
    except UnicodeDecodeError:
        reason = "not UTF-8 text"
    raise ConfigFileError(
        [problem(source, key_path(loc), f"expected a readable prompt file: {path} {reason}")]
    )


def _resolve_model(
    loaded: LoadedConfig, agent_model: str | None, cli: CliOverrides, env: Mapping[str, str]
) -> ResolvedModel:
    """The session's model; see the module docstring for keys and endpoints."""
    config = loaded.config
    named, named_src = _pick(cli.model, "--model", env.get(ENV_MODEL), ENV_MODEL)
    choice = named or agent_model or config.default_model
    kind, kind_src = _pick(cli.provider, "--provider", env.get(ENV_PROVIDER), ENV_PROVIDER)
    providers = get_args(ProviderName)
    if kind is not None and kind not in providers:
        raise ConfigFileError(
            [problem(kind_src, "", f"expected one of {', '.join(providers)}", kind)]
        )
    base_url = cli.base_url or None
    chosen = config.models.get(choice) if choice is not None else None
    if chosen is not None:
        assert choice is not None
        if _serves(chosen, kind, base_url):
            return _configured_model(choice, chosen)
        flag, value = (
            ("--base-url", base_url)
            if kind in (None, chosen.provider)
            else (
                kind_src,
                kind,
            )
        )
        where = f"{chosen.provider} at {chosen.base_url or 'its default endpoint'}"
        if named is not None:
            raise ConfigFileError(
                [
                    problem(
                        flag,
                        "",
                        f"model {choice!r} ({named_src}) is {where}, and its key is only sent "
                        f"there; drop {flag}, or add a model with this provider and base_url "
                        "to [models]",
                        value,
                    )
                ]
            )
    provider: ProviderName = kind or (chosen.provider if chosen else "anthropic")  # type: ignore[assignment]
    if chosen is not None or base_url is not None:
        # The command line names an endpoint: a model configured for exactly it, if any.
        for name, mc in config.models.items():
            if mc.provider == provider and _same_url(mc.base_url, base_url):
                return _configured_model(name, mc)
    raw_id = choice if choice is not None and choice not in config.models else None
    model_id = raw_id or BUILTIN_MODEL_IDS[provider]
    note = None
    if chosen is not None:
        note = (
            f"{kind_src if kind not in (None, chosen.provider) else '--base-url'}: not using "
            f"model {choice!r} from the config ({chosen.provider} at "
            f"{chosen.base_url or 'its default endpoint'}) nor its key; using {provider} "
            f"{model_id} with the key from {API_KEY_ENV[provider]}"
        )
    return ResolvedModel(
        name=None,
        provider=provider,
        model_id=model_id,
        base_url=base_url,
        api_key=EnvRef(API_KEY_ENV[provider]),
        note=note,
    )


def _configured_model(name: str, mc: ModelConfig) -> ResolvedModel:
    return ResolvedModel(
        name=name,
        provider=mc.provider,
        model_id=mc.model_id,
        base_url=mc.base_url,
        api_key=mc.api_key or EnvRef(API_KEY_ENV[mc.provider]),
        context_window=mc.context_window,
        max_output_tokens=mc.max_output_tokens,
        prices=mc.prices,
    )


def _serves(mc: ModelConfig, kind: str | None, base_url: str | None) -> bool:
    """Whether the configured model is the endpoint the command line asks for."""
    if kind is not None and kind != mc.provider:
        return False
    return base_url is None or _same_url(mc.base_url, base_url)


def _same_url(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.rstrip("/") == b.rstrip("/")


def _pick(
    flag: str | None, flag_name: str, env_value: str | None, env_name: str
) -> tuple[str | None, str]:
    if flag:
        return flag, flag_name
    if env_value:
        return env_value, env_name
    return None, ""


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigFileError([problem(name, "", "expected a positive integer", raw)]) from None


def _file_of(loaded: LoadedConfig, *loc: str) -> str:
    for layer in reversed(loaded.layers):
        data: Any = layer.data
        for part in loc:
            data = data.get(part) if isinstance(data, dict) else None
        if data is not None:
            return str(layer.path)
    return "defaults"
