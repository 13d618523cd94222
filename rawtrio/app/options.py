"""A session's options from the configuration files, command-line flags and environment.

Precedence (docs/configuration.md): flag > `RAWTRIO_*` variable > project file > user file
> defaults. The provider SDKs read their own `*_BASE_URL` variables when neither a flag
nor the model's config sets a base URL. Which key goes to which endpoint is decided in
`rawtrio.config.resolve` (a key is only ever sent to the endpoint it was configured for).

The system prompt is built here from files a project provides (AGENTS.md, prompt files,
skills), so it passes the session's `Redactor` before it is stored or sent, like every
other text; the provider keys found in the environment are registered with it first.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from rawtrio.checkpoints.paths import checkpoints_root
from rawtrio.cli.flags import session_tool_rules
from rawtrio.config import (
    ResolvedAgent,
    TrustStore,
    VariableResolver,
    project_root,
    resolve_session_config,
    select_tools,
)
from rawtrio.config.agents_md import NestedMemory, home_folder
from rawtrio.config.resolve import API_KEY_ENV
from rawtrio.context.accounting import ModelPrices
from rawtrio.context.compaction_state import CompactionSettings
from rawtrio.errors import UsageError
from rawtrio.hooks import HookEvent, HookSpec
from rawtrio.mcp.catalog import mcp_cache_dir
from rawtrio.mcp.project import project_mcp, with_project_servers
from rawtrio.permissions.policy import rules_from_config
from rawtrio.permissions.rules import PermissionMode, Rule, make_rule
from rawtrio.redaction import LOG_FILTER
from rawtrio.runtime.prompt import BASE_PROMPT, redacted_prompt
from rawtrio.runtime.session import SessionOptions
from rawtrio.skills import (
    Skill,
    discover_skills,
    load_skill_tool,
    skill_roots,
    skills_prompt,
)
from rawtrio.skills.tool import TOOL_ID as SKILL_TOOL_ID
from rawtrio.tools.base import Tool
from rawtrio.tools.builtin import AVAILABLE_BUILTINS, builtin_registry
from rawtrio.tools.settings import ToolSettings
from rawtrio.tools.task import reads_only

if TYPE_CHECKING:
    from rawtrio.config.defaults import BuiltinCompaction
    from rawtrio.config.schema import CompactionConfig, Prices

#: The tools a hook's `match` may name: the built-ins and the skill tool (MCP tools are
#: checked against the configured servers).
HOOKABLE_TOOL_IDS: Final = (*AVAILABLE_BUILTINS, SKILL_TOOL_ID)


@dataclass(frozen=True)
class SessionSetup:
    """What a front end needs to open a session: options, and what to tell the user."""

    options: SessionOptions
    notices: tuple[str, ...]
    agent: str


async def prepare_session(
    args: argparse.Namespace, *, headless: bool, env: Mapping[str, str] | None = None
) -> SessionSetup:
    """Resolve configuration, flags and environment into a session's options.

    `env` is the environment to resolve against (API keys, `RAWTRIO_*`, variables): this
    process's by default, an attached client's on a host (docs/contracts.md). When given,
    it is also the session's process environment (`SessionOptions.env`: tools, hooks, MCP
    servers start from it, secrets stripped).

    ConfigError (exit 2) for bad configuration or flags; NoCredentials (exit 4) when the
    model's API key is missing. Reads the API key (and other variables) only here. The
    file work (config files, AGENTS.md, skills) runs in a worker thread.
    """
    args.headless = headless
    session_env = env  # None: the session's processes take this process's environment
    # The reads are bounded (rawtrio.config.safe_read: no FIFO, device or endless file), and
    # a cancelled caller does not wait for the thread.
    env = os.environ if env is None else env
    found = await trio.to_thread.run_sync(_resolve_files, args, env, abandon_on_cancel=True)
    resolved, cwd, skills = found.resolved, found.cwd, found.skills
    variables = VariableResolver(resolved.variables, env=env, cwd=cwd)
    for env_name in sorted(set(API_KEY_ENV.values())):
        if value := env.get(env_name):
            variables.redactor.add(env_name, value)
    LOG_FILTER.watch(variables.redactor)
    # --provider / --base-url were applied by the resolution, which never pairs a key with
    # an endpoint it was not configured for.
    provider = await resolved.provider_settings(variables)
    hooks = [
        HookSpec(
            HookEvent(h.event),
            h.command if isinstance(h.command, str) else tuple(h.command),
            matcher=h.match,
            shell=h.shell,
            timeout_s=h.timeout_s,
            env=await variables.environment(h.env),
            dialect=h.dialect,
        )
        for h in resolved.hooks
    ]
    extra_tools = (load_skill_tool(skills),) if skills else ()
    prompt = resolved.system_prompt(getattr(args, "system_prompt", None) or BASE_PROMPT)
    if skills:
        prompt = f"{prompt}\n\n{skills_prompt(skills)}"
    if appended := getattr(args, "append_system_prompt", None):
        prompt = f"{prompt}\n\n{appended}"
    prompt = redacted_prompt(prompt, variables.redactor)
    tool_ids = [*AVAILABLE_BUILTINS, *(t.id for t in extra_tools)]
    config_rules = rules_from_config(resolved.permission_rules, resolved.rule_origins)
    flag_rules = getattr(args, "tool_rules", None)
    home = home_folder(env)

    def rules_for_cwd(other: Path) -> tuple[Rule, ...]:
        """The configuration's rules, then the command line's, its path patterns anchored
        at the session's directory `other` (a resumed session keeps its own)."""
        return (*config_rules, *_flag_rules(flag_rules, other, home))

    options = SessionOptions(
        cwd=cwd,
        provider=provider,
        max_steps=resolved.max_steps,
        max_parallel_tool_calls=resolved.max_parallel_tool_calls,
        max_subagent_depth=resolved.max_subagent_depth,
        max_concurrent_subagents=resolved.max_concurrent_subagents,
        max_output_tokens=resolved.model.max_output_tokens,
        tools=ToolSettings(
            output_cap=resolved.tool_output_cap,
            sigterm_grace_s=resolved.sigterm_grace_s,
            redactor=variables.redactor,
            confine=resolved.confine_paths,
            task_reads_only=_task_reads_only(resolved, extra_tools),
        ),
        system_prompt=prompt,
        permission_rules=rules_for_cwd(cwd),
        rules_for_cwd=rules_for_cwd,
        permission_mode=PermissionMode(resolved.permission_mode),
        headless=headless,
        assume_yes=resolved.assume_yes,
        save_allow_rule=_rule_saver(resolved, cwd, env),
        hooks=tuple(hooks),
        extra_tools=extra_tools,
        tool_selection=resolved.select_tools(tool_ids),
        skills=tuple(skills),
        model_name=resolved.model.name,
        model_names=resolved.model_names,
        context_window=resolved.model.context_window,
        prices=_prices(resolved.model.prices),
        compaction=_compaction(resolved.compaction),
        mcp_servers=resolved.mcp_servers,
        mcp_tool_patterns=resolved.tools,
        mcp_cache_dir=mcp_cache_dir(env),
        variables=variables,
        env=session_env,
        nested_memory=_nested_memory(cwd, env, resolved),
        checkpoint_dir=checkpoints_root(env),
    )

    async def options_for_model(name: str) -> SessionOptions:
        agent = resolved.with_model(name)
        settings = await agent.provider_settings(variables)
        return dataclasses.replace(
            options,
            provider=settings,
            max_output_tokens=agent.model.max_output_tokens,
            model_name=name,
            context_window=agent.model.context_window,
            prices=_prices(agent.model.prices),
        )

    async def options_for_agent(name: str) -> SessionOptions:
        """A `task` child's options for the configured agent `name` (same flags, env)."""
        other = argparse.Namespace(**vars(args))
        other.agent = name
        return (await prepare_session(other, headless=headless, env=session_env)).options

    options = dataclasses.replace(
        options, options_for_model=options_for_model, options_for_agent=options_for_agent
    )
    return SessionSetup(
        options=options,
        notices=(*resolved.notices, *found.warnings),
        agent=resolved.name,
    )


