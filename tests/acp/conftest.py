"""The fake model server for ACP tests, an isolated place per module, and `rawtrio acp`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import requires
from tests.headless.support import Isolation

LIVENESS_S = 60.0
HERE = Path(__file__).parent
KEYS = {"ANTHROPIC_API_KEY": "test-key"}

SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "say hello",
            "replies": [{"thinking": "Let me think.", "text": "Hello from the fake model."}],
        },
        {
            "match": "use a tool",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo tool-output"}}]},
                {"text": "The tool said tool-output."},
            ],
        },
        # No text for a long while: a cancel lands before any output.
        {"match": "think slowly", "replies": [{"text": "too late", "delay_ms": 3000}]},
        {
            "match": "sleep a while",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
                {"text": "slept"},
            ],
        },
        {
            "match": "stream slowly",
            "replies": [
                {"text": "one two three four five six seven eight", "chunk": 4, "delay_ms": 150}
            ],
        },
        {
            "match": "read the buffer",
            "replies": [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                {"text": "read it"},
            ],
        },
        {
            "match": "write the buffer",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "arguments": {"path": "new.txt", "content": "from the agent\n"},
                        }
                    ]
                },
                {"text": "wrote it"},
            ],
        },
        {
            "match": "make a plan",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "todo_write",
                            "arguments": {
                                "todos": [
                                    {"content": "read the code", "status": "completed"},
                                    {"content": "fix the bug", "status": "in_progress"},
                                ]
                            },
                        }
                    ]
                },
                {"text": "planned"},
            ],
        },
        {
            "match": "add with mcp",
            "replies": [
                {"tool_calls": [{"name": "mcp__t__add", "arguments": {"a": 2, "b": 40}}]},
                {"text": "added"},
            ],
        },
        {"match": "fail please", "replies": [{"error": {"status": 400, "message": "bad thing"}}]},
        # Far more updates than a connection that stopped reading may have queued.
        {"match": "flood", "replies": [{"text": "x" * 100_000, "chunk": 8}]},
        # A lone surrogate: the wire carries it as the JSON escape "\ud800".
        {"match": "answer with a lone surrogate", "replies": [{"text": "bad \ud800 text"}]},
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


@dataclass(frozen=True)
class FakeModel:
    base_url: str


@pytest.fixture(scope="module")
def fake_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    path = tmp_path_factory.mktemp("fake-model") / "scenario.json"
    path.write_text(json.dumps(SCENARIO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rawtrio.testing.fake_model", "--scenario", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield FakeModel(json.loads(proc.stdout.readline())["base_url"])
    finally:
        proc.terminate()
        proc.wait(timeout=LIVENESS_S)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="module")
def iso(tmp_path_factory: pytest.TempPathFactory) -> Isolation:
    return Isolation(tmp_path_factory.mktemp("acp"))


def acp_argv(fake: FakeModel, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rawtrio",
        "acp",
        "--base-url",
        fake.base_url,
        "--sigterm-grace",
        "0.2",
        *extra,
    ]


def acp_env(iso: Isolation, extra: dict[str, str] | None = None) -> dict[str, str]:
    return iso.env({**KEYS, **(extra or {})})


def node_ready() -> str:
    """The node binary, with the SDK installed (`make test` runs `npm ci`)."""
    node = shutil.which("node")
    requires(node is not None, "node is not installed")
    requires(
        (HERE / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(),
        "the ACP SDK is not installed (npm ci --prefix tests/acp)",
    )
    assert node is not None
    return node


@dataclass
class WsServer:
    proc: subprocess.Popen[str]
    url: str
    token: str
    logs: list[str]

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])


@pytest.fixture(scope="module")
def ws_server(
    fake_model: FakeModel, iso: Isolation, request: pytest.FixtureRequest
) -> Iterator[WsServer]:
    """`rawtrio acp --ws` on a free port (plus the module's `WS_ARGS`); its announcement
    line is read from stderr."""
    extra = getattr(request.module, "WS_ARGS", ())
    proc = subprocess.Popen(
        acp_argv(fake_model, "--ws", "--permission-timeout", "30", *extra),
        env=acp_env(iso),
        cwd=iso.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        info = json.loads(line)
        # Keep reading its stderr (logs), so the server never blocks writing it.
        logs: list[str] = []
        reader = threading.Thread(target=lambda: logs.extend(proc.stderr or ()), daemon=True)
        reader.start()
        yield WsServer(proc, info["acp_ws"], info["token"], logs)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=LIVENESS_S)
            assert proc.returncode == 0, "".join(logs)
        finally:
            reader.join(timeout=LIVENESS_S)
            if proc.stderr is not None:
                proc.stderr.close()
