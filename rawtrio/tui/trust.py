"""The trust question the interactive chats ask before a project's files take effect.

A project's `.rawtrio/config.toml` (when it defines something that needs trust,
`rawtrio.config.loader.needs_trust`), `.claude/settings.json` / `.claude/settings.local.json`
(hooks, allow rules) and `.mcp.json` (MCP servers) are used only once trusted
(`rawtrio.config.trust`). `untrusted_files` lists those not trusted yet, each with what it
would add (hooks with their commands, allow rules, MCP servers with their commands, the
config keys); `trust_files` records the answer "trust and remember" in the trust store for
exactly the bytes shown (per file, or the folder for `.rawtrio/config.toml`, and SHA-256,
as `--trust` does), so a changed file is asked about again. The full-screen chat shows them
in `rawtrio.tui.trust_prompt`, the line chat asks a y/n/q question (`rawtrio.cli.repl`).

This module does not import urwid (the line chat uses it too), and loads the configuration's
modules only when one of the files exists: the chat attached to a host has not loaded them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal

from rawtrio.errors import RawtrioError

#: The answers: trust and remember, continue without them (this session), quit.
Answer = Literal["trust", "skip", "quit"]
#: Lines shown per file at most (a long hooks list is cut).
MAX_LINES: Final = 12


@dataclass(frozen=True, slots=True)
class UntrustedFile:
    """A project file that waits for trust, and what it would add."""

    path: Path
    #: What the trust store keys the approval by (the folder for `.rawtrio/config.toml`).
    key: Path
    #: SHA-256 of the bytes the description was made from (what trusting approves).
    digest: str
    #: "hooks, allow rules", "MCP servers", … (short).
    summary: str
    #: One line per thing it adds ("hook PreToolUse Bash: ./guard.sh", "MCP server x: cmd").
    details: tuple[str, ...]
    #: The path as shown: relative to the working directory when inside it.
    shown: str = ""


def untrusted_files(
    cwd: Path, env: Mapping[str, str], config: str | None = None
) -> list[UntrustedFile]:
    """The project files under `cwd`'s project that need trust and have none yet. A file
    that cannot be read or parsed is left out here: the session's start reports it."""
    if not _any_candidate(cwd):
        return []  # the usual case: nothing to read, and nothing of the config loaded for it
    from rawtrio.config.claude_settings import load_claude_settings
    from rawtrio.config.loader import find_project_config, load_config
    from rawtrio.config.trust import TrustStore
    from rawtrio.config.user_path import user_config_path
    from rawtrio.mcp.project import project_mcp

    store = TrustStore.default(env)
    found: list[UntrustedFile] = []
    configured: Mapping[str, Any] = {}
    try:
        user_file, explicit = user_config_path(config, env)
        loaded = load_config(
            user_file, find_project_config(cwd), user_file_required=explicit, trust_store=store
        )
        configured = loaded.config.mcp_servers
        pending = loaded.untrusted_project
        if pending is not None:
            summary = ", ".join(pending.reasons)
            found.append(_rawtrio_file(pending.file, pending.folder, pending.digest, summary))
    except RawtrioError:
        pass
    try:
        claude = load_claude_settings(cwd, env, trust_store=store)
        for file in claude.untrusted:
            if (entry := _claude_file(file.path)) is not None:
                found.append(entry)
    except RawtrioError:
        pass
    try:
        mcp = project_mcp(cwd, configured, store=store)
        pending_mcp = mcp.file is not None and not mcp.trusted and bool(mcp.defined)
        if pending_mcp and mcp.file is not None and (entry := _mcp_file(mcp.file)) is not None:
            found.append(entry)
    except RawtrioError:
        pass
    return [replace(f, shown=_shown(f.path, cwd)) for f in found]


def _shown(path: Path, cwd: Path) -> str:
    """`.claude/settings.json` for a file under the working directory (absolute paths wrap
    in the dialog and hide the part that matters), the absolute path otherwise."""
    if not path.is_relative_to(cwd):
        return str(path)
    return Path(os.path.relpath(path, cwd)).as_posix()


#: Where the files that may need trust are, relative to a folder from the working
#: directory up to the repository root.
CANDIDATES: Final = (
    ".rawtrio/config.toml",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".mcp.json",
)


def _any_candidate(cwd: Path) -> bool:
    """Whether any of `CANDIDATES` exists from `cwd` up to the folder that holds `.git`
    (all parents outside a repository: more than the loaders look at, never less)."""
    folder = cwd.resolve()
    while True:
        if any(os.path.lexists(folder / c) for c in CANDIDATES):
            return True
        if os.path.lexists(folder / ".git") or folder.parent == folder:
            return False
        folder = folder.parent


