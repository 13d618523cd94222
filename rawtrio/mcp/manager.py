"""A session's MCP servers: their connections, their tools, and the calls.

`open_mcp_servers(...)` is entered inside the session's nursery (`Session.run`) and owns a
nursery of its own where every server's connection task runs. `prepare()` decides, per
server, where its tool list comes from (catalog.py: the cache for a `lazy` server, the
running server otherwise) and returns the selected tools as rawtrio `Tool`s, registered
by the session like any other tool — same validation, same permission rules, same hooks.

Leaving the block stops every server at once (close stdin, grace, SIGTERM, grace, SIGKILL
of each process group), shielded and bounded, before the nursery is cancelled: no server
process outlives its session.

A call (`McpTools._handler`) starts its server if needed, calls the tool with the
server's `call_timeout_s`, and turns what happened into one result:

- finished → `ok` / `error` (the server's `isError`), text cut to the output cap;
- past its timeout → `timed_out` (the SDK sends `notifications/cancelled`; the server is
  pinged in the background and stopped if it does not answer);
- the server exited or could not be started → `error`, saying so; it restarts on next use;
- the turn was cancelled → the SDK sends `notifications/cancelled` and rawtrio does not
  wait for the server's answer; the handler reports how long the call ran and re-raises,
  so the loop records `cancelled` at once (I4, I5). The connection stays usable.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S, ToolStatus
from rawtrio.frozen import freeze
from rawtrio.mcp import catalog
from rawtrio.mcp.connection import (
    ConnectionSettings,
    McpConnection,
    McpServerError,
    ServerState,
)
from rawtrio.mcp.results import to_output
from rawtrio.tools.base import Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    import mcp_types as types

    from rawtrio.config.schema import McpServerConfig

log = logging.getLogger(__name__)


class McpServers:
    def __init__(
        self,
        nursery: trio.Nursery,
        configs: Mapping[str, McpServerConfig],
        settings: ConnectionSettings,
        *,
        agent_patterns: Sequence[str] = ("*",),
        cache_dir: Path | None = None,
        output_cap: int = 30_000,
        redact: Callable[[str], str] = lambda s: s,
    ) -> None:
        self._nursery = nursery
        self.settings = settings
        self.agent_patterns = tuple(agent_patterns)
        self.cache_dir = cache_dir
        self.output_cap = output_cap
        self.redact = redact
        self.connections: dict[str, McpConnection] = {}
        for name, config in configs.items():
            if not catalog.SERVER_NAME_RE.match(name):
                settings.notify(
                    "warning",
                    f"MCP server {name!r} skipped: a server name may only contain letters, "
                    f"digits, '_', '.' and '-' (it becomes part of tool ids mcp/<server>/<tool>)",
                )
                continue
            self.connections[name] = McpConnection(name, config, settings)

    async def prepare(self) -> list[Tool]:
        """The selected tools of every server, in config order; starts the servers that
        must start now (in parallel). A server that fails is reported and left out,
        unless its cached list lets it be offered (and retried on first call)."""
        lists: dict[str, list[types.Tool]] = {}

        async def one(conn: McpConnection) -> None:
            cached = catalog.load_cached(self.cache_dir, conn.name, conn.config)
            if conn.config.start == "lazy" and cached is not None:
                lists[conn.name] = cached
                return
            try:
                await conn.ensure_ready(self._nursery)
            except McpServerError:
                if cached is not None:
                    lists[conn.name] = cached
                return  # reported by the connection
            self._remember(conn)
            lists[conn.name] = list(conn.tools or [])

        async with trio.open_nursery() as nursery:
            for conn in self.connections.values():
                nursery.start_soon(one, conn)
        tools: list[Tool] = []
        for name, conn in self.connections.items():
            chosen = catalog.selected(name, conn.config, lists.get(name, []), self.agent_patterns)
            tools.extend(self._tool(conn, t) for t in chosen)
        return tools

    def _remember(self, conn: McpConnection) -> None:
        if conn.tools is not None:
            catalog.save_cached(self.cache_dir, conn.name, conn.config, conn.tools)

    def _tool(self, conn: McpConnection, remote: types.Tool) -> Tool:
        async def handler(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
            return await self.call(conn, remote.name, args, ctx)

        description = (
            remote.description or remote.title or f"{remote.name} (MCP server {conn.name})"
        )
        return Tool(
            id=catalog.tool_id(conn.name, remote.name),
            description=description,
            input_schema=freeze(catalog.input_schema(remote)),
            handler=handler,
            read_only=catalog.read_only(remote, conn.config),
        )

    async def call(
        self, conn: McpConnection, tool: str, args: Mapping[str, Any], ctx: ToolContext
    ) -> ToolOutput:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        started_at = trio.current_time()
        calling = False
        try:
            first_start = conn.starts
            session = await conn.ensure_ready(self._nursery)
            if conn.starts != first_start:
                self._remember(conn)
            if conn.tools is not None and tool not in {t.name for t in conn.tools}:
                return ToolOutput.error(
                    f"MCP server {conn.name!r} no longer offers the tool {tool!r}; "
                    f"it offers: {', '.join(t.name for t in conn.tools) or 'none'}",
                    server=conn.name,
                )
            calling = True
            timeout = conn.config.call_timeout_s
            with trio.move_on_after(timeout) as deadline:
                result = await session.call_tool(tool, dict(args))
            if deadline.cancelled_caught:
                self._nursery.start_soon(conn.check_alive, session)
                return ToolOutput(
                    ToolStatus.TIMED_OUT,
                    f"the MCP tool {tool} did not answer within {timeout:g} s "
                    f"(call_timeout_s of server {conn.name!r}); rawtrio sent "
                    f"notifications/cancelled for it",
                    freeze({"server": conn.name, "tool": tool, "timeout_s": timeout}),
                )
        except trio.Cancelled:
            elapsed = round(trio.current_time() - started_at, 3)
            if calling:
                ctx.report_cancelled(
                    f"started, then cancelled after {elapsed} s: rawtrio sent "
                    f"notifications/cancelled to MCP server {conn.name!r} and did not wait "
                    f"for its answer; the tool may have had partial effects",
                    server=conn.name,
                    tool=tool,
                    notified=True,
                )
            else:
                ctx.report_cancelled(
                    f"not started: cancelled after {elapsed} s while MCP server {conn.name!r} "
                    f"was starting (it goes on starting for the next call); the tool was "
                    f"not called",
                    server=conn.name,
                    started=False,
                )
            raise
        except McpServerError as exc:
            return ToolOutput.error(str(exc), server=conn.name)
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED and conn.transport == "http":
                conn.broken("closed the connection")  # a stdio exit is seen by its task
            await conn.wait_stopped()
            if conn.error is not None and conn.state is ServerState.FAILED:
                reason = f"MCP server {conn.name!r} {conn.error} during the call to {tool}"
                return ToolOutput.error(
                    f"{reason}; the call's outcome is unknown{conn.restart_note()}",
                    server=conn.name,
                )
            return ToolOutput.error(
                f"MCP server {conn.name!r} answered the call to {tool} with an error: {exc}",
                server=conn.name,
            )
        except Exception as exc:  # bad result shapes, transport errors
            log.info("MCP call %s/%s failed", conn.name, tool, exc_info=True)
            if not isinstance(exc, ValueError | TypeError):  # a transport failure
                conn.broken(f"failed under a call: {type(exc).__name__}: {exc}")
            return ToolOutput.error(
                f"the call to MCP tool {tool} of server {conn.name!r} failed: "
                f"{type(exc).__name__}: {exc}",
                server=conn.name,
            )
        conn.succeeded()
        import mcp_types as types

        if not isinstance(result, types.CallToolResult):
            return ToolOutput.error(
                f"MCP server {conn.name!r} answered {tool} with an unsupported result "
                f"({type(result).__name__})",
                server=conn.name,
            )
        return to_output(
            result, server=conn.name, tool=tool, cap=self.output_cap, redact=self.redact
        )

    async def aclose(self) -> None:
        """Stop every server at once; returns when all are gone (bounded)."""
        async with trio.open_nursery() as nursery:
            for conn in self.connections.values():
                nursery.start_soon(_stop_final, conn)


async def _stop_final(conn: McpConnection) -> None:
    await conn.stop(final=True)


@asynccontextmanager
async def open_mcp_servers(
    configs: Mapping[str, McpServerConfig],
    settings: ConnectionSettings,
    **options: Any,
) -> AsyncIterator[McpServers]:
    async with trio.open_nursery() as nursery:
        servers = McpServers(nursery, configs, settings, **options)
        try:
            yield servers
        finally:
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                await servers.aclose()
            nursery.cancel_scope.cancel(reason="MCP servers closed")
