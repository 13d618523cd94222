"""`rawtrio mcp list|test|import`: the configured MCP servers, outside a session.

- `list` — every server of the configuration: transport, start mode, which agents select
  it, and its tools. A server whose tools were never listed with its current configuration
  is asked now (started, asked, stopped, the list cached), all at once, each bounded by
  `--timeout` seconds; `--cached` only shows what is cached.
- `test NAME` — start the server as a session would (same environment, variables,
  timeouts), list its tools, refresh the cache, stop it. Exit 1 when it fails to start.
- `import FILE` — convert Claude Desktop / Claude Code `mcpServers` JSON (`.mcp.json`,
  `~/.claude.json`) or Codex's `config.toml` into `[mcp_servers.NAME]` tables: printed by
  default; `--write` appends them to the user config file (or `--config PATH`), refusing
  names the file already defines; `--select AGENT` (with `--write`) also adds them to that
  agent's `mcp_servers`, so one command makes them usable.
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
    from rawtrio.mcp.connection import ConnectionSettings

#: How long `mcp list` waits for one server's tool list.
LIST_TIMEOUT_S = 15.0


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
        else:
            cmd.add_argument(
                "--timeout",
                type=float,
                default=LIST_TIMEOUT_S,
                metavar="S",
                help=f"how long to wait for a server's tools (default {LIST_TIMEOUT_S:g} s)",
            )
            cmd.add_argument(
                "--cached", action="store_true", help="start no server: cached tool lists only"
            )
        cmd.add_argument("--config", metavar="PATH", help="user config file (env RAWTRIO_CONFIG)")
        cmd.add_argument("--agent", help="agent whose selection to show (env RAWTRIO_AGENT)")
        cmd.add_argument("--trust", action="store_true", help="trust this project's config file")
    imp = sub.add_parser("import", help="convert Claude Desktop/Code mcpServers JSON to TOML")
    imp.add_argument(
        "file", help="the JSON file, or a Codex config.toml ('-' reads JSON from stdin)"
    )
    imp.add_argument("--write", action="store_true", help="append the tables to the config file")
    imp.add_argument(
        "--select",
        metavar="AGENT",
        help="with --write: also add the servers to this agent's mcp_servers",
    )
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
            return _list(resolved, args, latch)
        return _test(resolved, args.name, latch)
    except ConfigError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except BrokenPipeError:  # `rawtrio mcp list | head`: the reader left
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.ERROR


def _resolve(args: argparse.Namespace) -> ResolvedAgent:
    """The agent, with the project's trusted `.mcp.json` servers added to the config's
    servers and to the agent's selection (as a session gets them)."""
    from rawtrio.config import CliOverrides, TrustStore, resolve_session_config
    from rawtrio.mcp.project import project_mcp, with_project_servers

    overrides = CliOverrides(config=args.config, agent=args.agent, trust=args.trust)
    resolved = resolve_session_config(overrides, Path.cwd(), os.environ)
    config = resolved.loaded.config
    project = project_mcp(
        Path.cwd(), config.mcp_servers, store=TrustStore.default(os.environ), trust=args.trust
    )
    for notice in (*resolved.notices, *project.notices):
        print(f"note: {notice}", file=sys.stderr)
    return with_project_servers(resolved, project)


def _describe(config: McpServerConfig) -> str:
    if config.command is not None:
        return "stdio: " + " ".join(config.command)
    return f"http: {config.url}"


def _list(resolved: ResolvedAgent, args: argparse.Namespace, latch: SignalLatch) -> int:
    import trio

    from rawtrio.mcp import catalog

    config = resolved.loaded.config
    if not config.mcp_servers:
        print("no MCP servers configured (see `rawtrio mcp import` and docs/mcp.md)")
        return ExitCode.COMPLETED
    cache = catalog.mcp_cache_dir(os.environ)
    unlisted = {
        n: s for n, s in config.mcp_servers.items() if catalog.load_cached(cache, n, s) is None
    }
    failed: dict[str, str] = {}
    if unlisted and not args.cached:
        failed = trio.run(_ask_servers, resolved, unlisted, args.timeout, latch)
        if latch.exit_code:
            return latch.exit_code
    for name, server in config.mcp_servers.items():
        agents = [a for a, agent in config.agents.items() if name in agent.mcp_servers]
        if name in resolved.mcp_servers and name not in agents:
            agents.append("every agent (.mcp.json)")
        mark = "*" if name in resolved.mcp_servers else " "
        print(f"{mark} {name}  ({_describe(server)}; start = {server.start})")
        print(f"    selected by: {', '.join(agents) or 'no agent'}")
        tools = catalog.load_cached(cache, name, server)
        saved = catalog.cached_at(cache, name, server)
        if name in failed:
            print(f"    state: FAILED: {failed[name]}")
            continue
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


