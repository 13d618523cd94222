"""Finding, reading, merging and validating the configuration files.

Files, lowest precedence first (see docs/configuration.md):

1. built-in defaults (the `RawtrioConfig` field defaults, and an agent named `default`);
2. the user file: `--config PATH`, else `$RAWTRIO_CONFIG`, else
   `platformdirs.user_config_path("rawtrio")/config.toml` (optional unless named explicitly);
3. the project file: the nearest `.rawtrio/config.toml` from the working directory up to the
   repository root (the nearest folder holding `.git`); applied only when it needs no trust
   or its folder is trusted (`rawtrio.config.trust`).

Merging: tables merge key by key, the later file winning; arrays are replaced, except
`permissions` arrays, which are concatenated (user rules first, so project rules win under
"last match wins"). Relative paths (`variables.*.file`, `agents.*.prompt_file`,
`mcp_servers.*.cwd`) are taken against the folder of the file that set them; relative
`skill_dirs` against the project root (the repository root, else the working directory).

Each file is validated alone first (so a mistake is reported against the file that made it,
with indices as written there); the merged result is validated again for what only the
whole can tell (a required key no file set, cross-references between files).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from rawtrio.config.defaults import BUILTIN_AGENT, BuiltinAgent, BuiltinConfig
from rawtrio.config.errors import ConfigFileError, ConfigProblem, Loc, key_path, problem
from rawtrio.config.folders import folders_up_to_root as folders_up_to_root
from rawtrio.config.folders import project_root as project_root
from rawtrio.config.folders import repo_root as repo_root
from rawtrio.config.safe_read import MAX_CONFIG_BYTES, UnsafeFileError, read_bounded
from rawtrio.config.toml_file import TomlProblem, parse_toml
from rawtrio.config.trust import ProjectTrust, TrustStore
from rawtrio.config.user_path import user_config_path as user_config_path

if TYPE_CHECKING:
    from rawtrio.config.claude_settings import ClaudeSettings
    from rawtrio.config.schema import AgentConfig, McpServerConfig, RawtrioConfig, ValueRef

PROJECT_FILE: Final = Path(".rawtrio") / "config.toml"
#: Tables and arrays nested deeper than this are refused (a real config nests about 5 deep;
#: thousands of levels would exhaust the recursion limit of the parser and the validator).
#: Problems that another file may fix, so they are only reported for the merged result.
_WHOLE_ONLY: Final = frozenset({"missing", "value_error"})

#: Permission modes that run tools without asking; a project may set them only once trusted.
_LOOSE_MODES: Final = ("accept-edits", "bypass")

SourceOf = Callable[[Loc], str]


@dataclass(frozen=True, slots=True)
class ConfigLayer:
    kind: Literal["user", "project"]
    path: Path
    data: Mapping[str, Any]
    #: sha256 of the bytes parsed (what project trust is granted for).
    sha256: str = ""
    #: Warnings about entries left out of this file (a project's skill folder outside it).
    notices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    #: The validated files, merged; the built-in values when no file was applied (then
    #: nothing was validated and the schema's models were not even imported).
    config: RawtrioConfig | BuiltinConfig
    #: The files that were applied, lowest precedence first.
    layers: tuple[ConfigLayer, ...]
    project_file: Path | None = None
    #: Set when a project file exists but was ignored because its folder is not trusted.
    untrusted_project: ProjectTrust | None = None
    notices: tuple[str, ...] = ()
    #: Where each agent's merged permission rules came from ("FILE: agents.x.permissions[i]").
    rule_origins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: What Claude Code's settings files add (hooks, permission rules); set by
    #: `resolve_session_config` (rawtrio.config.claude_settings).
    claude: ClaudeSettings | None = None

    def with_mcp_servers(self, servers: Mapping[str, McpServerConfig]) -> LoadedConfig:
        """This configuration with `servers` added to its `[mcp_servers]` (a project's
        `.mcp.json`)."""
        merged = {**self.config.mcp_servers, **servers}
        if isinstance(self.config, BuiltinConfig):
            config: RawtrioConfig | BuiltinConfig = dataclasses.replace(
                self.config, mcp_servers=merged
            )
        else:
            config = self.config.model_copy(update={"mcp_servers": merged})
        return dataclasses.replace(self, config=config)

    def agent(self, name: str) -> AgentConfig | BuiltinAgent | None:
        found = self.config.agents.get(name)
        if found is None and name == BUILTIN_AGENT:
            return BuiltinAgent()
        return found


def find_project_config(cwd: Path) -> Path | None:
    for folder in folders_up_to_root(cwd):
        candidate = folder / PROJECT_FILE
        # lexists: a FIFO, a dangling link or a symlink loop there is reported, not skipped.
        if os.path.lexists(candidate) and not candidate.is_dir():
            return candidate
    return None


def read_toml(path: Path, *, within: Path | None = None) -> dict[str, Any]:
    """Parse a config file read through `safe_read` (`within`: the project it must stay in)."""
    data, _ = read_toml_with_digest(path, within=within)
    return data


def read_toml_with_digest(path: Path, *, within: Path | None = None) -> tuple[dict[str, Any], str]:
    try:
        raw = read_bounded(path, limit=MAX_CONFIG_BYTES, within=within)
    except UnsafeFileError as e:
        raise ConfigFileError([problem(path, "", f"cannot read the file: it {e.reason}")]) from None
    try:
        data = parse_toml(raw)
    except TomlProblem as e:
        raise ConfigFileError([problem(path, "", str(e))]) from None
    return data, hashlib.sha256(raw).hexdigest()


def load_config(
    user_file: Path | None,
    project_file: Path | None,
    *,
    user_file_required: bool = False,
    trust_store: TrustStore | None = None,
    trust_project: bool = False,
) -> LoadedConfig:
    """Read, check and merge the files. `trust_project` (`--trust`) trusts the project
    folder for this file's content and remembers it."""
    layers: list[ConfigLayer] = []
    # lexists: a dangling link or a symlink loop at the default path is an error, not "none".
    if user_file is not None and (user_file_required or os.path.lexists(user_file)):
        layers.append(read_layer("user", user_file))
    notices: list[str] = []
    untrusted: ProjectTrust | None = None
    if project_file is not None:
        folder = project_file.parent.parent
        layer = read_layer("project", project_file, within=project_root(folder))
        reasons = needs_trust(layer.data)
        digest = layer.sha256
        store = trust_store
        if not reasons or (store is not None and store.is_trusted(folder, digest)):
            layers.append(layer)
        elif trust_project and store is not None:
            store.trust(folder, digest)
            layers.append(layer)
        else:
            untrusted = ProjectTrust(folder, project_file, digest, reasons)
            notices.append(untrusted.notice())
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = merge(merged, layer.data)
        notices.extend(layer.notices)
    # Without files nothing is validated: pydantic is not even imported (docs/benchmarks.md).
    config = _validate_merged(merged, layers) if layers else BuiltinConfig()
    return LoadedConfig(
        config=config,
        layers=tuple(layers),
        project_file=project_file,
        untrusted_project=untrusted,
        notices=tuple(notices),
        rule_origins=_rule_origins(layers),
    )