def trust_files(files: list[UntrustedFile], env: Mapping[str, str]) -> None:
    """Record "trust and remember" for exactly these files' contents."""
    from rawtrio.config.trust import TrustStore

    store = TrustStore.default(env)
    for file in files:
        store.trust(file.key, file.digest)


def _read(path: Path) -> tuple[Any, str] | None:
    from rawtrio.config.safe_read import MAX_CONFIG_BYTES, UnsafeFileError, read_bounded

    try:
        raw = read_bounded(path, limit=MAX_CONFIG_BYTES)
        return json.loads(raw.decode("utf-8")), hashlib.sha256(raw).hexdigest()
    except (OSError, UnsafeFileError, UnicodeDecodeError, ValueError):
        return None


def _rawtrio_file(path: Path, folder: Path, digest: str, summary: str) -> UntrustedFile:
    """A `.rawtrio/config.toml`: its hooks and MCP servers with their commands, and the
    other things that need trust (`summary`); trusted by folder, as `--trust` does."""
    import tomllib  # only when the project has such a file

    from rawtrio.config.safe_read import MAX_CONFIG_BYTES, UnsafeFileError, read_bounded

    details: list[str] = []
    try:
        raw = read_bounded(path, limit=MAX_CONFIG_BYTES)
        data = tomllib.loads(raw.decode("utf-8"))
        digest = hashlib.sha256(raw).hexdigest()  # what is shown is what is trusted
    except (OSError, UnsafeFileError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    agents = data.get("agents")
    hooks = [*_list(data.get("hooks"))]
    for agent in agents.values() if isinstance(agents, dict) else ():
        hooks += _list(agent.get("hooks")) if isinstance(agent, dict) else []
    for hook in hooks:
        if isinstance(hook, dict):
            command = hook.get("command")
            runs = " ".join(map(str, command)) if isinstance(command, list) else str(command)
            details.append(f"hook {hook.get('event', '?')} {hook.get('match', '*')}: {runs}")
    servers = data.get("mcp_servers")
    for name, server in servers.items() if isinstance(servers, dict) else ():
        if isinstance(server, dict):
            command = server.get("command")
            argv = " ".join(map(str, command)) if isinstance(command, list) else None
            details.append(f"MCP server {name}: {argv or server.get('url', '?')}")
    others = [r for r in summary.split(", ") if r not in ("hooks", "mcp_servers")]
    details += others
    return UntrustedFile(path, folder, digest, summary, _cut(details))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _claude_file(path: Path) -> UntrustedFile | None:
    read = _read(path)
    if read is None or not isinstance(read[0], dict):
        return None
    data, digest = read
    details: list[str] = []
    hooks = data.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            if not isinstance(group, dict):
                continue
            matcher = group.get("matcher") or "*"
            for hook in group.get("hooks") or ():
                if isinstance(hook, dict) and isinstance(hook.get("command"), str):
                    details.append(f"hook {event} {matcher}: {hook['command']}")
    perms = data.get("permissions")
    allow = perms.get("allow") if isinstance(perms, dict) else None
    for rule in allow if isinstance(allow, list) else ():
        details.append(f"allow rule: {rule}")
    what = [w for w, on in (("hooks", hooks), ("allow rules", allow)) if on]
    return UntrustedFile(path, path, digest, ", ".join(what), _cut(details))


def _mcp_file(path: Path) -> UntrustedFile | None:
    read = _read(path)
    if read is None or not isinstance(read[0], dict):
        return None
    data, digest = read
    servers = data.get("mcpServers")
    details: list[str] = []
    for name, server in servers.items() if isinstance(servers, dict) else ():
        if not isinstance(server, dict):
            continue
        if isinstance(server.get("command"), str):
            args = server.get("args")
            words = [server["command"], *(args if isinstance(args, list) else [])]
            runs = " ".join(str(a) for a in words)
        else:
            runs = str(server.get("url", "?"))
        details.append(f"MCP server {name}: {runs}")
    return UntrustedFile(path, path, digest, "MCP servers", _cut(details))


def _cut(lines: list[str]) -> tuple[str, ...]:
    if len(lines) <= MAX_LINES:
        return tuple(lines)
    return (*lines[: MAX_LINES - 1], f"… and {len(lines) - MAX_LINES + 1} more")


def describe(files: list[UntrustedFile]) -> list[str]:
    """The listing, one line per file and one per thing it adds (indented)."""
    lines: list[str] = []
    for file in files:
        lines.append(f"{file.shown or file.path} ({file.summary})")
        lines.extend(f"    {d}" for d in file.details)
    return lines
