"""The official Python ACP SDK (`agent-client-protocol`) drives `rawtrio acp` over stdio
and WebSocket: the second conformance client next to the TypeScript one.

`sdk_client.py` runs every check against one rawtrio process per transport (a second one
for stdio's load from the store, a second connection for the WebSocket's) and prints one
result line per check; each test here asserts one of them, so a failure names the
behaviour.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import HERE, LIVENESS_S, FakeModel, WsServer, acp_argv, acp_env
from tests.conftest import requires
from tests.headless.support import Isolation

COMMON = [
    "initialize",
    "new_and_prompt_streams_text_and_thought",
    "prompt_with_tool_reports_tool_call_and_result",
    "permission_allow_once",
    "permission_deny",
    "permission_cancelled",
    "cancel_mid_tool",
]
STDIO = [*COMMON, "load_replays_history_new_process"]
WS = [*COMMON, "load_replays_history_other_connection"]


def _run_client(mode: str, env: dict[str, str], cwd: Path) -> dict[str, dict[str, Any]]:
    requires(
        importlib.util.find_spec("acp") is not None,
        "the Python ACP SDK is not installed (pip install -e '.[dev]')",
    )
    done = subprocess.run(
        [sys.executable, str(HERE / "sdk_client.py"), mode],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=LIVENESS_S * 5,
        check=False,
    )
    results: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            results[row["check"]] = row
    results["_stderr"] = {"ok": True, "detail": done.stderr[-4000:]}
    return results


@pytest.fixture(scope="module")
def stdio_results(fake_model: FakeModel, iso: Isolation) -> dict[str, dict[str, Any]]:
    env = acp_env(iso, {"ACP_CMD": json.dumps(acp_argv(fake_model)), "ACP_CWD": str(iso.cwd)})
    return _run_client("stdio", env, iso.cwd)


@pytest.fixture(scope="module")
def ws_results(ws_server: WsServer, iso: Isolation) -> dict[str, dict[str, Any]]:
    env = acp_env(
        iso,
        {"ACP_WS_URL": ws_server.url, "ACP_WS_TOKEN": ws_server.token, "ACP_CWD": str(iso.cwd)},
    )
    return _run_client("ws", env, iso.cwd)


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
