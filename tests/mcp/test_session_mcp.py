"""MCP tools in a session: offered to the model, called through the same path as built-ins."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus
from rawtrio.messages import ImagePart, ProviderKind, ToolResult
from tests.conftest import session_on
from tests.mcp.conftest import http_server, servers_of, stdio_server, wait_for_line

#: The 1×1 PNG of the test server's `picture` tool (tests/mcp/server.py; not imported: the
#: module sets up a server when imported).
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def calls(*replies: dict[str, object]) -> dict[str, object]:
    return {"rules": [{"match": "*", "replies": [*replies, {"text": "done"}]}]}


def results(session: object) -> list[ToolResult]:
    return [m for m in session.context if isinstance(m, ToolResult)]  # type: ignore[attr-defined]


async def test_mcp_tools_are_offered_called_and_survive_a_crash(tmp_path: Path) -> None:
    scenario = calls(
        {
            "tool_calls": [
                {"name": "mcp__t__add", "arguments": {"a": 2, "b": 40}},
                {"name": "mcp__t__crash", "arguments": {}},
                {"name": "mcp__t__add", "arguments": {"a": 1, "b": 1}},
            ]
        }
    )
    config = stdio_server(restart_backoff_s=0.05)
    async with session_on(scenario, "anthropic", tmp_path, mcp_servers={"t": config}) as (
        session,
        server,
        _,
    ):
        ended = await session.run_turn("add")
        assert ended.outcome == "completed"
        added, crashed, again = results(session)
        assert (added.status, added.content) == (ToolStatus.OK, "42")
        assert crashed.status == ToolStatus.ERROR
        assert crashed.content.startswith(
            "MCP server 't' exited unexpectedly (exit code 3) during the call to crash; "
            "the call's outcome is unknown; it is restarted on next use"
        )
        assert (again.status, again.content) == (ToolStatus.OK, "2")
        assert session.mcp is not None
        assert session.mcp.connections["t"].starts == 2
        notices = [e.text for e in await session.events_since(0) if isinstance(e, ev.Notice)]
        assert any("exited unexpectedly (exit code 3)" in t for t in notices)
        tools = {t["name"]: t for t in server.requests[0].body["tools"]}
        assert tools["mcp__t__add"]["input_schema"]["required"] == ["a", "b"]
        assert session.registry.get("mcp/t/add") is not None
        session_id = session.id
    assert servers_of(session_id) == []


async def test_cancelling_a_turn_during_an_mcp_call_records_it_at_once(
    tmp_path: Path, server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_LOG", str(server_log))
    scenario = {
        "rules": [
            # The next user message carries a note naming the cut `slow` call: echo first.
            {
                "match": "echo",
                "replies": [
                    {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "again"}}]},
                    {"text": "done"},
                ],
            },
            {
                "match": "slow",
                "replies": [
                    {"tool_calls": [{"name": "mcp__t__slow", "arguments": {"seconds": 600}}]},
                    {"text": "done"},
                ],
            },
        ]
    }
    async with session_on(scenario, "openai-chat", tmp_path, mcp_servers={"t": stdio_server()}) as (
        session,
        server,
        _,
    ):
        assert session.mcp is not None
        pid = session.mcp.connections["t"].pid
        turn = await session.submit("slow")
        await wait_for_line(server_log, "started slow")
        session.cancel("cancelled by the test")
        with trio.fail_after(10):  # liveness: the slow call would take 600 s
            ended = await session.wait_turn(turn)
        assert ended.outcome == "cancelled"
        [r] = results(session)
        assert (r.status, r.started) == (ToolStatus.CANCELLED, True)
        assert "notifications/cancelled" in r.content
        assert r.details["server"] == "t"
        await wait_for_line(server_log, "cancelled slow")  # the server stopped its work
        ended = await session.run_turn("echo")
        assert ended.outcome == "completed"
        assert results(session)[-1].content == "again"
        assert session.mcp.connections["t"].pid == pid  # the same server, still usable
        assert server.requests[-1].status == 200  # the cancelled call's pairing is valid (I1)
        session_id = session.id
    assert servers_of(session_id) == []


async def test_closing_a_session_kills_a_server_that_ignores_sigterm(
    tmp_path: Path, server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_LOG", str(server_log))
    scenario = calls({"tool_calls": [{"name": "mcp__t__slow", "arguments": {"seconds": 600}}]})
    async with session_on(
        scenario, "anthropic", tmp_path, mcp_servers={"t": stdio_server("stubborn")}
    ) as (session, _, _):
        session_id = session.id
        assert len(servers_of(session_id)) == 1
        turn = await session.submit("go")
        await wait_for_line(server_log, "started slow")
        await session.close("closing with a call in flight")
        ended = await session.wait_turn(turn)
        assert ended.outcome == "cancelled"
        assert servers_of(session_id) == []


async def test_a_call_past_its_timeout_is_timed_out_and_the_server_told(
    tmp_path: Path, server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_LOG", str(server_log))
    scenario = calls({"tool_calls": [{"name": "mcp__t__slow", "arguments": {"seconds": 600}}]})
    config = stdio_server(call_timeout_s=0.5)
    async with session_on(scenario, "anthropic", tmp_path, mcp_servers={"t": config}) as (
        session,
        _,
        _,
    ):
        await session.run_turn("go")
        [r] = results(session)
        assert r.status == ToolStatus.TIMED_OUT
        assert "did not answer within 0.5 s" in r.content
        await wait_for_line(server_log, "cancelled slow")


async def test_a_lazy_server_with_a_cached_tool_list_starts_on_first_call(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    options = {"mcp_servers": {"t": stdio_server()}, "mcp_cache_dir": cache}
    scenario = calls({"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "hi"}}]})
    async with session_on(scenario, "anthropic", tmp_path, **options) as (first, _, _):
        # No cached list yet: the server starts with the session to list its tools.
        assert len(servers_of(first.id)) == 1
        offered = first.tool_specs
    assert len(list(cache.glob("t-*.json"))) == 1
    async with session_on(scenario, "anthropic", tmp_path, **options) as (session, server, _):
        assert session.tool_specs == offered  # the same tools, from the cache
        assert servers_of(session.id) == []  # and nothing started yet
        await session.run_turn("go")
        assert results(session)[0].content == "hi"
        assert len(servers_of(session.id)) == 1
        tools = [t["name"] for t in server.requests[0].body["tools"]]
        assert "mcp__t__echo" in tools


async def test_selection_and_annotations_go_through_the_permission_rules(tmp_path: Path) -> None:
    from rawtrio.permissions.rules import PermissionMode

    scenario = calls(
        {
            "tool_calls": [
                {"name": "mcp__t__echo", "arguments": {"text": "read-only"}},
                {"name": "mcp__t__wipe", "arguments": {"target": "everything"}},
                {"name": "mcp__t__echo", "arguments": {"text": 42}},
                {"name": "mcp__t__flood", "arguments": {"megabytes": 1}},
            ]
        }
    )
    config = stdio_server(tools=["*", "!flood"])
    async with session_on(
        scenario,
        "anthropic",
        tmp_path,
        mcp_servers={"t": config},
        mcp_tool_patterns=("*", "!mcp/t/big"),
        permission_mode=PermissionMode.DEFAULT,
        headless=True,
    ) as (session, _server, _):
        offered = {s.name for s in session.tool_specs if s.name.startswith("mcp__")}
        assert "mcp__t__big" not in offered
        assert "mcp__t__flood" not in offered
        assert {"mcp__t__echo", "mcp__t__wipe", "mcp__t__add"} <= offered
        await session.run_turn("go")
        echo, wipe, bad, flood = results(session)
        assert (echo.status, echo.content) == (ToolStatus.OK, "read-only")
        assert wipe.status == ToolStatus.DENIED
        assert wipe.denied_by == "policy"
        assert "mcp/t/wipe needs approval" in wipe.content
        assert bad.status == ToolStatus.INVALID_ARGUMENTS
        assert "expected string" in bad.content
        assert flood.status == ToolStatus.UNKNOWN_TOOL


async def test_an_http_server_gets_headers_from_variables_and_call_cancels(
    tmp_path: Path, server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rawtrio.config.schema import McpServerConfig, ValueRef, VariableConfig
    from rawtrio.config.variables import VariableResolver
    from rawtrio.tools.settings import ToolSettings

    token = "s3cret-token-value"
    variables = VariableResolver(
        {"token": VariableConfig(value=token, secret=True)}, env={}, cwd=tmp_path
    )
    monkeypatch.setenv("MCP_TEST_LOG", str(server_log))
    headers = {
        "tool_calls": [
            {"name": "mcp__web__header", "arguments": {"name": "X-Test-Token"}},
            {"name": "mcp__web__add", "arguments": {"a": 1, "b": 2}},
        ]
    }
    slow = {"tool_calls": [{"name": "mcp__web__slow", "arguments": {"seconds": 600}}]}
    scenario = {
        "rules": [
            {"match": "go", "replies": [headers, {"text": "done"}]},
            {"match": "slow", "replies": [slow, {"text": "done"}]},
        ]
    }
    async with http_server(tmp_path) as url:
        config = McpServerConfig(url=url, headers={"X-Test-Token": ValueRef(var="token")})
        async with session_on(
            scenario,
            "openai-responses",
            tmp_path,
            mcp_servers={"web": config},
            variables=variables,
            tools=ToolSettings(sigterm_grace_s=0.2, redactor=variables.redactor),
        ) as (session, _, _):
            await session.run_turn("go")
            header, add = results(session)
            turn = await session.submit("slow")
            await wait_for_line(server_log, "started slow")
            session.cancel("cancelled by the test")
            with trio.fail_after(10):  # liveness: the slow call would take 600 s
                ended = await session.wait_turn(turn)
            assert ended.outcome == "cancelled"
            assert "notifications/cancelled" in results(session)[-1].content
            await wait_for_line(server_log, "cancelled slow")
    # The header arrived (the server echoed it) and its secret value never shows.
    assert header.status == ToolStatus.OK
    assert token not in header.content
    assert "redacted" in header.content
    assert add.content == "3"


async def test_a_hung_server_is_found_by_a_ping_stopped_and_restarted(
    tmp_path: Path, server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_LOG", str(server_log))
    scenario = calls(
        {"tool_calls": [{"name": "mcp__t__freeze", "arguments": {"seconds": 600}}]},
    )
    config = stdio_server(call_timeout_s=0.5, restart_backoff_s=0.05)
    async with session_on(scenario, "anthropic", tmp_path, mcp_servers={"t": config}) as (
        session,
        _,
        _,
    ):
        assert session.mcp is not None
        conn = session.mcp.connections["t"]
        first_pid = conn.pid
        await session.run_turn("go")
        [r] = results(session)
        assert r.status == ToolStatus.TIMED_OUT
        # The frozen server cannot answer the ping that follows: it is stopped.
        while conn.pid == first_pid:  # noqa: ASYNC110 - polling the connection's state
            await trio.sleep(0.05)
        assert conn.error == "does not answer (no reply to a ping within 1 s)"
        assert await conn.ensure_ready(session.mcp._nursery) is not None
        assert conn.starts == 2


async def test_an_mcp_image_reaches_the_model_where_the_wire_takes_images(
    tmp_path: Path, wire: ProviderKind
) -> None:
    scenario = calls({"tool_calls": [{"name": "mcp__t__picture", "arguments": {}}]})
    async with session_on(scenario, wire, tmp_path, mcp_servers={"t": stdio_server()}) as (
        session,
        server,
        _,
    ):
        ended = await session.run_turn("draw")
        assert ended.outcome == "completed"
        (picture,) = results(session)
        data = base64.b64encode(PNG).decode()
        assert picture.images == (ImagePart("image/png", data),)
        text = f"a red dot\n[image 1: image/png, {len(PNG)} bytes]"
        assert picture.content == text
        assert [r.status for r in server.requests] == [200, 200]
        body = server.requests[1].body
        if wire == "anthropic":
            (result,) = body["messages"][2]["content"]
            assert result["content"] == [
                {"type": "text", "text": text},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": data},
                },
            ]
        elif wire == "openai-responses":
            assert body["input"][-1]["output"] == [
                {"type": "input_text", "text": text},
                {"type": "input_image", "image_url": f"data:image/png;base64,{data}"},
            ]
        else:
            assert body["messages"][-1] == {
                "role": "tool",
                "tool_call_id": picture.call_id,
                "content": text,
            }


async def test_dollar_brace_variables_expand_anywhere_in_a_string_and_stay_secret(
    tmp_path: Path,
) -> None:
    """Regression: `"Bearer ${API_TOKEN}"` and `${X:-default}` were passed on literally.
    They expand at start from the session's environment, and the values are redacted."""
    from rawtrio.config.schema import McpServerConfig, ValueRef
    from rawtrio.config.variables import VariableResolver
    from rawtrio.tools.settings import ToolSettings

    token = "tok-0123456789abcdef-expanded"
    env = {**os.environ, "API_TOKEN": token, "HTTP_TOKEN": token}
    variables = VariableResolver({}, env=env, cwd=tmp_path)
    ask = [
        {"name": "mcp__t__environ", "arguments": {"name": "AUTH_LINE"}},
        {"name": "mcp__web__header", "arguments": {"name": "Authorization"}},
    ]
    scenario = calls({"tool_calls": ask})
    stdio = stdio_server().model_copy(
        update={
            "env": {
                "AUTH_LINE": ValueRef(value="Bearer ${API_TOKEN}"),
            },
            # Unexpanded, this folder and this host would not exist: the server could not
            # start or be reached.
            "cwd": "${UNSET_FOR_THIS_TEST:-.}",
        }
    )
    async with http_server(tmp_path) as url:
        web = McpServerConfig(
            url=url.replace("127.0.0.1", "${MCP_HOST:-127.0.0.1}"),
            headers={"Authorization": ValueRef(value="Bearer ${HTTP_TOKEN}")},
        )
        async with session_on(
            scenario,
            "anthropic",
            tmp_path,
            mcp_servers={"t": stdio, "web": web},
            variables=variables,
            env=env,
            tools=ToolSettings(sigterm_grace_s=0.2, redactor=variables.redactor),
        ) as (session, _, _):
            await session.run_turn("go")
    auth, header = results(session)
    assert (auth.status, header.status) == (ToolStatus.OK, ToolStatus.OK)
    for secret in (auth, header):
        assert token not in secret.content
        assert "redacted" in secret.content


