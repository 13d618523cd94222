"""JSON-RPC 2.0 on trio: one `Peer` per connection, whatever carries the frames.

ACP is JSON-RPC 2.0 in both directions: the client calls the agent's methods and the
agent calls the client's (`session/request_permission`, `fs/*`, `terminal/*`). The
Python ACP SDK's runtime is asyncio-only, so this layer is our own.

How a connection is served (`Peer.run`):

- One reader task takes frames in order. A malformed frame gets the JSON-RPC error it
  deserves (-32700 for invalid JSON, -32600 for a batch or a non-request, -32601 for an
  unknown method, -32602 for bad params) and the connection carries on. JSON escapes can
  spell text that is not Unicode (a lone surrogate, `"\\ud800"`): in an id or a method
  it is -32600, in params -32602, naming where it is; in a response it is replaced with
  U+FFFD.
- Each request runs in a task of its own, so a long `session/prompt` does not hold up a
  `session/cancel` behind it. The reader waits until the handler says it is *ready*
  (its synchronous part — validating, registering the prompt — is done), so the order in
  which the client sent messages is the order in which they take effect.
- Every request gets exactly one response: the handler's result, its `RpcError`, -32603
  for a bug (logged, the message names the exception), or -32800 when the client
  cancelled it with `$/cancel_request`.
- Every outgoing message is encodable: a lone surrogate that reached one (from a model's
  reply, say) is replaced with U+FFFD, so no text can break the writer.
- Outgoing messages go through a bounded queue drained by one writer task. Queueing
  never blocks: a client that stops reading until the queue is full is cut off (its
  transport closed), which ends this connection only (I8). Sessions live elsewhere.

Exception-group policy: handler tasks catch every `Exception`; the reader and writer end
the connection on transport errors instead of raising. `run` therefore only raises
`trio.Cancelled`, through `collapse_group`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import trio

from rawtrio.groups import collapse_group
from rawtrio.unicode_safety import (
    find_lone_surrogate,
    has_lone_surrogate,
    may_hold_lone_surrogate,
    replace_lone_surrogates,
    scrub_json,
)

log = logging.getLogger(__name__)

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
REQUEST_CANCELLED: Final = -32800
RESOURCE_NOT_FOUND: Final = -32002

#: Messages waiting to be written before a connection counts as not reading.
DEFAULT_OUTBOX: Final = 4096

RequestId = str | int


class RpcError(Exception):
    """A JSON-RPC error response: `code`, a message for people, optional `data`."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(f"{message} ({code})")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


class ConnectionLost(Exception):
    """The connection ended before the peer answered our request."""


class Transport(Protocol):
    """Carries one JSON-RPC message per frame (a line on stdio, a text frame on WS)."""

    async def receive(self) -> str | None:
        """The next frame; None when the connection ended."""

    async def send(self, text: str) -> None:
        """Write one frame; raises `trio.BrokenResourceError` when the peer is gone."""

    async def aclose(self) -> None: ...


class FrameTooLarge(Exception):
    """A transport read a frame over its limit; it was dropped, the connection goes on."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"message too large: {size} bytes (the limit is {limit})")


@dataclass
class Reply:
    """A handler's result plus work to do right after the response is queued
    (e.g. `available_commands_update` after the `session/new` response)."""

    result: Any
    after: Callable[[], None] | None = None


class Ready:
    """Handed to a request handler: call it once the request's synchronous part is done."""

    def __init__(self, task_status: trio.TaskStatus[None], request_id: RequestId) -> None:
        self._task_status = task_status
        #: The id of the request being served (for `$/cancel_request` bookkeeping).
        self.request_id = request_id
        self.called = False

    def __call__(self) -> None:
        if not self.called:
            self.called = True
            self._task_status.started()


class Dispatcher(Protocol):
    async def handle_request(self, peer: Peer, method: str, params: Any, ready: Ready) -> Any:
        """Answer one request: return the result (or a `Reply`), or raise `RpcError`."""

    async def handle_notification(self, peer: Peer, method: str, params: Any) -> None:
        """Act on a notification quickly (the reader waits for it); errors are logged."""

    def cancel_request(self, peer: Peer, method: str, request_id: RequestId) -> bool:
        """`$/cancel_request` for a request in flight: True when the dispatcher handled
        it itself (a prompt is cancelled through its turn), False to cancel the task."""


