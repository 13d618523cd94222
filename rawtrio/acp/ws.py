"""ACP over a local WebSocket (`rawtrio acp --ws`), on trio-websocket.

`ws://HOST:PORT/acp`; one JSON-RPC message per text frame (binary frames are ignored).
Before the upgrade each request is checked, and refused with an HTTP status and a
one-line reason:

- the path must be `/acp` (404);
- `Host` must name the listening address or a loopback name (421), against DNS rebinding;
- `Origin`, when present, must be a loopback origin or one the user allowed with
  `--allow-origin` (403): browsers let any page open a WebSocket to localhost;
- the per-process token must come as `Authorization: Bearer <token>` or as the
  subprotocol `bearer.<token>` (401), compared in constant time.

An accepted connection gets an `Acp-Connection-Id` response header. Frames over the size
limit close that connection with status 1009 (message too big); other connections are
not affected. A connection that ends only detaches from its sessions.

Exception-group policy: trio-websocket's server dies when a handler raises, so the
handler catches every `Exception` of one connection and logs it.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import uuid
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    serve_websocket,
)

from rawtrio.acp.agent import AcpAgent, serve_peer
from rawtrio.acp.jsonrpc import DEFAULT_OUTBOX, Peer
from rawtrio.private_files import write_private

log = logging.getLogger(__name__)

PATH: Final = "/acp"
DEFAULT_MAX_MESSAGE: Final = 8 * 1024 * 1024
STATE_FILE: Final = "acp-ws.json"
_LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class WsTransport:
    def __init__(self, ws: WebSocketConnection) -> None:
        self._ws = ws

    async def receive(self) -> str | None:
        while True:
            try:
                message = await self._ws.get_message()
            except ConnectionClosed:
                return None
            if isinstance(message, str):
                return message
            # Binary frames are not part of ACP: ignored.

    async def send(self, text: str) -> None:
        try:
            await self._ws.send_message(text)
        except ConnectionClosed as exc:
            raise trio.BrokenResourceError("websocket closed") from exc

    async def aclose(self) -> None:
        await self._ws.aclose()


def _header(request: WebSocketRequest, name: bytes) -> str | None:
    for key, value in request.headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _host(request: WebSocketRequest) -> str | None:
    """The Host header. wsproto keeps it out of the request's headers (it checks that one
    is present) and trio-websocket does not expose its `host` field, hence the lookup."""
    event = getattr(request, "_event", None)
    host = getattr(event, "host", None)
    return host if isinstance(host, str) else None


def origin_allowed(origin: str, allowed: Sequence[str]) -> bool:
    if origin in allowed:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and (parts.hostname or "") in _LOOPBACK_HOSTS


def host_allowed(host: str, bound: str) -> bool:
    name = urlsplit(f"//{host}").hostname or ""
    return name in _LOOPBACK_HOSTS or name == bound.strip("[]")


class WsServer:
    def __init__(
        self,
        agent: AcpAgent,
        *,
        host: str,
        token: str,
        allowed_origins: Sequence[str] = (),
        outbox: int = DEFAULT_OUTBOX,
    ) -> None:
        self.agent = agent
        self.host = host
        self.token = token
        self.allowed_origins = tuple(allowed_origins)
        self.outbox = outbox
        self.connections = 0

    def _check(self, request: WebSocketRequest) -> tuple[int, str, str | None]:
        """(status, reason, chosen subprotocol); status 0 means accept."""
        if request.path.split("?", 1)[0] != PATH:
            return 404, f"not found: the ACP endpoint is {PATH}", None
        host = _host(request)
        if host is not None and not host_allowed(host, self.host):
            return 421, f"Host {host!r} is not this server (use 127.0.0.1)", None
        origin = _header(request, b"origin")
        if (
            origin is not None
            and origin != "null"
            and not origin_allowed(origin, self.allowed_origins)
        ):
            return 403, f"Origin {origin!r} is not allowed (see --allow-origin)", None
        if origin == "null":
            return 403, "Origin 'null' is not allowed", None
        auth = _header(request, b"authorization") or ""
        subprotocol = None
        offered = None
        if auth.lower().startswith("bearer "):
            offered = auth[7:].strip()
        for proto in request.proposed_subprotocols:
            if proto.startswith("bearer."):
                subprotocol = proto
                offered = offered or proto[len("bearer.") :]
        if not offered:
            return 401, "missing token: send Authorization: Bearer <token>", None
        if not hmac.compare_digest(offered.encode(), self.token.encode()):
            return 401, "wrong token", None
        return 0, "", subprotocol

    async def handle(self, request: WebSocketRequest) -> None:
        try:
            status, reason, subprotocol = self._check(request)
            if status:
                log.warning("refused a WebSocket connection: %s", reason)
                await request.reject(
                    status,
                    extra_headers=[(b"content-type", b"text/plain; charset=utf-8")],
                    body=(reason + "\n").encode(),
                )
                return
            conn_id = uuid.uuid4().hex
            ws = await request.accept(
                subprotocol=subprotocol,
                extra_headers=[(b"acp-connection-id", conn_id.encode())],
            )
            self.connections += 1
            name = f"ws {conn_id[:8]}"
            conn = self.agent.connection(name)
            peer = Peer(WsTransport(ws), conn, name=name, outbox=self.outbox)
            await serve_peer(self.agent, peer, conn)
        except ConnectionClosed:
            pass
        except Exception:
            log.exception("WebSocket connection failed")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_state_file(path: Path, info: dict[str, Any]) -> None:
    """`acp-ws.json`, readable by the user only (it holds the token)."""
    write_private(path, json.dumps(info) + "\n")


async def serve(
    agent: AcpAgent,
    *,
    host: str,
    port: int,
    token: str,
    allowed_origins: Sequence[str] = (),
    max_message: int = DEFAULT_MAX_MESSAGE,
    outbox: int = DEFAULT_OUTBOX,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; `task_status` gets the (host, port) it listens on."""
    server = WsServer(agent, host=host, token=token, allowed_origins=allowed_origins, outbox=outbox)
    async with trio.open_nursery() as nursery:
        listener = await nursery.start(
            partial(
                serve_websocket,
                server.handle,
                host,
                port,
                None,
                handler_nursery=nursery,
                max_message_size=max_message,
                message_queue_size=4,
            )
        )
        bound = listener.port
        task_status.started((host, bound))
