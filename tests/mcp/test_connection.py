"""One MCP server's lifecycle against the real test server: misbehaviour stays bounded."""

from __future__ import annotations

import re
from pathlib import Path

import psutil
import pytest
import trio

from rawtrio.mcp.connection import McpConnection, McpServerError, ServerState
from tests.mcp.conftest import STARTUP_S, settings_for, stdio_server, wait_for_line


async def test_junk_on_stdout_and_a_stderr_flood_stay_in_a_capped_log(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    settings = type(settings)(**{**settings.__dict__, "max_message_bytes": 64 * 1024})
    conn = McpConnection("t", stdio_server("junk-at-start"), settings)
    async with trio.open_nursery() as nursery:
        session = await conn.ensure_ready(nursery)
        assert any("starting up, line 0 (not JSON-RPC)" in line for line in conn.log.lines())
        # Junk lines, then one 2 MB line without a newline, then a 4 MB stderr flood.
        many = await session.call_tool("junk", {"lines": 2000})
        endless = await session.call_tool("junk", {"lines": 200, "width": 10_000, "newline": False})
        assert any(re.search(r"skipped a line of 2\d{6} bytes", s) for s in conn.log.lines()), (
            conn.log.tail(3)
        )
        flood = await session.call_tool("flood", {"megabytes": 4})
        after = await session.call_tool("echo", {"text": "still here"})
        await conn.stop(final=True)
    texts = [r.content[0].text for r in (many, endless, flood, after)]  # type: ignore[union-attr]
    assert texts == [
        "wrote 2000 junk lines",
        "wrote 200 junk lines",
        "wrote 4 MB to stderr",
        "still here",
    ]
    lines = conn.log.lines()
    assert conn.log.dropped_lines > 4000
    assert len(lines) <= 200
    assert conn.log.buffered_chars() <= 200 * 600


async def test_a_crash_mid_call_fails_the_call_and_the_next_use_restarts(tmp_path: Path) -> None:
    notices: list[tuple[str, str]] = []
    conn = McpConnection("t", stdio_server(restart_backoff_s=0.05), settings_for(tmp_path, notices))
    from mcp.shared.exceptions import MCPError

    async with trio.open_nursery() as nursery:
        session = await conn.ensure_ready(nursery)
        first_pid = conn.pid
        with pytest.raises(MCPError, match="onnection closed"):
            await session.call_tool("crash", {"code": 3})
        await conn.wait_stopped()
        assert conn.state is ServerState.FAILED
        assert conn.error == "exited unexpectedly (exit code 3)"
        [(level, text)] = notices
        assert level == "warning"
        assert "crashing on purpose" in text
        again = await conn.ensure_ready(nursery)
        result = await again.call_tool("add", {"a": 1, "b": 1})
        assert result.content[0].text == "2"  # type: ignore[union-attr]
        assert (conn.starts, conn.state) == (2, ServerState.READY)
        assert conn.pid != first_pid
        await conn.stop(final=True)
    assert not psutil.pid_exists(first_pid or 0) or psutil.Process(first_pid).status() == "zombie"


async def test_a_server_that_ignores_sigterm_and_stdin_close_is_killed(tmp_path: Path) -> None:
    conn = McpConnection("t", stdio_server("stubborn"), settings_for(tmp_path))
    async with trio.open_nursery() as nursery:
        await conn.ensure_ready(nursery)
        pid = conn.pid
        assert pid is not None
        transport = conn._transport
        assert transport is not None
        with trio.fail_after(STARTUP_S):
            await conn.stop(final=True)
    assert transport.stopped_with == "SIGKILL"
    assert transport.exit_text() == "killed by SIGKILL"
    assert not psutil.pid_exists(pid)


async def test_a_server_that_cannot_start_is_reported_with_its_stderr(tmp_path: Path) -> None:
    notices: list[tuple[str, str]] = []
    conn = McpConnection("t", stdio_server("crash-at-start"), settings_for(tmp_path, notices))
    async with trio.open_nursery() as nursery:
        with pytest.raises(McpServerError) as err:
            await conn.ensure_ready(nursery)
    assert "cannot start (on purpose)" in str(err.value)
    assert conn.state is ServerState.FAILED
    assert notices
    assert "restarted on next use" in notices[0][1]


async def test_a_server_that_never_answers_initialize_times_out(tmp_path: Path) -> None:
    conn = McpConnection(
        "t", stdio_server("hang-at-start", startup_timeout_s=0.5), settings_for(tmp_path)
    )
    async with trio.open_nursery() as nursery:
        with pytest.raises(McpServerError, match=r"did not answer initialize within 0.5 s"):
            await conn.ensure_ready(nursery)
    assert conn.pid is None


async def test_a_missing_program_is_a_clear_error(tmp_path: Path) -> None:
    config = stdio_server().model_copy(update={"command": ["/nonexistent/mcp-server"]})
    conn = McpConnection("gone", config, settings_for(tmp_path))
    async with trio.open_nursery() as nursery:
        with pytest.raises(McpServerError, match=r"'gone' could not be started: .*No such file"):
            await conn.ensure_ready(nursery)


async def test_cancelling_a_call_notifies_the_server_and_keeps_it_usable(
    tmp_path: Path, server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_LOG", str(server_log))
    conn = McpConnection("t", stdio_server(), settings_for(tmp_path))
    async with trio.open_nursery() as nursery:
        session = await conn.ensure_ready(nursery)
        with trio.CancelScope() as scope:
            nursery.start_soon(_cancel_when_started, server_log, scope)
            await session.call_tool("slow", {"seconds": 600})
        assert scope.cancelled_caught
        with trio.fail_after(STARTUP_S):
            await wait_for_line(server_log, "cancelled slow")
        result = await session.call_tool("echo", {"text": "next"})
        assert result.content[0].text == "next"  # type: ignore[union-attr]
        await conn.stop(final=True)


async def _cancel_when_started(log: Path, scope: trio.CancelScope) -> None:
    await wait_for_line(log, "started slow")
    scope.cancel(reason="test")


async def test_an_unreadable_variable_in_env_is_a_clear_error(tmp_path: Path) -> None:
    from rawtrio.config.schema import ValueRef
    from rawtrio.config.variables import VariableResolver

    resolver = VariableResolver({}, env={}, cwd=tmp_path)
    settings = settings_for(tmp_path)
    settings = type(settings)(**{**settings.__dict__, "resolve": resolver.environment})
    config = stdio_server().model_copy(update={"env": {"TOKEN": ValueRef(var="gh_token")}})
    conn = McpConnection("gh", config, settings)
    async with trio.open_nursery() as nursery:
        with pytest.raises(McpServerError) as err:
            await conn.ensure_ready(nursery)
    assert str(err.value) == (
        "MCP server 'gh' could not be configured: variable 'gh_token' (unknown): "
        "no such variable (known: none defined)"
    )
    assert conn.state is ServerState.FAILED