@dataclass
class _Outgoing:
    method: str
    done: trio.Event = field(default_factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


def _valid_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


class Peer:
    """One JSON-RPC connection: serves the dispatcher's methods and calls the other side."""

    def __init__(
        self,
        transport: Transport,
        dispatcher: Dispatcher,
        *,
        name: str = "peer",
        outbox: int = DEFAULT_OUTBOX,
    ) -> None:
        self.transport = transport
        self.name = name
        self._dispatcher = dispatcher
        self._send_q, self._recv_q = trio.open_memory_channel[str](outbox)
        self._incoming: dict[RequestId, tuple[trio.CancelScope, str]] = {}
        self._outgoing: dict[int, _Outgoing] = {}
        self._next_id = 0
        self._nursery: trio.Nursery | None = None
        self._writer_done = trio.Event()
        #: Set once the connection ended (the reader saw the end, or it was cut off).
        self.closed = trio.Event()
        #: Why the connection ended, for logs and tests.
        self.close_reason = ""

    # --- calling the other side -----------------------------------------------------

    def notify(self, method: str, params: Any) -> None:
        """Queue a notification; never blocks (a full queue cuts the connection off)."""
        self._queue({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        """Call a method of the other side; its result, or `RpcError` / `ConnectionLost`.

        Cancelling the caller sends `$/cancel_request` for it."""
        if self.closed.is_set():
            raise ConnectionLost(f"{self.name} is closed")
        self._next_id += 1
        rid = self._next_id
        pending = _Outgoing(method)
        self._outgoing[rid] = pending
        try:
            self._queue({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            await pending.done.wait()
        except trio.Cancelled:
            if not pending.done.is_set() and not self.closed.is_set():
                self.notify("$/cancel_request", {"requestId": rid})
            raise
        finally:
            self._outgoing.pop(rid, None)
        if pending.error is not None:
            raise pending.error
        return pending.result

    def close(self, reason: str) -> None:
        """End the connection (idempotent): handlers are cancelled, the transport closed."""
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.closed.set()
        for pending in self._outgoing.values():
            if not pending.done.is_set():
                pending.error = ConnectionLost(f"{self.name} closed: {reason}")
                pending.done.set()
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel(reason=f"connection closed: {reason}")

    # --- serving ---------------------------------------------------------------------

    async def run(self) -> None:
        """Serve until the transport ends or `close` is called; then write what is still
        queued (the last responses) and close the transport.

        The writer runs outside the scope that `close` cancels, so a message it has taken
        from the queue is never dropped half-way: once the reader and the handlers are
        done, the queue is closed and the writer drains it, within a shielded deadline."""
        try:
            with collapse_group():
                async with trio.open_nursery() as outer:
                    outer.start_soon(self._writer, name=f"{self.name} writer")
                    try:
                        async with trio.open_nursery() as nursery:
                            self._nursery = nursery
                            await self._reader(nursery)
                            self.close(self.close_reason or "the client closed the connection")
                    finally:
                        self._send_q.close()
                        with trio.move_on_after(2) as drain:
                            drain.shield = True
                            await self._writer_done.wait()
                        outer.cancel_scope.cancel(reason=f"{self.name}: connection ended")
        finally:
            self.close(self.close_reason or "connection ended")
            with trio.move_on_after(2) as cleanup:
                cleanup.shield = True
                await self.transport.aclose()

    async def _writer(self) -> None:
        try:
            async for text in self._recv_q:
                try:
                    await self.transport.send(text)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    self.close(f"write failed: {type(exc).__name__}")  # the peer is gone
                    return
                except Exception as exc:  # a bug: say so, then end this connection only
                    log.exception("%s: writing a message failed", self.name)
                    self.close(f"write failed: {type(exc).__name__}: {exc}")
                    return
        finally:
            self._writer_done.set()

    async def _reader(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                text = await self.transport.receive()
            except FrameTooLarge as exc:
                self._error(None, RpcError(INVALID_REQUEST, str(exc)))
                continue
            except Exception as exc:  # transport broke: same as the end
                self.close_reason = f"read failed: {type(exc).__name__}: {exc}"
                return
            if text is None:
                return
            await self._dispatch(text, nursery)

    async def _dispatch(self, text: str, nursery: trio.Nursery) -> None:
        try:
            msg = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            self._error(None, RpcError(PARSE_ERROR, f"parse error: {exc}"))
            return
        if isinstance(msg, list):
            self._error(None, RpcError(INVALID_REQUEST, "batches are not supported by ACP"))
            return
        if not isinstance(msg, dict):
            self._error(None, RpcError(INVALID_REQUEST, "a message must be a JSON object"))
            return
        mid = msg.get("id")
        has_id = "id" in msg
        if has_id and not _valid_id(mid):
            self._error(None, RpcError(INVALID_REQUEST, "id must be a string or an integer"))
            return
        if may_hold_lone_surrogate(text):
            checked = self._refuse_non_unicode(msg)
            if checked is None:
                return
            msg = checked
        if msg.get("jsonrpc") != "2.0":
            self._error(mid, RpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"'))
            return
        method = msg.get("method")
        if method is None and has_id and ("result" in msg or "error" in msg):
            self._response(mid, msg)
            return
        if not isinstance(method, str):
            self._error(mid, RpcError(INVALID_REQUEST, "method must be a string"))
            return
        params = msg.get("params")
        if params is not None and not isinstance(params, dict):
            err = RpcError(INVALID_PARAMS, "params must be an object")
            if has_id:
                self._error(mid, err)
            return
        if not has_id:
            await self._notification(method, params)
            return
        assert mid is not None
        if mid in self._incoming:
            self._error(mid, RpcError(INVALID_REQUEST, f"request id {mid!r} is already in use"))
            return
        await nursery.start(self._serve, mid, method, params, name=f"{self.name} {method}")

    def _refuse_non_unicode(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """Answer a request whose id, method or params hold a lone surrogate (None: done
        with it); otherwise the message, lone surrogates elsewhere (a response's result,
        members nobody reads) replaced with U+FFFD."""
        has_id = "id" in msg
        part, bad = "", None
        for part in ("id", "method", "params"):
            bad = find_lone_surrogate(msg.get(part), part)
            if bad is not None:
                break
        code = INVALID_PARAMS if part == "params" else INVALID_REQUEST
        if bad is None:
            return dict(scrub_json(msg))
        where, char = bad
        err = RpcError(code, f"{where} is not valid Unicode: it holds a lone surrogate ({char})")
        if code == INVALID_PARAMS:
            err = RpcError(code, f"invalid params: {err.message}")
        if has_id:
            self._error(None if part == "id" else msg.get("id"), err)
        else:  # a notification gets no answer: say what was dropped
            log.warning("%s: notification dropped: %s", self.name, err.message)
        return None

    async def _notification(self, method: str, params: Any) -> None:
        if method == "$/cancel_request":
            rid = (params or {}).get("requestId")
            entry = self._incoming.get(rid) if isinstance(rid, str | int) else None
            if entry is not None and isinstance(rid, str | int):
                scope, req_method = entry
                if not self._dispatcher.cancel_request(self, req_method, rid):
                    scope.cancel(reason="cancelled by $/cancel_request")
            return
        try:
            await self._dispatcher.handle_notification(self, method, params)
        except RpcError as exc:  # notifications get no response: log what was wrong
            log.warning("%s: notification %s rejected: %s", self.name, method, exc)
        except Exception:
            log.exception("%s: notification %s failed", self.name, method)

    async def _serve(
        self,
        rid: RequestId,
        method: str,
        params: Any,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        ready = Ready(task_status, rid)
        answered = False
        after: Callable[[], None] | None = None
        with trio.CancelScope() as scope:
            self._incoming[rid] = (scope, method)
            try:
                result = await self._dispatcher.handle_request(self, method, params or {}, ready)
                if isinstance(result, Reply):
                    result, after = result.result, result.after
                self._queue({"jsonrpc": "2.0", "id": rid, "result": result})
                answered = True
            except RpcError as exc:
                self._error(rid, exc)
                answered = True
            except Exception as exc:  # a bug (or a result that is not JSON): one error answer
                log.exception("%s: %s failed", self.name, method)
                self._error(rid, RpcError(INTERNAL_ERROR, f"internal error: {exc!r}"))
                answered = True
                after = None
            finally:
                self._incoming.pop(rid, None)
                ready()
        if not answered and scope.cancelled_caught and not self.closed.is_set():
            self._error(rid, RpcError(REQUEST_CANCELLED, "request cancelled"))
        if answered and after is not None:
            try:
                after()
            except Exception:  # the response is out: log, never answer twice
                log.exception("%s: after %s failed", self.name, method)

    def _response(self, rid: Any, msg: dict[str, Any]) -> None:
        pending = self._outgoing.get(rid) if isinstance(rid, int) else None
        if pending is None or pending.done.is_set():
            log.warning("%s: response to unknown request id %r ignored", self.name, rid)
            return
        if "error" in msg:
            err = msg["error"] if isinstance(msg["error"], dict) else {}
            code = err.get("code")
            pending.error = RpcError(
                code if isinstance(code, int) else INTERNAL_ERROR,
                str(err.get("message", "error")),
                err.get("data"),
            )
        else:
            pending.result = msg.get("result")
        pending.done.set()

    def _error(self, rid: Any, err: RpcError) -> None:
        self._queue({"jsonrpc": "2.0", "id": rid, "error": err.to_json()})

    def _queue(self, msg: dict[str, Any]) -> None:
        if self.closed.is_set():
            return
        text = json.dumps(msg, ensure_ascii=False, separators=(",", ":"))
        if not text.isascii() and has_lone_surrogate(text):
            log.warning("%s: replaced text that is not Unicode in an outgoing message", self.name)
            text = replace_lone_surrogates(text)
        try:
            self._send_q.send_nowait(text)
        except trio.WouldBlock:
            log.warning("%s: the client stopped reading; closing the connection", self.name)
            self.close("the client stopped reading (outgoing queue full)")
        except trio.ClosedResourceError:
            pass


def _reject_constant(name: str) -> float:
    """JSON has no NaN or Infinity; Python's parser accepts them unless told not to."""
    raise ValueError(f"{name} is not valid JSON")


__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "RESOURCE_NOT_FOUND",
    "ConnectionLost",
    "Dispatcher",
    "FrameTooLarge",
    "Peer",
    "Ready",
    "Reply",
    "RpcError",
    "Transport",
]