async def _ask_servers(
    resolved: ResolvedAgent,
    servers: dict[str, McpServerConfig],
    wait_s: float,
    latch: SignalLatch,
) -> dict[str, str]:
    """Start each server at once, cache its tool list, stop it; the failures, by name."""
    import trio

    from rawtrio.mcp import catalog
    from rawtrio.mcp.connection import McpConnection, McpServerError

    settings = _settings(resolved, "mcp-list")
    cache = catalog.mcp_cache_dir(os.environ)
    failed: dict[str, str] = {}

    async def ask(name: str, server: McpServerConfig) -> None:
        conn = McpConnection(name, server, settings)
        async with trio.open_nursery() as nursery:
            with trio.move_on_after(wait_s) as scope:
                try:
                    await conn.ensure_ready(nursery)
                except McpServerError as exc:
                    failed[name] = exc.reason
                else:
                    catalog.save_cached(cache, name, server, conn.tools or [])
            if scope.cancelled_caught:
                failed[name] = f"did not list its tools within {wait_s:g} s (--timeout)"
            await conn.stop(final=True)

    async with stopped_by_signal(latch), trio.open_nursery() as asking:
        for name, server in servers.items():
            asking.start_soon(ask, name, server)
    return failed


def _settings(resolved: ResolvedAgent, prefix: str) -> ConnectionSettings:
    """What a session would start the servers with (environment, variables, grace)."""
    import uuid

    from rawtrio.config import VariableResolver
    from rawtrio.mcp.connection import ConnectionSettings

    cwd = Path.cwd()
    variables = VariableResolver(resolved.variables, env=os.environ, cwd=cwd)
    return ConnectionSettings(
        session_id=f"{prefix}-{uuid.uuid4().hex}",
        cwd=cwd,
        grace_s=resolved.sigterm_grace_s,
        resolve=variables.environment,
        notify=lambda level, text: None,  # failures are printed by the caller
    )


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
    import trio

    from rawtrio.mcp import catalog
    from rawtrio.mcp.connection import McpConnection, McpServerError

    conn = McpConnection(name, server, _settings(resolved, "mcp-test"))
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
    if args.select is not None and not args.write:
        print("rawtrio: --select needs --write (it changes the config file)", file=sys.stderr)
        return ExitCode.USAGE
    if not args.write:
        print(imported.toml(), end="")
        return ExitCode.COMPLETED
    path, _ = user_config_path(args.config, os.environ)
    return _append(path, imported.toml(), list(imported.servers), source, args.select)


def _append(path: Path, tables: str, names: list[str], source: str, agent: str | None) -> int:
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
        if agent is not None:
            combined = _select(combined, agent, names)
        RawtrioConfig.model_validate(tomllib.loads(combined))
    except _CannotSelect as exc:
        print(f"rawtrio: {path}: {exc}; nothing written", file=sys.stderr)
        return ExitCode.USAGE
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        print(
            f"rawtrio: {path} is not a valid config file, nothing written: {exc}", file=sys.stderr
        )
        return ExitCode.USAGE
    write_private(path, combined)
    print(f"wrote {len(names)} server(s) to {path}: {', '.join(names)}")
    if agent is not None:
        print(f"selected for agent {agent!r}")
    else:
        listed = ", ".join(f'"{n}"' for n in names)
        print(f"select them per agent, e.g. [agents.default] mcp_servers = [{listed}]")
        print("(or import again with --select AGENT)")
    return ExitCode.COMPLETED


class _CannotSelect(ValueError):
    """The file's layout does not let `--select` add the servers; says what to do."""


def _select(text: str, agent: str, names: list[str]) -> str:
    """`text` with `names` added to `[agents.AGENT] mcp_servers`: a new table when the
    agent has none in this file, else a line in its `[agents.AGENT]` table (the existing
    one-line `mcp_servers = [...]` extended). Other layouts are refused."""
    import json
    import re

    agents = tomllib.loads(text).get("agents", {})
    key = agent if re.fullmatch(r"[A-Za-z0-9_-]+", agent) else json.dumps(agent)
    header = f"[agents.{key}]"
    if agent not in agents:
        listed = ", ".join(json.dumps(n) for n in names)
        return text + f"\n{header}\nmcp_servers = [{listed}]\n"
    have = list(agents[agent].get("mcp_servers", []))
    wanted = have + [n for n in names if n not in have]
    line = "mcp_servers = [" + ", ".join(json.dumps(n) for n in wanted) + "]"
    lines = text.split("\n")
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == header)
    except StopIteration:
        raise _CannotSelect(
            f"agent {agent!r} is not written as a {header} table; add "
            f"{', '.join(names)} to its mcp_servers by hand"
        ) from None
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    for i in range(start + 1, end):
        if re.match(r"\s*mcp_servers\s*=", lines[i]):
            if not re.fullmatch(r"\s*mcp_servers\s*=\s*\[[^\]]*\]\s*(#.*)?", lines[i]):
                raise _CannotSelect(
                    f"{header} mcp_servers spans several lines; add {', '.join(names)} by hand"
                )
            lines[i] = line
            return "\n".join(lines)
    lines.insert(start + 1, line)
    return "\n".join(lines)
