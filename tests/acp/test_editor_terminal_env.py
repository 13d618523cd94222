"""What a command run in the editor's terminal is given as environment (`terminal/create`
`env`): the variables that differ from the session's base environment, never a secret."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from rawtrio.acp.editor_terminal import EditorTerminal
from rawtrio.acp.jsonrpc import Peer, Ready, RequestId, RpcError
from rawtrio.acp.stdio import LineTransport
from rawtrio.processes import ProcessWatch
from rawtrio.tools.settings import ToolSettings
from tests.conftest import LIVENESS_S

STRIP = ToolSettings().strip_env


class Editor:
    """The editor's side of the terminal methods: records what `terminal/create` got and
    reports a command that exited 0 at once."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    async def handle_request(self, peer: Peer, method: str, params: Any, ready: Ready) -> Any:
        if method == "terminal/create":
            self.created.append(params)
            return {"terminalId": f"term-{len(self.created)}"}
        if method == "terminal/wait_for_exit":
            return {"exitCode": 0}
        if method == "terminal/output":
            return {"output": "", "truncated": False}
        if method in ("terminal/release", "terminal/kill"):
            return {}
        raise RpcError(-32601, f"no method {method}")

    async def handle_notification(self, peer: Peer, method: str, params: Any) -> None:
        return None

    def cancel_request(self, peer: Peer, method: str, request_id: RequestId) -> bool:
        return False


class NoMethods(Editor):
    async def handle_request(self, peer: Peer, method: str, params: Any, ready: Ready) -> Any:
        raise RpcError(-32601, f"no method {method}")


async def sent_env(env: Mapping[str, str], base_env: Mapping[str, str] | None) -> dict[str, str]:
    """The `env` of `terminal/create` for a command run with `env`, over real JSON-RPC."""
    ours, theirs = trio.testing.memory_stream_pair()
    editor = Editor()
    agent = Peer(LineTransport(ours.receive_stream, ours.send_stream), NoMethods(), name="agent")
    client = Peer(LineTransport(theirs.receive_stream, theirs.send_stream), editor, name="ed")
    with trio.fail_after(LIVENESS_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.run)
            nursery.start_soon(client.run)
            terminal = EditorTerminal(agent, "sess-1", base_env=base_env)
            result = await terminal.run(
                ["sh", "-c", "true"],
                cwd=Path("/"),
                session_id="sess-1",
                output_cap=1000,
                grace_s=0.2,
                timeout_s=None,
                on_output=None,
                env=env,
                strip_env=STRIP,
                watch=ProcessWatch(),
                call_marker="call-1",
            )
            assert result.exit_code == 0
            agent.close("done")
            client.close("done")
    (created,) = editor.created
    return {e["name"]: e["value"] for e in created["env"]}


@pytest.fixture
def client_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("RAWTRIO_TEST_MARK", "host")
    monkeypatch.delenv("CLIENT_API_KEY", raising=False)
    # (pytest changes PYTEST_CURRENT_TEST between the fixture and the test)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    return {**env, "RAWTRIO_TEST_MARK": "client", "CLIENT_API_KEY": "client-key-secret"}


async def test_only_what_differs_from_the_session_env_is_sent_and_no_secret(
    client_env: dict[str, str],
) -> None:
    env = {**client_env, "PAGER": "cat"}
    assert await sent_env(env, client_env) == {
        "PAGER": "cat",
        "RAWTRIO_SESSION": "sess-1",
        "RAWTRIO_CALL": "call-1",
    }


async def test_without_a_session_env_a_secret_matching_a_pattern_is_never_sent(
    client_env: dict[str, str],
) -> None:
    # Compared with this process's environment, both differ: the mark is sent, the key
    # (`*_API_KEY`) is not.
    sent = await sent_env(client_env, None)
    assert sent == {
        "RAWTRIO_TEST_MARK": "client",
        "RAWTRIO_SESSION": "sess-1",
        "RAWTRIO_CALL": "call-1",
    }