def _validate_merged(merged: dict[str, Any], layers: list[ConfigLayer]) -> RawtrioConfig:
    """The merged files against the schema, then the cross-references between them."""
    from pydantic import ValidationError

    from rawtrio.config.errors import from_validation_error
    from rawtrio.config.schema import RawtrioConfig

    try:
        config = RawtrioConfig.model_validate(merged)
    except ValidationError as e:
        raise from_validation_error(e, RawtrioConfig, _source_finder(layers)) from None
    problems = list(_cross_references(config, _source_finder(layers)))
    if problems:
        raise ConfigFileError(problems)
    return config


def read_layer(
    kind: Literal["user", "project"], path: Path, *, within: Path | None = None
) -> ConfigLayer:
    """One file, checked alone. `within`: the project a project file belongs to; the skill
    folders it names must lie inside it (those outside are left out, with a notice)."""
    raw, digest = read_toml_with_digest(path, within=within)
    notices = _confine_skill_dirs(raw, path, within) if within is not None else ()
    if kind == "project" and "host" in raw:
        del raw["host"]
        notices = (*notices, f"{path}: [host] is read from the user config file only; ignored")
    data = _absolutize(raw, path.parent)
    from pydantic import ValidationError

    from rawtrio.config.errors import from_error_details
    from rawtrio.config.schema import RawtrioConfig

    try:
        RawtrioConfig.model_validate(data)
    except ValidationError as e:
        own = [d for d in e.errors(include_url=False) if d["type"] not in _WHOLE_ONLY]
        if own:
            raise from_error_details(own, RawtrioConfig, lambda _: str(path)) from None
    return ConfigLayer(kind, path, data, digest, notices)