def _task_reads_only(
    resolved: ResolvedAgent, extra_tools: tuple[Tool, ...]
) -> Callable[[str | None], bool]:
    """Whether a `task` child of a configured agent (None: one like this session's) can only
    read (`rawtrio.tools.task.reads_only`), judged from the agent's configuration the first
    time a call names it. Project MCP servers are added to every agent's child."""
    loaded = resolved.loaded
    own = loaded.agent(resolved.name)
    project_servers = set(resolved.mcp_servers) - set(own.mcp_servers if own else ())

    @functools.cache
    def judge(name: str | None) -> bool:
        if name is None:
            globs, depth = resolved.tools, resolved.max_subagent_depth
            servers = bool(resolved.mcp_servers)
        elif (agent := loaded.agent(name)) is not None:
            globs, depth = tuple(agent.tools), agent.max_subagent_depth
            servers = bool(agent.mcp_servers or project_servers)
        else:
            return False  # an unknown agent: the call fails, alone
        candidates = (*builtin_registry().tools(), *extra_tools)
        chosen = set(select_tools(globs, (t.id for t in candidates)))
        deepest = min(resolved.max_subagent_depth, depth)
        return reads_only(
            (t for t in candidates if t.id in chosen),
            tool_globs=globs,
            mcp_servers=servers,
            # A child (depth 1 or more) keeps `task` only below its depth bound.
            may_nest=deepest >= 2,
        )

    return judge


