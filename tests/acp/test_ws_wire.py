"""`rawtrio acp --ws` on the wire: who may connect, frame limits, and clients that stop
reading. One server serves the whole module; each test uses its own connections.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    open_websocket_url,
)

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.store.sqlite import SqliteStore
from tests.acp.conftest import LIVENESS_S, WsServer
from tests.headless.support import Isolation

MAX_MESSAGE = 64 * 1024
WS_ARGS = (
    "--max-message",
    str(MAX_MESSAGE),
    "--max-queued",
    "64",
    "--allow-origin",
    "https://ok.example",
    "--permission-timeout",
    "1",
)
_ids = itertools.count(1)


def bearer(server: WsServer) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {server.token}".encode())]


@asynccontextmanager
async def connect(
    server: WsServer, headers: list[tuple[bytes, bytes]] | None = None, **kw: Any
) -> AsyncIterator[WebSocketConnection]:
    headers = bearer(server) if headers is None else headers
    async with open_websocket_url(server.url, extra_headers=headers, **kw) as ws:
        yield ws


async def call(ws: WebSocketConnection, method: str, params: Any) -> dict[str, Any]:
    rid = next(_ids)
    await ws.send_message(
        json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    )
    while True:
        msg: dict[str, Any] = json.loads(await ws.get_message())
        if msg.get("id") == rid and "method" not in msg:
            return msg


async def drain(ws: WebSocketConnection) -> None:
    """Read until the connection closes (which raises `ConnectionClosed`)."""
    while True:
        await ws.get_message()


async def initialized(ws: WebSocketConnection) -> None:
    res = await call(ws, "initialize", {"protocolVersion": 1})
    assert res["result"]["protocolVersion"] == 1


async def handshake(
    server: WsServer, headers: list[tuple[str, str]], path: str = "/acp"
) -> tuple[int, bytes]:
    """A raw upgrade request (trio-websocket's client leaks its socket when refused):
    the status and body of the answer."""
    stream = await trio.open_tcp_stream("127.0.0.1", server.port)
    async with stream:
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: 127.0.0.1:{server.port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
            *(f"{k}: {v}" for k, v in headers),
        ]
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        with trio.fail_after(LIVENESS_S):
            while not _complete(data) and (chunk := await stream.receive_some(65536)):
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def _complete(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return True


def auth(server: WsServer) -> list[tuple[str, str]]:
    return [("Authorization", f"Bearer {server.token}")]


async def test_the_endpoint_and_token_are_announced_in_a_private_file(
    ws_server: WsServer, iso: Isolation
) -> None:
    path = iso.home / ".local" / "state" / "rawtrio" / "acp-ws.json"
    info = json.loads(path.read_text())
    assert info == {"acp_ws": ws_server.url, "token": ws_server.token}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


async def test_a_missing_token_is_refused(ws_server: WsServer) -> None:
    status, body = await handshake(ws_server, [])
    assert (status, body) == (401, b"missing token: send Authorization: Bearer <token>\n")


async def test_a_wrong_token_is_refused(ws_server: WsServer) -> None:
    status, body = await handshake(ws_server, [("Authorization", "Bearer nope")])
    assert (status, body) == (401, b"wrong token\n")


async def test_the_token_as_subprotocol_is_accepted_with_a_connection_id(
    ws_server: WsServer,
) -> None:
    async with connect(ws_server, headers=[], subprotocols=[f"bearer.{ws_server.token}"]) as ws:
        assert ws.subprotocol == f"bearer.{ws_server.token}"
        headers = {k.lower(): v for k, v in ws.handshake_headers}
        assert len(headers[b"acp-connection-id"]) == 32
        await initialized(ws)


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://192.168.1.9:80"])
async def test_a_foreign_origin_is_refused(ws_server: WsServer, origin: str) -> None:
    status, body = await handshake(ws_server, [*auth(ws_server), ("Origin", origin)])
    assert status == 403
    assert b"Origin" in body
    assert b"not allowed" in body


@pytest.mark.parametrize("origin", [b"http://localhost:3000", b"https://ok.example"])
async def test_loopback_and_allowed_origins_connect(ws_server: WsServer, origin: bytes) -> None:
    async with connect(ws_server, headers=[*bearer(ws_server), (b"origin", origin)]) as ws:
        await initialized(ws)


async def test_another_path_is_not_found(ws_server: WsServer) -> None:
    status, _ = await handshake(ws_server, auth(ws_server), path="/other")
    assert status == 404


async def test_binary_frames_are_ignored(ws_server: WsServer) -> None:
    async with connect(ws_server) as ws:
        await ws.send_message(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}')
        await initialized(ws)


@pytest.mark.parametrize(
    ("frame", "rid", "code"),
    [
        (r'{"jsonrpc": "2.0", "id": 5, "method": "x\ud800"}', 5, -32600),
        (r'{"jsonrpc": "2.0", "id": "\udfff", "method": "initialize"}', None, -32600),
        (
            r'{"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": {"a": "\udc00"}}',
            6,
            -32602,
        ),
    ],
)
async def test_text_that_is_not_unicode_gets_an_error_and_the_connection_goes_on(
    ws_server: WsServer, frame: str, rid: object, code: int
) -> None:
    async with connect(ws_server) as ws:
        await ws.send_message(frame)
        err = json.loads(await ws.get_message())
        assert (err["id"], err["error"]["code"]) == (rid, code), err
        assert "is not valid Unicode: it holds a lone surrogate" in err["error"]["message"]
        await initialized(ws)


async def test_an_oversized_frame_closes_only_that_connection(ws_server: WsServer) -> None:
    async with connect(ws_server) as other:
        await initialized(other)
        async with connect(ws_server) as ws:
            await initialized(ws)
            await ws.send_message("x" * (MAX_MESSAGE + 1))
            with pytest.raises(ConnectionClosed) as info:
                await drain(ws)
            reason = info.value.reason
            assert reason is not None
            assert reason.code == 1009  # message too big
        assert "result" in await call(other, "session/list", {})


# trio-websocket's *client* leaks its socket when the server drops a connection whose
# reader is stuck (the test's stalled client): collected here, under this filter.
@pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")
async def test_a_client_that_stops_reading_is_cut_off_alone(
    ws_server: WsServer, iso: Isolation
) -> None:
    with trio.fail_after(LIVENESS_S):
        async with connect(ws_server) as watcher, connect(ws_server) as stalled:
            await initialized(watcher)
            await initialized(stalled)
            new = await call(stalled, "session/new", {"cwd": str(iso.cwd), "mcpServers": []})
            sid = new["result"]["sessionId"]
            prompt = [{"type": "text", "text": "flood"}]
            await stalled.send_message(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 99,
                        "method": "session/prompt",
                        "params": {"sessionId": sid, "prompt": prompt},
                    }
                )
            )
            # `stalled` reads nothing more. Meanwhile other sessions work normally (that
            # a turn goes on when its connection is gone: test_conformance, reconnect)...
            other = await call(watcher, "session/new", {"cwd": str(iso.cwd), "mcpServers": []})
            hello = [{"type": "text", "text": "say hello"}]
            res = await call(
                watcher,
                "session/prompt",
                {"sessionId": other["result"]["sessionId"], "prompt": hello},
            )
            assert res["result"] == {"stopReason": "end_turn"}
            # ...and the stalled connection is cut off (draining it ends with the close).
            with pytest.raises(ConnectionClosed):
                await drain(stalled)
    gc.collect()


async def test_a_permission_request_nobody_can_answer_cancels_the_turn(
    ws_server: WsServer, iso: Isolation
) -> None:
    with trio.fail_after(LIVENESS_S):
        async with connect(ws_server) as ws:
            await initialized(ws)
            new = await call(ws, "session/new", {"cwd": str(iso.cwd), "mcpServers": []})
            sid = new["result"]["sessionId"]
            await call(ws, "session/set_mode", {"sessionId": sid, "modeId": "default"})
            prompt = [{"type": "text", "text": "use a tool"}]
            await ws.send_message(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 5,
                        "method": "session/prompt",
                        "params": {"sessionId": sid, "prompt": prompt},
                    }
                )
            )
            while json.loads(await ws.get_message()).get("method") != "session/request_permission":
                pass
        # The only connection left without answering; nobody attaches within the timeout.
        ended = await _turn_ended(iso, sid)
        assert ended.outcome is TurnOutcome.CANCELLED
        assert "no client attached to answer a permission request" in ended.reason


async def _turn_ended(iso: Isolation, sid: str) -> ev.TurnEnded:
    """Read the session's display history from the store (another process may read it)."""
    path = iso.home / ".local" / "state" / "rawtrio" / "sessions.db"
    async with SqliteStore(path) as store:
        while True:
            for event in await store.events_since(sid, 0):
                if isinstance(event, ev.TurnEnded):
                    return event
            await trio.sleep(0.1)  # not ended yet: look again
