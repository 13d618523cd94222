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

Connections that never finish the handshake cost a file descriptor each, so they are
bounded three ways (`_GuardedListener`): the handshake must arrive within a few seconds
(`handshake_timeout`, trio-websocket's `connect_timeout`); a peer that closes or resets
before the server answered has its socket closed at once (trio-websocket would hold it
until the timeout); and at most `max_pending` handshakes wait per listener — the next
connection evicts the oldest one still waiting, and running out of descriptors in
`accept` evicts one too, so a client that sends its handshake right away (every real
one) is served during a flood of idle connections.

Exception-group policy: trio-websocket's server dies when a handler raises, so the
handler catches every `Exception` of one connection and logs it.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import json
import logging
import os
import secrets
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import urlsplit

import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    WebSocketServer,
)

from rawtrio.acp.agent import AcpAgent, serve_peer
from rawtrio.acp.jsonrpc import DEFAULT_OUTBOX, Peer
from rawtrio.private_files import write_private

log = logging.getLogger(__name__)

PATH: Final = "/acp"
DEFAULT_MAX_MESSAGE: Final = 8 * 1024 * 1024
STATE_FILE: Final = "acp-ws.json"
#: Seconds a new connection has to send its upgrade request.
DEFAULT_HANDSHAKE_TIMEOUT: Final = 5.0
#: Connections per listener whose handshake is still awaited.
DEFAULT_MAX_PENDING: Final = 64
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


class _PendingHandshake(trio.abc.Stream):
    """A connection, counted as pending until the server first writes to it (the 101
    or the refusal). While pending, the peer's end of the stream closes the socket at
    once, and the listener may evict it (`drop`)."""

    def __init__(self, stream: trio.SocketStream, listener: _GuardedListener) -> None:
        self._stream = stream
        self._listener = listener

    def drop(self) -> None:
        """Close the socket now (synchronously: the descriptor is free on return);
        trio-websocket's reader sees the end and its handler gives up."""
        self._listener.settle(self)
        self._stream.socket.close()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        try:
            data = await self._stream.receive_some(max_bytes)
        except trio.BrokenResourceError:  # reset by the peer
            if self._listener.is_pending(self):
                self.drop()
            raise
        if not data and self._listener.is_pending(self):
            self.drop()
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self._listener.settle(self)
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        self._listener.settle(self)
        await self._stream.aclose()


class _GuardedListener(trio.abc.Listener[trio.abc.Stream]):
    """A TCP listener that bounds the connections waiting for their handshake."""

    def __init__(self, inner: trio.SocketListener, max_pending: int) -> None:
        self._inner = inner
        self._max_pending = max_pending
        self._pending: dict[_PendingHandshake, None] = {}  # oldest first
        self.evicted = 0
        #: What trio-websocket's `listeners` property reports.
        self.socket = inner.socket

    @property
    def pending(self) -> int:
        return len(self._pending)

    def is_pending(self, conn: _PendingHandshake) -> bool:
        return conn in self._pending

    def settle(self, conn: _PendingHandshake) -> None:
        self._pending.pop(conn, None)

    def _evict_oldest(self, why: str) -> None:
        oldest = next(iter(self._pending))
        oldest.drop()
        self.evicted += 1
        if self.evicted % 1000 == 1:
            log.warning(
                "closed a WebSocket connection still waiting for its handshake (%s); %d so far",
                why,
                self.evicted,
            )

    async def accept(self) -> trio.abc.Stream:
        while True:
            try:
                stream = await self._inner.accept()
            except OSError as exc:
                # Out of descriptors: free the oldest idle one; trio's accept loop
                # waits and retries when there is none to free.
                if exc.errno in (errno.EMFILE, errno.ENFILE) and self._pending:
                    self._evict_oldest("out of file descriptors")
                    continue
                raise
            break
        conn = _PendingHandshake(stream, self)
        self._pending[conn] = None
        while len(self._pending) > self._max_pending:
            self._evict_oldest(f"more than {self._max_pending} waiting")
        return conn

    async def aclose(self) -> None:
        for conn in list(self._pending):
            conn.drop()
        await self._inner.aclose()


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


async def start_listener(
    nursery: trio.Nursery,
    agent: AcpAgent,
    *,
    host: str,
    port: int,
    state: Path,
    allowed_origins: Sequence[str] = (),
    max_message: int = DEFAULT_MAX_MESSAGE,
    outbox: int = DEFAULT_OUTBOX,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    max_pending: int = DEFAULT_MAX_PENDING,
) -> dict[str, str]:
    """Serve `agent` in `nursery` with a new token; write the URL and the token to `state`
    (0600), removed when the nursery ends. Returns `{"acp_ws": url, "token": token}`."""
    token = new_token()
    bound_host, bound_port = await nursery.start(
        lambda task_status: serve(
            agent,
            host=host,
            port=port,
            token=token,
            allowed_origins=allowed_origins,
            max_message=max_message,
            outbox=outbox,
            handshake_timeout=handshake_timeout,
            max_pending=max_pending,
            task_status=task_status,
        )
    )
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    info = {"acp_ws": f"ws://{shown}:{bound_port}/acp", "token": token}
    write_state_file(state, info)
    nursery.start_soon(_remove_when_done, state)
    return info


async def _remove_when_done(state: Path) -> None:
    try:
        await trio.sleep_forever()
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(state)


async def serve(
    agent: AcpAgent,
    *,
    host: str,
    port: int,
    token: str,
    allowed_origins: Sequence[str] = (),
    max_message: int = DEFAULT_MAX_MESSAGE,
    outbox: int = DEFAULT_OUTBOX,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    max_pending: int = DEFAULT_MAX_PENDING,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; `task_status` gets the (host, port) it listens on."""
    server = WsServer(agent, host=host, token=token, allowed_origins=allowed_origins, outbox=outbox)
    listeners = [
        _GuardedListener(listener, max_pending)
        for listener in await trio.open_tcp_listeners(port, host=host)
    ]
    async with trio.open_nursery() as nursery:
        ws_server = WebSocketServer(
            server.handle,
            # trio-websocket serves any trio Listener (through `trio.serve_listeners`);
            # its annotation names only the two kinds `serve_websocket` builds.
            cast("list[trio.SocketListener]", listeners),
            handler_nursery=nursery,
            max_message_size=max_message,
            message_queue_size=4,
            connect_timeout=handshake_timeout,
            disconnect_timeout=handshake_timeout,
        )
        await nursery.start(ws_server.run)
        bound = listeners[0].socket.getsockname()[1]
        task_status.started((host, bound))