def _compaction(config: CompactionConfig | BuiltinCompaction) -> CompactionSettings:
    """The `[compaction]` table as the runtime's settings: the same fields, read one by
    one (`model_dump` would build the model's serializer, some 10 % of a cold run's work
    before the provider SDK, for six plain values)."""
    names = (f.name for f in dataclasses.fields(CompactionSettings))
    return CompactionSettings(**{name: getattr(config, name) for name in names})


def _nested_memory(
    cwd: Path, env: Mapping[str, str], resolved: ResolvedAgent
) -> Callable[[str, Path], str | None]:
    """Offers the memory files below `cwd` as `read_file` meets their folders, each once
    per session (one `NestedMemory` per session id)."""
    sessions: dict[str, NestedMemory] = {}

    def offer(session_id: str, read: Path) -> str | None:
        memory = sessions.get(session_id)
        if memory is None:
            memory = sessions[session_id] = NestedMemory(cwd, env, resolved.agents_md)
        return memory.note_for(read)

    return offer


def _flag_rules(entries: object, cwd: Path, home: Path) -> tuple[Rule, ...]:
    """`--allowedTools` / `--disallowedTools` (`rawtrio.cli.flags.ToolRules`: the names and
    patterns as given, or rule objects from a host's client) for a session working in
    `cwd`, after the configuration's rules: the command line wins. `UsageError` naming a
    bad one (a client of a host sends them as JSON)."""
    if entries is None:
        return ()
    where = "--allowedTools/--disallowedTools"
    try:
        rules = session_tool_rules(entries, cwd=cwd, home=home)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    found: list[Rule] = []
    for i, rule in enumerate(rules):
        try:
            when = rule.get("when") or {}
            found.append(
                make_rule(
                    str(rule["match"]),
                    str(rule["effect"]),
                    when.get("path"),
                    when.get("regex"),
                    origin=f"--{'disallowed' if rule['effect'] == 'deny' else 'allowed'}Tools",
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError, re.error) as exc:
            raise UsageError(f"{where} rule {i + 1}: {exc}") from None
    return tuple(found)


def _prices(prices: Prices | None) -> ModelPrices | None:
    if prices is None:
        return None
    return ModelPrices(prices.input, prices.output, prices.cache_read, prices.cache_write)


@dataclass(frozen=True)
class _Found:
    resolved: ResolvedAgent
    cwd: Path
    skills: list[Skill]
    warnings: tuple[str, ...]


def _resolve_files(args: argparse.Namespace, env: Mapping[str, str]) -> _Found:
    cwd = Path(getattr(args, "cwd", None) or os.getcwd()).resolve()
    if not cwd.is_dir():
        raise UsageError(f"--cwd: {cwd} is not a directory")
    resolved = resolve_session_config(args, cwd, env)
    mcp = project_mcp(
        cwd,
        resolved.loaded.config.mcp_servers,
        store=TrustStore.default(env),
        trust=bool(getattr(args, "trust", False)),
        strict=False,  # a broken file is said, and its servers left out
    )
    resolved = with_project_servers(resolved, mcp)
    resolved.check_hook_matchers(HOOKABLE_TOOL_IDS)
    roots, missing = skill_roots(cwd, resolved.skill_dirs, home=home_folder(env))
    discovery = discover_skills(roots, project=project_root(cwd))
    skills = [s for s in discovery.skills if select_tools(resolved.skills, [s.name])]
    warnings = (*missing, *discovery.warnings, *mcp.notices)
    return _Found(resolved, cwd, skills, warnings)


def _rule_saver(
    resolved: ResolvedAgent, cwd: Path, env: Mapping[str, str]
) -> Callable[[Rule], None]:
    """Saves "allow always for this project" rules to the project's config file."""

    def save(rule: Rule) -> None:
        # The config file editor (with the TOML parser) is loaded by the first rule saved.
        from rawtrio.config.edit import default_project_file, save_allow_rule

        when = rule.when
        save_allow_rule(
            resolved.loaded.project_file or default_project_file(cwd),
            resolved.name,
            rule.match,
            when.path if when else None,
            when.regex.pattern if when else None,
            trust_store=TrustStore.default(env),
        )

    return save
