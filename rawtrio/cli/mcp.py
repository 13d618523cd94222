"""`rawtrio mcp list|test|import`: the configured MCP servers, outside a session.

- `list` — every server of the configuration: transport, start mode, which agents select
  it, and its tools as last seen (the cached tool list; "never started" otherwise).
- `test NAME` — start the server as a session would (same environment, variables,
  timeouts), list its tools, refresh the cache, stop it. Exit 1 when it fails to start.
- `import FILE` — convert Claude Desktop / Claude Code `mcpServers` JSON into
  `[mcp_servers.NAME]` tables: printed by default; `--write` appends them to the user
  config file (or `--config PATH`), refusing names the file already defines.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from rawtrio.cli.signals import SignalLatch, stopped_by_signal
from rawtrio.contracts import ExitCode
from rawtrio.private_files import write_private

if TYPE_CHECKING:
    from rawtrio.config import ResolvedAgent
    from rawtrio.config.schema import McpServerConfig


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rawtrio mcp", description="MCP servers (docs/mcp.md).")
    sub = p.add_subparsers(dest="action", required=True)
    for name, help_text in (
        ("list", "show the configured servers, their state and tools"),
        ("test", "start a server, list its tools, stop it"),
    ):
        cmd = sub.add_parser(name, help=help_text)
        if name == "test":
            cmd.add_argument("name", help="a server name from [mcp_servers]")
        cmd.add_argument("--config", metavar="PATH", help="user config file (env RAWTRIO_CONFIG)")
        cmd.add_argument("--agent", help="agent whose selection to show (env RAWTRIO_AGENT)")
        cmd.add_argument("--trust", action="store_true", help="trust this project's config file")
    imp = sub.add_parser("import", help="convert Claude Desktop/Code mcpServers JSON to TOML")
    imp.add_argument("file", help="the JSON file ('-' reads stdin)")
    imp.add_argument("--write", action="store_true", help="append the tables to the config file")
    imp.add_argument("--config", metavar="PATH", help="config file to write (default: user file)")
    return p


def main(argv: list[str], latch: SignalLatch | None = None) -> int:
    args = build_parser().parse_args(argv)
    latch = latch or SignalLatch()
    from rawtrio.errors import ConfigError

    try:
        if args.action == "import":
            return _import(args)
        resolved = _resolve(args)
        if args.action == "list":
            return _list(resolved)
        return _test(resolved, args.name, latch)
    except ConfigError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except BrokenPipeError:  # `rawtrio mcp list | head`: the reader left
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.ERROR


def _resolve(args: argparse.Namespace) -> ResolvedAgent:
    from rawtrio.config import CliOverrides, resolve_session_config

    overrides = CliOverrides(config=args.config, agent=args.agent, trust=args.trust)
    resolved = resolve_session_config(overrides, Path.cwd(), os.environ)
    for notice in resolved.notices:
        print(f"note: {notice}", file=sys.stderr)
    return resolved


def _describe(config: McpServerConfig) -> str:
    if config.command is not None:
        return "stdio: " + " ".join(config.command)
    return f"http: {config.url}"


def _list(resolved: ResolvedAgent) -> int:
    from rawtrio.mcp import catalog

    config = resolved.loaded.config
    if not config.mcp_servers:
        print("no MCP servers configured (see `rawtrio mcp import` and docs/mcp.md)")
        return ExitCode.COMPLETED
    cache = catalog.mcp_cache_dir(os.environ)
    for name, server in config.mcp_servers.items():
        agents = [a for a, agent in config.agents.items() if name in agent.mcp_servers]
        mark = "*" if name in resolved.mcp_servers else " "
        print(f"{mark} {name}  ({_describe(server)}; start = {server.start})")
        print(f"    selected by: {', '.join(agents) or 'no agent'}")
        tools = catalog.load_cached(cache, name, server)
        saved = catalog.cached_at(cache, name, server)
        if tools is None or saved is None:
            print("    state: never started with this configuration (`rawtrio mcp test NAME`)")
            continue
        chosen = catalog.selected(name, server, tools, resolved.tools)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved))
        print(f"    state: tools listed {when}; {len(chosen)} of {len(tools)} selected")
        for tool in chosen:
            ro = " (read-only)" if catalog.read_only(tool, server) else ""
            print(f"      {catalog.tool_id(name, tool.name)}{ro}")
    print(f"(* = selected by agent {resolved.name!r})")
    return ExitCode.COMPLETED


def _test(resolved: ResolvedAgent, name: str, latch: SignalLatch) -> int:
    import trio

    servers = resolved.loaded.config.mcp_servers
    if name not in servers:
        known = ", ".join(servers) or "none configured"
        print(f"rawtrio: no MCP server {name!r} (known: {known})", file=sys.stderr)
        return ExitCode.USAGE
    return trio.run(_run_test, resolved, name, servers[name], latch)


async def _run_test(
    resolved: ResolvedAgent, name: str, server: McpServerConfig, latch: SignalLatch
) -> int:
    import uuid

    import trio

    from rawtrio.config import VariableResolver
    from rawtrio.mcp import catalog
    from rawtrio.mcp.connection import ConnectionSettings, McpConnection, McpServerError

    cwd = Path.cwd()
    variables = VariableResolver(resolved.variables, env=os.environ, cwd=cwd)
    settings = ConnectionSettings(
        session_id=f"mcp-test-{uuid.uuid4().hex}",
        cwd=cwd,
        grace_s=resolved.sigterm_grace_s,
        resolve=variables.environment,
        notify=lambda level, text: None,  # the failure is printed below
    )
    conn = McpConnection(name, server, settings)
    code: int = ExitCode.COMPLETED
    started = trio.current_time()
    async with stopped_by_signal(latch) as nursery:
        try:
            await conn.ensure_ready(nursery)
        except McpServerError as exc:
            print(f"rawtrio: {exc}", file=sys.stderr)
            code = ExitCode.ERROR
        else:
            cache = catalog.mcp_cache_dir(os.environ)
            catalog.save_cached(cache, name, server, conn.tools or [])
            try:
                _print_ready(name, server, conn, trio.current_time() - started, resolved.tools)
            except BrokenPipeError:  # `rawtrio mcp test NAME | head`
                code = ExitCode.ERROR
        await conn.stop(final=True)
    return latch.exit_code or code


def _print_ready(
    name: str, server: McpServerConfig, conn: object, elapsed: float, patterns: tuple[str, ...]
) -> None:
    from rawtrio.mcp import catalog
    from rawtrio.mcp.connection import McpConnection

    assert isinstance(conn, McpConnection)
    info = conn.server_info
    label = " ".join(p for p in (info.name, info.version) if p) if info is not None else ""
    what = f" ({label})" if label else ""
    print(f"MCP server {name!r}{what} started in {elapsed:.1f} s")
    tools = conn.tools or []
    chosen = {t.name for t in catalog.selected(name, server, tools, patterns)}
    print(f"tools ({len(tools)}, {len(chosen)} selected):")
    for tool in tools:
        flags = []
        if catalog.read_only(tool, server):
            flags.append("read-only")
        if tool.annotations is not None and tool.annotations.destructive_hint:
            flags.append("destructive")
        if tool.name not in chosen:
            flags.append("not selected")
        summary = (tool.description or "").strip().splitlines()[:1]
        extra = f" [{', '.join(flags)}]" if flags else ""
        print(f"  {catalog.tool_id(name, tool.name)}{extra}  {summary[0] if summary else ''}")


def _import(args: argparse.Namespace) -> int:
    from rawtrio.config import user_config_path
    from rawtrio.mcp.importer import McpImportError, import_servers

    source = "stdin" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
        imported = import_servers(text, source)
    except (OSError, UnicodeDecodeError, McpImportError) as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    for warning in imported.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not imported.servers:
        print("rawtrio: no server could be imported", file=sys.stderr)
        return ExitCode.USAGE
    if not args.write:
        print(imported.toml(), end="")
        return ExitCode.COMPLETED
    path, _ = user_config_path(args.config, os.environ)
    return _append(path, imported.toml(), list(imported.servers), source)


def _append(path: Path, tables: str, names: list[str], source: str) -> int:
    from pydantic import ValidationError

    from rawtrio.config.schema import RawtrioConfig

    existing = path.read_text("utf-8") if path.exists() else ""
    try:
        current = tomllib.loads(existing)
        taken = [n for n in names if n in current.get("mcp_servers", {})]
        if taken:
            print(
                f"rawtrio: {path} already defines mcp_servers {', '.join(taken)}; "
                f"nothing written (remove them or import into another file with --config)",
                file=sys.stderr,
            )
            return ExitCode.USAGE
        header = f"\n# imported from {source} by `rawtrio mcp import`\n"
        combined = existing + ("\n" if existing and not existing.endswith("\n") else "")
        combined += header + tables
        RawtrioConfig.model_validate(tomllib.loads(combined))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        print(
            f"rawtrio: {path} is not a valid config file, nothing written: {exc}", file=sys.stderr
        )
        return ExitCode.USAGE
    write_private(path, combined)
    print(f"wrote {len(names)} server(s) to {path}: {', '.join(names)}")
    print(f"select them per agent, e.g. [agents.default] mcp_servers = {names!r}".replace("'", '"'))
    return ExitCode.COMPLETED