async def test_expanded_values_reach_the_server_as_written(tmp_path: Path) -> None:
    """Without a session's redactor the expanded values are visible: what the server got."""
    from rawtrio.config.schema import ValueRef
    from rawtrio.mcp.connection import McpConnection
    from tests.mcp.conftest import settings_for

    settings = settings_for(tmp_path)
    env = {**os.environ, "API_TOKEN": "abc", "EMPTY": ""}
    settings = type(settings)(**{**settings.__dict__, "env": env})
    config = stdio_server().model_copy(
        update={
            "env": {
                "AUTH_LINE": ValueRef(value="Bearer ${API_TOKEN}"),
                "DEFAULTED": ValueRef(value="${UNSET_FOR_THIS_TEST:-x}-${EMPTY:-y}"),
                "LITERAL": ValueRef(value="$${API_TOKEN}"),
            }
        }
    )
    conn = McpConnection("t", config, settings)
    async with trio.open_nursery() as nursery:
        session = await conn.ensure_ready(nursery)
        got = [
            await session.call_tool("environ", {"name": n})
            for n in ("AUTH_LINE", "DEFAULTED", "LITERAL")
        ]
        await conn.stop(final=True)
    texts = [r.content[0].text for r in got]  # type: ignore[union-attr]
    assert texts == ["Bearer abc", "x-y", "${API_TOKEN}"]


async def test_an_unset_variable_without_default_is_a_clear_error(tmp_path: Path) -> None:
    from rawtrio.config.schema import ValueRef
    from rawtrio.mcp.connection import McpConnection, McpServerError
    from tests.mcp.conftest import settings_for

    config = stdio_server().model_copy(
        update={"env": {"AUTH": ValueRef(value="Bearer ${NOT_SET_ANYWHERE_12345}")}}
    )
    conn = McpConnection("gh", config, settings_for(tmp_path))
    async with trio.open_nursery() as nursery:
        with pytest.raises(McpServerError) as err:
            await conn.ensure_ready(nursery)
    assert str(err.value) == (
        "MCP server 'gh' could not be configured: AUTH: environment variable "
        "NOT_SET_ANYWHERE_12345 is not set (write ${NOT_SET_ANYWHERE_12345:-…} for a default)"
    )
