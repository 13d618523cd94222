"""MCP test helpers: the test server (tests/mcp/server.py) as config, and process checks."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from rawtrio.config.schema import McpServerConfig
from rawtrio.mcp.connection import ConnectionSettings

SERVER = Path(__file__).with_name("server.py")
#: Liveness bound for a server start (the server imports the mcp package: ~1 s).
STARTUP_S = 60.0


def stdio_server(*modes: str, **fields: Any) -> McpServerConfig:
    argv = [sys.executable, str(SERVER), *(f"--mode={m}" for m in modes)]
    fields.setdefault("startup_timeout_s", STARTUP_S)
    return McpServerConfig(command=argv, **fields)


def servers_of(session_id: str) -> list[psutil.Process]:
    """Live (non-zombie) processes started for `session_id`."""
    found = []
    for proc in psutil.process_iter(["environ", "status"]):
        try:
            env = proc.info["environ"] or {}
        except (psutil.Error, KeyError):
            continue
        if env.get("RAWTRIO_SESSION") == session_id and proc.info["status"] != "zombie":
            found.append(proc)
    return found


def settings_for(
    tmp_path: Path, notices: list[tuple[str, str]] | None = None
) -> ConnectionSettings:
    sink = notices if notices is not None else []
    return ConnectionSettings(
        session_id=f"test-{tmp_path.name}",
        cwd=tmp_path,
        grace_s=0.3,
        notify=lambda level, text: sink.append((level, text)),
    )


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    """A file the test server appends its events to (`MCP_TEST_LOG`)."""
    path = tmp_path / "server-events.log"
    path.touch()
    return path


async def wait_for_line(path: Path, line: str) -> None:
    """Until the server wrote `line` to its event log (polling a file: no event exists)."""
    while line not in (await trio.Path(path).read_text()).splitlines():  # noqa: ASYNC110
        await trio.sleep(0.02)


@asynccontextmanager
async def http_server(tmp_path: Path) -> AsyncIterator[str]:
    """The test server over streamable HTTP, as a child process; yields its URL."""
    proc = await trio.lowlevel.open_process(
        [sys.executable, str(SERVER), "--http"],
        stdout=-1,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        buf = b""
        with trio.fail_after(STARTUP_S):
            while b"\n" not in buf:
                data = await proc.stdout.receive_some(4096)
                assert data, "the HTTP test server exited before listening"
                buf += data
        yield json.loads(buf.split(b"\n")[0])["url"]
    finally:
        with trio.move_on_after(10) as s:
            s.shield = True
            proc.kill()
            await proc.wait()
            if proc.stdout is not None:
                await proc.stdout.aclose()
