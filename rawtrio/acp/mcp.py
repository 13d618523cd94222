"""The client's `mcpServers` (in `session/new`, `load`, `resume`) as rawtrio MCP servers.

ACP's stdio servers (`{name, command, args, env: [{name, value}]}`) and streamable-HTTP
servers (`{type: "http", name, url, headers: [{name, value}]}`) become `McpServerConfig`s
started with the session, next to the agent's configured servers; a client server with the
name of a configured one replaces it for this session. The older SSE transport is not
advertised (`mcpCapabilities.sse` false) and is refused by name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import ValidationError

from rawtrio.acp.params import invalid
from rawtrio.config.schema import McpServerConfig, ValueRef
from rawtrio.runtime import SessionOptions


def _pairs(server: dict[str, Any], key: str, where: str) -> dict[str, ValueRef]:
    """ACP's `[{name, value}]` lists (env, headers) as config values."""
    items = server.get(key, [])
    if not isinstance(items, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("value"), str)
        for e in items
    ):
        raise invalid(f"{where}.{key} must be an array of {{name, value}} strings")
    return {e["name"]: ValueRef(value=e["value"]) for e in items}


def parse_servers(servers: list[Any]) -> dict[str, McpServerConfig]:
    out: dict[str, McpServerConfig] = {}
    for i, server in enumerate(servers):
        where = f"mcpServers[{i}]"
        if not isinstance(server, dict):
            raise invalid(f"{where} must be an object")
        kind = server.get("type", "stdio")
        name = server.get("name")
        if not isinstance(name, str) or not name:
            raise invalid(f"{where}.name must be a non-empty string")
        if kind not in ("stdio", "http"):
            raise invalid(
                f"{where} ({name}): {kind!r} MCP servers are not supported (stdio or http)"
            )
        try:
            if kind == "http":
                url = server.get("url")
                if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                    raise invalid(f"{where}.url must be an http:// or https:// URL")
                headers = _pairs(server, "headers", where)
                out[name] = McpServerConfig(url=url, headers=headers, start="session")
                continue
            command = server.get("command")
            args = server.get("args", [])
            if not isinstance(command, str) or not command:
                raise invalid(f"{where}.command must be a non-empty string")
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise invalid(f"{where}.args must be an array of strings")
            env = _pairs(server, "env", where)
            out[name] = McpServerConfig(command=[command, *args], env=env, start="session")
        except ValidationError as exc:
            raise invalid(f"{where}: {exc.errors()[0]['msg']}") from None
    return out


def mcp_servers_from_acp(options: SessionOptions, servers: list[Any]) -> SessionOptions:
    extra = parse_servers(servers)
    if not extra:
        return options
    return dataclasses.replace(options, mcp_servers={**options.mcp_servers, **extra})