def _confine_skill_dirs(data: dict[str, Any], path: Path, project: Path) -> tuple[str, ...]:
    """Keep only the `skill_dirs` entries of a project file that lie inside the project.

    Each entry is taken against the project root (`~` expanded) and resolved with every
    symlink followed; it is replaced by that resolved path, so discovery reads it confined
    to the project. An entry outside (`/home/user/.ssh`, `../../other`, a link out of the
    project) is dropped with a notice naming the file and the entry: skills are skipped,
    never fatal. The user's own files may name any folder."""
    entries = data.get("skill_dirs")
    if not isinstance(entries, list):
        return ()
    root = Path(os.path.realpath(project))
    kept: list[Any] = []
    notices: list[str] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, str) or not entry:
            kept.append(entry)  # the schema reports it
            continue
        given = Path(entry).expanduser()
        real = Path(os.path.realpath(given if given.is_absolute() else root / given))
        if real.is_relative_to(root):
            kept.append(str(real))
            continue
        notices.append(
            f"{path}: {key_path(('skill_dirs', i))} = {entry!r} resolves to {real}, outside "
            f"the project {root}; rawtrio reads a project's skills only from inside the "
            "project; skipped"
        )
    data["skill_dirs"] = kept
    return tuple(notices)


def needs_trust(data: Mapping[str, Any]) -> tuple[str, ...]:
    """What in a (project) file runs code, grants permissions (allow rules, a permission
    mode that skips asking, file tools let out of the working directory), receives API keys
    or names files to read (a prompt file, a file variable)."""
    reasons: list[str] = []
    agents = _table(data.get("agents"))
    if data.get("hooks") or any(_table(a).get("hooks") for a in agents.values()):
        reasons.append("hooks")
    if any("command" in _table(v) for v in _table(data.get("variables")).values()):
        reasons.append("command variables")
    if any("file" in _table(v) for v in _table(data.get("variables")).values()):
        reasons.append("file variables")
    if data.get("mcp_servers"):
        reasons.append("mcp_servers")
    rules = [r for a in agents.values() for r in _list(_table(a).get("permissions"))]
    if any(_table(r).get("effect") == "allow" for r in rules):
        reasons.append("allow rules")
    if any("base_url" in _table(m) for m in _table(data.get("models")).values()):
        reasons.append("model base_url")
    if any("prompt_file" in _table(a) for a in agents.values()):
        reasons.append("prompt_file")
    # Settings that loosen the user's own: tools that run without asking, file tools let
    # out of the working directory.
    if any(_table(a).get("permission_mode") in _LOOSE_MODES for a in agents.values()):
        reasons.append("permission_mode " + "/".join(_LOOSE_MODES))
    if any(_table(a).get("confine_paths") is False for a in agents.values()):
        reasons.append("confine_paths = false")
    return tuple(reasons)


def merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = merge(old, value)
        elif key == "permissions" and isinstance(old, list) and isinstance(value, list):
            out[key] = [*old, *value]
        else:
            out[key] = value
    return out


def _absolutize(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    def fix(value: Any) -> Any:
        if not isinstance(value, str) or not value:
            return value
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else folder / p)

    for var in _table(data.get("variables")).values():
        if isinstance(var, dict) and "file" in var:
            var["file"] = fix(var["file"])
    for agent in _table(data.get("agents")).values():
        if isinstance(agent, dict) and "prompt_file" in agent:
            agent["prompt_file"] = fix(agent["prompt_file"])
    for server in _table(data.get("mcp_servers")).values():
        if isinstance(server, dict) and "cwd" in server:
            server["cwd"] = fix(server["cwd"])
    if isinstance(data.get("skill_dirs"), list):
        # Relative entries stay relative: they are taken against the session's project root
        # (rawtrio.skills.discovery), not this file's folder.
        data["skill_dirs"] = [
            str(Path(d).expanduser()) if isinstance(d, str) and d else d for d in data["skill_dirs"]
        ]
    return data


