"""A project's `.mcp.json` (Claude Code's project-scoped MCP servers), used once trusted.

The file sits at the project root (the repository root, else the working directory) and
holds `{"mcpServers": {...}}` in Claude Code's shape; it is converted the way `rawtrio mcp
import` converts it (`rawtrio.mcp.importer`), `${VAR}` expanding when a server starts.

A cloned repository's `.mcp.json` starts programs, so it obeys the trust rule of
`.rawtrio/config.toml` (`rawtrio.config.trust`): its servers are used only once the user
trusted the file — `--trust` (or ACP's `trust` flag) approves it once and the approval is
recorded in the trust store for this file's path and SHA-256, so a changed file must be
approved again. Until then a notice names the servers and how to approve them.

Once trusted, its servers are selected for every agent (as Claude Code enables approved
project servers) and the agent's `tools` globs still choose among their tools. rawtrio's
own configuration wins: a server name that `[mcp_servers]` defines too is rawtrio's, and
the `.mcp.json` one is reported as shadowed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from rawtrio.config.errors import ConfigFileError, problem
from rawtrio.config.loader import project_root
from rawtrio.config.resolve import ResolvedAgent
from rawtrio.config.safe_read import MAX_CONFIG_BYTES, UnsafeFileError, read_bounded
from rawtrio.config.trust import TrustStore

if TYPE_CHECKING:
    from rawtrio.config.schema import McpServerConfig

MCP_JSON: Final = ".mcp.json"


@dataclass(frozen=True)
class ProjectMcp:
    #: The project's `.mcp.json` (None: there is none).
    file: Path | None = None
    #: Its servers in effect (trusted, not shadowed by rawtrio's config), by name.
    servers: Mapping[str, McpServerConfig] = field(default_factory=dict)
    #: Every server it defines, in effect or not.
    defined: tuple[str, ...] = ()
    trusted: bool = False
    notices: tuple[str, ...] = ()

    def describe(self) -> str:
        """The line `config check` prints."""
        if self.file is None:
            return f"project {MCP_JSON}: none"
        state = "trusted" if self.trusted else "NOT trusted (pass --trust to use it)"
        used = ", ".join(self.servers) or "none"
        return f"project {self.file}: {state}; servers used: {used}"


def project_mcp(
    cwd: Path,
    configured: Mapping[str, McpServerConfig],
    *,
    store: TrustStore,
    trust: bool = False,
    strict: bool = True,
) -> ProjectMcp:
    """Read the project's `.mcp.json` (module docstring); `trust` (`--trust`) approves it
    and records the approval. A file that is unsafe to read or not Claude Code's JSON
    shape is a ConfigFileError (exit 2) when `strict` (`config check`, `mcp list`);
    otherwise (a session starting) its servers are not used and a notice says why, so a
    cloned project's broken file never stops rawtrio from starting there."""
    root = project_root(cwd)
    file = root / MCP_JSON
    if not os.path.lexists(file):
        return ProjectMcp()
    # Claude Code's format is read only for a project that has the file (most have none).
    from rawtrio.mcp.importer import McpImportError, import_servers

    try:
        raw = read_bounded(file, limit=MAX_CONFIG_BYTES, within=root, what=MCP_JSON)
        imported = import_servers(raw.decode("utf-8"), str(file))
    except (UnsafeFileError, UnicodeDecodeError, McpImportError) as exc:
        if isinstance(exc, UnsafeFileError):
            reason = f"cannot read the file: it {exc.reason}"
        else:
            reason = f"expected Claude Code's .mcp.json shape: {exc}"
        if strict:
            raise ConfigFileError([problem(file, "", reason)]) from None
        return ProjectMcp(file, notices=(f"{file}: its MCP servers are not used: {reason}",))
    notices = [f"{file}: {w}" for w in imported.warnings]
    defined = tuple(imported.servers)
    digest = hashlib.sha256(raw).hexdigest()
    trusted = store.is_trusted(file, digest)
    if not trusted and trust and defined:
        store.trust(file, digest)
        trusted = True
    if not trusted:
        if defined:
            notices.append(
                f"{file} defines MCP servers {', '.join(defined)}, which run programs; they "
                "are not used until you trust this file (answer the trust prompt, or pass "
                "--trust: rawtrio remembers it until the file changes)"
            )
        return ProjectMcp(file, {}, defined, False, tuple(notices))
    servers: dict[str, McpServerConfig] = {}
    for name, table in imported.servers.items():
        if name in configured:
            notices.append(
                f"{file}: server {name!r} is shadowed by [mcp_servers.{name}] of rawtrio's "
                "config; rawtrio's is used"
            )
            continue
        from rawtrio.config.schema import McpServerConfig  # pydantic: only for a server found

        servers[name] = McpServerConfig.model_validate(table)
    return ProjectMcp(file, servers, defined, True, tuple(notices))


def with_project_servers(resolved: ResolvedAgent, project: ProjectMcp) -> ResolvedAgent:
    """`resolved` with the project's trusted servers added to the configuration's servers
    and to the agent's selection, as a session uses them (hook matchers, `mcp list` and
    `mcp test` see them too)."""
    if not project.servers:
        return resolved
    loaded = resolved.loaded.with_mcp_servers(project.servers)
    servers = {**resolved.mcp_servers, **project.servers}
    return dataclasses.replace(resolved, loaded=loaded, mcp_servers=servers)
