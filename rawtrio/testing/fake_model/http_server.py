"""A small HTTP/1.1 server on h11 and trio: keep-alive, chunked streaming, disconnect watch.

One task serves one connection, one request at a time. While a handler runs, a watcher task
reads the socket: a closed socket means the client went away (it cancelled its stream), so
the watcher marks the response as disconnected and cancels the handler. Bytes that arrive
instead (a pipelined request) are kept for the next cycle.

Exception policy: nothing a handler raises (except `trio.Cancelled`) may escape into
`trio.serve_tcp`, since that would end the whole server. A handler's unexpected exception
becomes a 500 if no response has started, or an abrupt close if one has.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import h11
import trio

MAX_BODY_BYTES = 32 * 1024 * 1024
_READ_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class HTTPRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class ClientGone(Exception):
    """The client closed the connection while we were answering."""


Handler = Callable[[HTTPRequest, "ResponseWriter"], Awaitable[None]]


class ResponseWriter:
    """Writes one response: either `send_json` or `start_stream`/`send_chunk`/`end`/`abort`."""

    def __init__(self, conn: h11.Connection, stream: trio.SocketStream) -> None:
        self._conn = conn
        self._stream = stream
        self.started = False
        self.aborted = False
        self.client_gone = False
        self.finished = False
        #: Called once when the client is seen to go away.
        self.on_disconnect: Callable[[], None] | None = None

    async def send_json(
        self, status: int, body: object, headers: list[tuple[str, str]] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        hdrs = [("content-type", "application/json"), ("content-length", str(len(data)))]
        await self._send(h11.Response(status_code=status, headers=hdrs + list(headers or [])))
        await self._send(h11.Data(data=data))
        await self._send(h11.EndOfMessage())
        self.finished = True

    async def start_stream(self, status: int = 200) -> None:
        # No content-length: h11 frames the body with chunked transfer encoding.
        hdrs = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]
        await self._send(h11.Response(status_code=status, headers=hdrs))

    async def send_chunk(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))

    async def end(self) -> None:
        await self._send(h11.EndOfMessage())
        self.finished = True

    async def abort(self) -> None:
        """Close the connection at once, leaving the body unfinished."""
        self.aborted = True
        await trio.aclose_forcefully(self._stream)

    def mark_gone(self) -> None:
        if not self.client_gone and not self.finished and not self.aborted:
            self.client_gone = True
            if self.on_disconnect is not None:
                self.on_disconnect()

    async def _send(self, event: h11.Event) -> None:
        if isinstance(event, h11.Response):
            self.started = True
        data = self._conn.send(event)
        if not data:
            return
        try:
            await self._stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.mark_gone()
            raise ClientGone from None


async def serve_connection(stream: trio.SocketStream, handler: Handler) -> None:
    """Serve requests on one connection until either side closes it."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
    async with stream:
        while True:
            try:
                request = await _read_request(conn, stream)
            except (h11.RemoteProtocolError, _BodyTooLarge) as exc:
                await _refuse(conn, stream, str(exc) or "bad request")
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if request is None:
                return
            writer = ResponseWriter(conn, stream)
            await _run_handler(handler, request, writer, conn, stream)
            if writer.aborted or writer.client_gone:
                return
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()


class _BodyTooLarge(Exception):
    pass


async def _read_request(conn: h11.Connection, stream: trio.SocketStream) -> HTTPRequest | None:
    head: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(_READ_SIZE)
            conn.receive_data(data)
            continue
        if isinstance(event, h11.ConnectionClosed):
            return None
        if isinstance(event, h11.Request):
            head = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_BODY_BYTES:
                raise _BodyTooLarge("request body too large")
        elif isinstance(event, h11.EndOfMessage):
            assert head is not None
            headers = {k.decode().lower(): v.decode("latin-1") for k, v in head.headers}
            path = head.target.decode("latin-1").split("?", 1)[0]
            return HTTPRequest(head.method.decode(), path, headers, bytes(body))


async def _refuse(conn: h11.Connection, stream: trio.SocketStream, reason: str) -> None:
    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return
    data = json.dumps({"error": {"message": reason, "type": "invalid_request_error"}}).encode()
    headers = [
        ("content-type", "application/json"),
        ("content-length", str(len(data))),
        ("connection", "close"),
    ]
    try:
        await stream.send_all(conn.send(h11.Response(status_code=400, headers=headers)) or b"")
        await stream.send_all(conn.send(h11.Data(data=data)) or b"")
        await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.LocalProtocolError):
        pass


async def _run_handler(
    handler: Handler,
    request: HTTPRequest,
    writer: ResponseWriter,
    conn: h11.Connection,
    stream: trio.SocketStream,
) -> None:
    async with trio.open_nursery() as nursery:
        handler_scope = trio.CancelScope()
        nursery.start_soon(_watch_for_disconnect, conn, stream, writer, handler_scope)
        with handler_scope:
            try:
                await handler(request, writer)
            except ClientGone:
                pass
            except Exception as exc:
                await _fail(writer, exc)
        nursery.cancel_scope.cancel(reason="response finished")


async def _fail(writer: ResponseWriter, exc: Exception) -> None:
    if writer.aborted or writer.client_gone:
        return
    if writer.started:
        await writer.abort()
        return
    body = {"error": {"message": f"fake-model bug: {exc!r}", "type": "server_error"}}
    with contextlib.suppress(ClientGone):
        await writer.send_json(500, body)


async def _watch_for_disconnect(
    conn: h11.Connection,
    stream: trio.SocketStream,
    writer: ResponseWriter,
    handler_scope: trio.CancelScope,
) -> None:
    while True:
        try:
            data = await stream.receive_some(_READ_SIZE)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            if not (writer.aborted or writer.finished):
                writer.mark_gone()
                handler_scope.cancel(reason="client disconnected")
            return
        # A pipelined request: h11 keeps it until the next cycle.
        conn.receive_data(data)