def _source_finder(layers: list[ConfigLayer]) -> SourceOf:
    """The file a merged key came from: the one holding most of its path (later wins)."""

    def source_of(loc: Loc) -> str:
        best, depth = "defaults", 0
        for layer in layers:
            n = max(n for n in range(len(loc) + 1) if _has(layer.data, loc[:n]))
            if n >= depth and n > 0:
                best, depth = str(layer.path), n
        return best if depth else (str(layers[-1].path) if layers else best)

    return source_of


def _has(data: Any, loc: Loc) -> bool:
    for part in loc:
        if isinstance(data, list) and isinstance(part, int):
            if part >= len(data):
                return False
            data = data[part]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return False
    return True


def _cross_references(config: RawtrioConfig, source_of: SourceOf) -> Iterator[ConfigProblem]:
    def bad(loc: Loc, expected: str, got: Any) -> ConfigProblem:
        return problem(source_of(loc), key_path(loc), expected, got)

    models = sorted(config.models)
    agents = sorted({*config.agents, BUILTIN_AGENT})
    if config.default_agent not in agents:
        yield bad(
            ("default_agent",),
            f"expected an agent name ({', '.join(agents)})",
            config.default_agent,
        )
    if config.default_model is not None and config.default_model not in config.models:
        yield bad(
            ("default_model",),
            f"expected a name in [models] ({', '.join(models) or 'none defined'})",
            config.default_model,
        )
    for name, agent in config.agents.items():
        if agent.model is not None and agent.model not in config.models:
            yield bad(
                ("agents", name, "model"),
                f"expected a name in [models] ({', '.join(models) or 'none defined'})",
                agent.model,
            )
        for i, ref in enumerate(agent.mcp_servers):
            if ref not in config.mcp_servers:
                yield bad(
                    ("agents", name, "mcp_servers", i), "expected a name in [mcp_servers]", ref
                )
        if agent.prompt_file is not None and not os.path.lexists(agent.prompt_file):
            yield bad(
                ("agents", name, "prompt_file"), "expected an existing file", agent.prompt_file
            )
        for j, hook in enumerate(agent.hooks):
            yield from _refs(config, hook.env, ("agents", name, "hooks", j, "env"), bad)
    for j, hook in enumerate(config.hooks):
        yield from _refs(config, hook.env, ("hooks", j, "env"), bad)
    for name, model in config.models.items():
        if model.api_key is not None:
            yield from _refs(config, {"api_key": model.api_key}, ("models", name), bad)
    for name, server in config.mcp_servers.items():
        yield from _refs(config, server.env, ("mcp_servers", name, "env"), bad)
        yield from _refs(config, server.headers, ("mcp_servers", name, "headers"), bad)


def _refs(
    config: RawtrioConfig, values: Mapping[str, ValueRef], loc: Loc, bad: Any
) -> Iterator[ConfigProblem]:
    for key, ref in values.items():
        if ref.var is not None and ref.var not in config.variables:
            known = ", ".join(sorted(config.variables)) or "none defined"
            yield bad((*loc, key, "var"), f"expected a name in [variables] ({known})", ref.var)


def _rule_origins(layers: list[ConfigLayer]) -> dict[str, tuple[str, ...]]:
    """Where each rule was written. The text reaches the model (a denial names its rule),
    so the file is named relative to the project or `~`, never by its absolute path."""
    origins: dict[str, list[str]] = {}
    for layer in layers:
        shown = short_config_path(layer)
        for name, agent in _table(layer.data.get("agents")).items():
            for i, _ in enumerate(_list(_table(agent).get("permissions"))):
                origins.setdefault(name, []).append(
                    f"{shown}: {key_path(('agents', name, 'permissions', i))}"
                )
    return {k: tuple(v) for k, v in origins.items()}


def short_config_path(layer: ConfigLayer) -> str:
    """A config file's name without revealing where the user's files live: relative to the
    project for the project file, `~/…` under the home folder, else the bare file name."""
    path = layer.path.absolute()
    if layer.kind == "project":
        root = project_root(path.parent.parent)
        with contextlib.suppress(ValueError):
            return path.resolve().relative_to(root).as_posix()
    with contextlib.suppress(RuntimeError, ValueError):
        return "~/" + path.relative_to(Path.home()).as_posix()
    return path.name


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
