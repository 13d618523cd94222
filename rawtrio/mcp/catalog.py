"""Which tools of an MCP server a session offers, and the cached tool lists.

The model must see every tool's schema in its first request, but starting every server
when a session starts costs seconds. So each server's tool list is cached
(`<cache dir>/<server>-<config hash>.json`, written whenever the server starts): a `lazy`
server with a cached list is registered from the cache and started on its first call; a
server without one (or with `start = "session"`) is started when the session starts. The
list is fixed for the session's life (changing it would break the provider's prompt
cache); a tool the server no longer offers gets an error result, new tools appear in the
next session.

Tool ids are `mcp/<server>/<tool>`; `tools` globs of the server's config select among its
tool names, then the agent's `tools` globs among the ids.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rawtrio.config.resolve import select_tools
from rawtrio.private_files import write_private

if TYPE_CHECKING:
    import mcp_types as types

    from rawtrio.config.schema import McpServerConfig

CACHE_VERSION: Final = 1
#: Server names become part of tool ids (`mcp/<server>/<tool>`): no `/` or spaces.
SERVER_NAME_RE: Final = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def mcp_cache_dir(env: Mapping[str, str]) -> Path:
    """Where tool lists are cached: `RAWTRIO_CACHE_DIR`, else `RAWTRIO_STATE_DIR/cache`
    (tests, portable installs), else the user cache directory."""
    if base := env.get("RAWTRIO_CACHE_DIR"):
        return Path(base) / "mcp-tools"
    if state := env.get("RAWTRIO_STATE_DIR"):
        return Path(state) / "cache" / "mcp-tools"
    from rawtrio.user_dirs import user_dir  # platformdirs' folder, mostly without it

    return user_dir("cache") / "mcp-tools"


def tool_id(server: str, tool: str) -> str:
    return f"mcp/{server}/{tool}"


def config_hash(config: McpServerConfig) -> str:
    """Changes when anything that could change the tool list changes."""
    text = config.model_dump_json(exclude={"start", "tools", "trust_annotations"})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def cache_path(cache_dir: Path, server: str, config: McpServerConfig) -> Path:
    """The cache file of one server, always directly inside `cache_dir`: a name that could
    not be a file name there (`..`, `/`, a name the runtime would skip anyway) is hashed."""
    if not SERVER_NAME_RE.match(server) or server.strip(".") == "":
        server = "name-" + hashlib.sha256(server.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return cache_dir / f"{server}-{config_hash(config)}.json"


def load_cached(
    cache_dir: Path | None, server: str, config: McpServerConfig
) -> list[types.Tool] | None:
    """The cached tool list, or None (no cache, unreadable or from another version)."""
    import mcp_types as types

    if cache_dir is None:
        return None
    try:
        data = json.loads(cache_path(cache_dir, server, config).read_text(encoding="utf-8"))
        if data.get("version") != CACHE_VERSION:
            return None
        return [types.Tool.model_validate(t) for t in data["tools"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def cached_at(cache_dir: Path | None, server: str, config: McpServerConfig) -> float | None:
    if cache_dir is None:
        return None
    try:
        data = json.loads(cache_path(cache_dir, server, config).read_text(encoding="utf-8"))
        return float(data["saved_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_cached(
    cache_dir: Path | None, server: str, config: McpServerConfig, tools: Sequence[types.Tool]
) -> None:
    """Write the list atomically; a cache that cannot be written only costs speed."""
    if cache_dir is None:
        return
    path = cache_path(cache_dir, server, config)
    data = {
        "version": CACHE_VERSION,
        "server": server,
        "saved_at": time.time(),
        "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
    }
    with contextlib.suppress(OSError):
        write_private(path, json.dumps(data))


def selected(
    server: str,
    config: McpServerConfig,
    tools: Iterable[types.Tool],
    agent_patterns: Sequence[str] = ("*",),
) -> list[types.Tool]:
    """The server's tools the config (`tools` of the server, then the agent's) selects."""
    listed = list(tools)
    by_name = {t.name: t for t in listed}
    names = select_tools(config.tools, by_name)
    ids = set(select_tools(agent_patterns, (tool_id(server, n) for n in names)))
    return [by_name[n] for n in names if tool_id(server, n) in ids]


def read_only(tool: types.Tool, config: McpServerConfig) -> bool:
    """`readOnlyHint` (when the config trusts annotations) makes a tool read-only; a tool
    that also claims `destructiveHint` is not."""
    a = tool.annotations
    if not config.trust_annotations or a is None:
        return False
    return a.read_only_hint is True and a.destructive_hint is not True


def input_schema(tool: types.Tool) -> dict[str, Any]:
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    return schema
