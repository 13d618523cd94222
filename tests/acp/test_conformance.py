"""The official TypeScript ACP SDK drives `rawtrio acp` over stdio and WebSocket.

`conformance.mjs` runs every check against one rawtrio process per transport (a second
one for stdio's load-from-store checks) and prints one result line per check; each test
here asserts one of them, so a failure names the behaviour.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import (
    HERE,
    LIVENESS_S,
    FakeModel,
    WsServer,
    acp_argv,
    acp_env,
    node_ready,
)
from tests.headless.support import Isolation

MCP_SERVER = Path(__file__).parent.parent / "mcp" / "server.py"

COMMON = [
    "initialize",
    "new_and_prompt_streams_text_and_thought",
    "prompt_with_tool_reports_tool_call_and_result",
    "permission_allow_once",
    "permission_deny",
    "permission_cancelled",
    "cancel_before_any_output",
    "cancel_mid_tool",
    "new_prompt_cancels_running_one",
    "plan_usage_and_config_options",
    "delete_session",
    "list_sessions",
    "close_cancels_running_prompt",
]
STDIO = [
    *COMMON,
    "load_replays_history_same_process",
    "cancel_right_after_load_same_process",
    "load_replays_history_new_process",
    "cancel_right_after_load_new_process",
    "fs_read_goes_through_the_editor",
    "fs_write_goes_through_the_editor",
    "terminal_runs_commands_in_the_editor",
    "terminal_cancel_kills_and_releases",
    "mcp_server_from_the_client",
    "mcp_http_server_from_the_client",
]
WS = [
    *COMMON,
    "load_replays_history_other_connection",
    "cancel_right_after_load_other_connection",
    "two_connections_share_a_session",
    "reconnect_mid_turn_keeps_updates",
    "permission_resent_to_next_connection",
]


def _run_node(mode: str, env: dict[str, str], cwd: Path) -> dict[str, dict[str, Any]]:
    node = node_ready()
    done = subprocess.run(
        [node, str(HERE / "conformance.mjs"), mode],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=LIVENESS_S * 5,
    )
    results: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            results[row["check"]] = row
    results["_stderr"] = {"ok": True, "detail": done.stderr[-4000:]}
    return results


@contextlib.contextmanager
def mcp_http_server() -> Iterator[str]:
    """The MCP test server over streamable HTTP (a child process); yields its URL."""
    proc = subprocess.Popen(
        [sys.executable, str(MCP_SERVER), "--http"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield json.loads(proc.stdout.readline())["url"]
    finally:
        proc.kill()
        proc.wait(timeout=LIVENESS_S)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="module")
def stdio_results(fake_model: FakeModel, iso: Isolation) -> dict[str, dict[str, Any]]:
    with mcp_http_server() as url:
        env = acp_env(
            iso,
            {
                "ACP_CMD": json.dumps(acp_argv(fake_model)),
                "ACP_CWD": str(iso.cwd),
                "ACP_MCP_SERVER": json.dumps([sys.executable, str(MCP_SERVER)]),
                "ACP_MCP_HTTP_URL": url,
            },
        )
        return _run_node("stdio", env, iso.cwd)


@pytest.fixture(scope="module")
def ws_results(ws_server: WsServer, iso: Isolation) -> dict[str, dict[str, Any]]:
    env = acp_env(
        iso,
        {"ACP_WS_URL": ws_server.url, "ACP_WS_TOKEN": ws_server.token, "ACP_CWD": str(iso.cwd)},
    )
    return _run_node("ws", env, iso.cwd)


def _assert_check(results: dict[str, dict[str, Any]], name: str) -> None:
    assert "driver" not in results, results["driver"]["detail"]
    row = results.get(name)
    assert row is not None, f"check {name} did not run; stderr:\n{results['_stderr']['detail']}"
    assert row["ok"], row["detail"]


@pytest.mark.parametrize("name", STDIO)
def test_stdio(stdio_results: dict[str, dict[str, Any]], name: str) -> None:
    _assert_check(stdio_results, name)


@pytest.mark.parametrize("name", WS)
def test_websocket(ws_results: dict[str, dict[str, Any]], name: str) -> None:
    _assert_check(ws_results, name)
