"""Claude Desktop / Claude Code / Codex MCP server configs as rawtrio config (`rawtrio mcp
import`).

Accepted files: `claude_desktop_config.json` and `.mcp.json` (`{"mcpServers": {...}}`),
`~/.claude.json` (its top-level `mcpServers` and each project's), the bare mapping of
servers, and Codex's `~/.codex/config.toml` (its `[mcp_servers.NAME]` tables; a file whose
name ends in `.toml`). Each server becomes a `[mcp_servers.NAME]` table:

- stdio (`command` + `args`) → `command = [command, *args]` (run without a shell);
  `env` and `cwd` kept;
- `"type": "http"` / `"streamable-http"` (`url`, `headers`) → `url`, `headers`;
- `"type": "sse"` is not supported by rawtrio and is skipped with a warning;
- a value that is exactly `${VAR}` becomes `{ env = "VAR" }`; any other `${VAR}` or
  `${VAR:-default}` is kept as written and expanded when the server starts
  (`rawtrio.mcp.expand`), as Claude Code does;
- Codex: `http_headers` → `headers`, `env_http_headers` → `{ env = … }` headers,
  `bearer_token_env_var` → an `Authorization = "Bearer ${VAR}"` header,
  `startup_timeout_sec` / `tool_timeout_sec` → `startup_timeout_s` / `call_timeout_s`,
  `enabled_tools` / `disabled_tools` → `tools`; `enabled = false` skips the server;
- literal values in `env`/`headers` are kept but flagged (they may be secrets: consider a
  `secret` variable).

The result is checked against the config schema before it is printed or written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rawtrio.mcp.catalog import SERVER_NAME_RE

_WHOLE_VAR: Final = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}$")
_BARE_KEY: Final = re.compile(r"^[A-Za-z0-9_-]+$")
_KNOWN: Final = {"type", "command", "args", "env", "cwd", "url", "headers", "transport"}
#: Codex keys beyond those (`[mcp_servers.NAME]` in ~/.codex/config.toml).
_CODEX: Final = {
    "http_headers",
    "env_http_headers",
    "bearer_token_env_var",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "enabled",
    "env_vars",
}
#: Where `_from_codex` passes settings that map onto rawtrio keys directly.
_RAWTRIO_KEYS: Final = "\0rawtrio"


class McpImportError(ValueError):
    """The file is not a `mcpServers` JSON document."""


@dataclass
class Imported:
    #: Server name → its config table (plain data, as in the TOML file).
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def toml(self) -> str:
        """The `[mcp_servers.NAME]` tables, ready to append to a config file."""
        return "\n".join(_table(name, table) for name, table in self.servers.items())


def import_servers(text: str, source: str = "the file") -> Imported:
    """Convert `mcpServers` JSON text (or, for a `source` ending in `.toml`, a Codex
    config). McpImportError names what was wrong."""
    if source.endswith(".toml"):
        return import_codex(text, source)
    try:
        data = json.loads(text)
    except ValueError as e:
        raise McpImportError(f"{source}: not valid JSON ({e})") from None
    return _convert(_server_maps(data, source))


def import_codex(text: str, source: str = "config.toml") -> Imported:
    """Convert the `[mcp_servers]` of a Codex `config.toml`."""
    import tomllib  # only when a Codex file is imported

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise McpImportError(f"{source}: not valid TOML ({e})") from None
    servers = data.get("mcp_servers")
    if not isinstance(servers, dict) or not servers:
        raise McpImportError(f"{source}: no [mcp_servers.NAME] tables found")
    return _convert([("mcp_servers", {k: _from_codex(v) for k, v in servers.items()})])


def _from_codex(spec: Any) -> Any:
    """A Codex server table in the `mcpServers` shape, Codex-only keys mapped."""
    if not isinstance(spec, dict):
        return spec
    out = {k: v for k, v in spec.items() if k not in _CODEX}
    headers: dict[str, Any] = dict(spec.get("http_headers") or {})
    for header, var in (spec.get("env_http_headers") or {}).items():
        headers[header] = f"${{{var}}}"
    if isinstance(var := spec.get("bearer_token_env_var"), str):
        headers["Authorization"] = f"Bearer ${{{var}}}"
    if headers:
        out["headers"] = headers
    if "url" in spec and "type" not in spec:
        out["type"] = "http"
    rawtrio: dict[str, Any] = {}
    if isinstance(spec.get("startup_timeout_sec"), int | float):
        rawtrio["startup_timeout_s"] = float(spec["startup_timeout_sec"])
    elif isinstance(spec.get("startup_timeout_ms"), int | float):
        rawtrio["startup_timeout_s"] = spec["startup_timeout_ms"] / 1000
    if isinstance(spec.get("tool_timeout_sec"), int | float):
        rawtrio["call_timeout_s"] = float(spec["tool_timeout_sec"])
    enabled, disabled = spec.get("enabled_tools"), spec.get("disabled_tools")
    if isinstance(enabled, list) or isinstance(disabled, list):
        tools = [str(t) for t in enabled] if isinstance(enabled, list) else ["*"]
        tools += [f"!{t}" for t in disabled] if isinstance(disabled, list) else []
        rawtrio["tools"] = tools
    if spec.get("enabled") is False:
        rawtrio["disabled"] = True
    out[_RAWTRIO_KEYS] = rawtrio
    return out


def _convert(maps: list[tuple[str, Mapping[str, Any]]]) -> Imported:
    out = Imported()
    for where, servers in maps:
        for raw_name, spec in servers.items():
            name = _name(str(raw_name), out)
            if name in out.servers:
                out.warnings.append(f"{where}: {raw_name!r} appears twice; the first is kept")
                continue
            table = _server(f"{where}.{raw_name}", spec, out.warnings)
            if table is not None:
                out.servers[name] = table
    _validate(out)
    return out


def _server_maps(data: Any, source: str) -> list[tuple[str, Mapping[str, Any]]]:
    if not isinstance(data, dict):
        raise McpImportError(f"{source}: expected a JSON object with mcpServers")
    maps: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(data.get("mcpServers"), dict):
        maps.append(("mcpServers", data["mcpServers"]))
    for path, project in (data.get("projects") or {}).items():
        if isinstance(project, dict) and isinstance(project.get("mcpServers"), dict):
            maps.append((f"projects[{path}].mcpServers", project["mcpServers"]))
    if (
        not maps
        and data
        and all(isinstance(v, dict) and ("command" in v or "url" in v) for v in data.values())
    ):
        maps.append(("servers", data))
    if not maps:
        raise McpImportError(f"{source}: no mcpServers found (expected {{'mcpServers': {{...}}}})")
    return maps


def _name(raw: str, out: Imported) -> str:
    if SERVER_NAME_RE.match(raw):
        return raw
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", raw)[:64] or "server"
    out.warnings.append(f"server {raw!r} renamed to {name!r} (names become part of tool ids)")
    return name


def _server(where: str, spec: Any, warnings: list[str]) -> dict[str, Any] | None:
    if not isinstance(spec, dict):
        warnings.append(f"{where}: expected an object; skipped")
        return None
    extra = spec.get(_RAWTRIO_KEYS) or {}
    if extra.pop("disabled", False):
        warnings.append(f"{where}: enabled = false; skipped")
        return None
    for key in sorted(set(spec) - _KNOWN - {_RAWTRIO_KEYS}):
        warnings.append(f"{where}.{key}: not supported by rawtrio; dropped")
    kind = spec.get("type") or spec.get("transport") or ("stdio" if "command" in spec else "http")
    table: dict[str, Any] = {}
    if kind == "stdio":
        command, args = spec.get("command"), spec.get("args", [])
        if not isinstance(command, str) or not command:
            warnings.append(f"{where}.command: expected a non-empty string; skipped")
            return None
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            warnings.append(f"{where}.args: expected an array of strings; skipped")
            return None
        table["command"] = [command, *args]
        if isinstance(spec.get("cwd"), str):
            table["cwd"] = spec["cwd"]
        if env := _values(f"{where}.env", spec.get("env"), warnings):
            table["env"] = env
    elif kind in ("http", "streamable-http", "streamable_http", "streamableHttp"):
        url = spec.get("url")
        if not isinstance(url, str) or not url:
            warnings.append(f"{where}.url: expected a non-empty string; skipped")
            return None
        table["url"] = url
        if headers := _values(f"{where}.headers", spec.get("headers"), warnings):
            table["headers"] = headers
    else:
        warnings.append(
            f"{where}: transport {kind!r} is not supported (rawtrio speaks stdio and "
            f"streamable HTTP); skipped"
        )
        return None
    table.update(extra)
    return table


def _values(where: str, values: Any, warnings: list[str]) -> dict[str, Any]:
    if values is None:
        return {}
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        warnings.append(f"{where}: expected an object of strings; dropped")
        return {}
    out: dict[str, Any] = {}
    for key, value in values.items():
        if (m := _WHOLE_VAR.match(value)) and not m.group(2):
            out[key] = {"env": m.group(1)}
            continue
        if "${" in value:
            pass  # expanded when the server starts (rawtrio.mcp.expand)
        elif value:
            warnings.append(
                f"{where}.{key}: a literal value was copied; if it is a secret, move it to a "
                f"variable with secret = true"
            )
        out[key] = value
    return out


def _validate(out: Imported) -> None:
    import tomllib

    from pydantic import ValidationError

    from rawtrio.config.schema import RawtrioConfig

    text = out.toml()
    try:
        RawtrioConfig.model_validate(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ValidationError) as e:  # a bug of ours, not the user's
        raise AssertionError(f"import produced invalid config: {e}\n{text}") from None


def _table(name: str, table: Mapping[str, Any]) -> str:
    lines = [f"[mcp_servers.{_key(name)}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"unexpected value {value!r}")
