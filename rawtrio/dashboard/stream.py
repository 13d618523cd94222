"""A session's events over Server-Sent Events (docs/dashboard-api.md, "The event stream").

One stream follows one session for one page, through whatever happens to the session:

- while the session is live in this runtime, the stream is a *watcher* of its
  `LiveSession` (rawtrio.acp.live), exactly like an attached terminal chat: it is sent
  the stored events after `Last-Event-ID` first, then the live ones — no gap, no
  duplicate — and it answers permission requests (`approves`), so a request waits for
  the page instead of timing out when no editor is attached. The watcher's peer is a
  JSON-RPC `Peer` whose transport writes SSE messages, so the agent's bounded queue
  applies: a page that stops reading is cut off, and the stream then picks up again from
  the store where the page is (I8: the session never waits for a page);
- while it is not live (stored only, or closed because no front end was left), the
  stream sends what the store has after the last event sent, then looks every
  `_POLL_S` for the session to become live again (a prompt from this page, an editor
  or a terminal attached to the same host), and says so with a `state` message; every
  `_STORE_EVERY` polls it also asks the store for events it missed (a session live for
  less than a poll);
- a deleted session ends the stream with a `deleted` message.

`: ping` comments go out every `heartbeat_s` when nothing else did. The stream ends when
the page goes away (`http.disconnect`), when the server stops, or when the session is
deleted.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Final

import trio

from rawtrio.acp.jsonrpc import Peer, Ready, RequestId, RpcError
from rawtrio.errors import UnknownSession
from rawtrio.events import event_to_json
from rawtrio.unicode_safety import has_lone_surrogate, replace_lone_surrogates

if TYPE_CHECKING:
    from rawtrio.acp.live import LiveSession
    from rawtrio.dashboard.backend import Backend
    from rawtrio.dashboard.security import Receive, Send

log = logging.getLogger(__name__)

#: How often a stream of a session that is not live looks whether it became live.
_POLL_S: Final = 0.2
#: Every how many polls it also asks the store whether events were added meanwhile.
_STORE_EVERY: Final = 5
#: SSE messages waiting to be written to the page before the watcher's queue is used.
_BUFFER: Final = 64
#: A watcher's queue: events the page may be behind by before it is cut off.
OUTBOX: Final = 4096


def sse(event: str, data: Any, event_id: int | None = None) -> bytes:
    """One SSE message; `data` is JSON on one line (JSON text never holds a newline)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if not body.isascii() and has_lone_surrogate(body):
        body = replace_lone_surrogates(body)
    return f"{head}event: {event}\ndata: {body}\n\n".encode()


PING: Final = b": ping\n\n"


class NoRequests:
    """The watcher peer's dispatcher: a page sends nothing on its stream."""

    async def handle_request(self, peer: Peer, method: str, params: Any, ready: Ready) -> Any:
        raise RpcError(-32601, "the event stream takes no requests")

    async def handle_notification(self, peer: Peer, method: str, params: Any) -> None:
        return None

    def cancel_request(self, peer: Peer, method: str, request_id: RequestId) -> bool:
        return False


class SseTransport:
    """The watcher peer's transport: each `_rawtrio/event` notification becomes one SSE
    message on `out`; `aclose` ends `out` (the stream then resyncs or ends)."""

    def __init__(self, out: trio.MemorySendChannel[tuple[int, bytes]]) -> None:
        self._out = out
        self._closed = trio.Event()

    async def receive(self) -> str | None:
        await self._closed.wait()
        return None

    async def send(self, text: str) -> None:
        message = json.loads(text)
        event = message.get("params", {}).get("event")
        if message.get("method") != "_rawtrio/event" or not isinstance(event, dict):
            return  # nothing else is meant for a page
        try:
            await self._out.send((event["seq"], sse(event["type"], event, event["seq"])))
        except (trio.ClosedResourceError, trio.BrokenResourceError) as exc:
            raise trio.BrokenResourceError("the event stream ended") from exc

    async def aclose(self) -> None:
        self._closed.set()
        self._out.close()


class EventStream:
    """One page's stream of one session."""

    def __init__(self, backend: Backend, session_id: str, after: int, send: Send) -> None:
        self.backend = backend
        self.session_id = session_id
        self.last = after
        self._send = send
        self._state: tuple[bool, str | None] | None = None

    async def run(self, receive: Receive) -> None:
        """Serve until the page leaves, the session is deleted or the server stops."""
        self.backend.streams += 1
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._until_disconnect, receive, nursery.cancel_scope)
                await self._follow()
                nursery.cancel_scope.cancel(reason="event stream ended")
        finally:
            self.backend.streams -= 1

    async def _until_disconnect(self, receive: Receive, scope: trio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel(reason="the page went away")

    async def write(self, data: bytes) -> None:
        await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def _say_state(self, live: LiveSession | None) -> None:
        state = (live is not None, live.session.running_turn if live is not None else None)
        if state != self._state:
            if self._state is not None:
                await self.write(sse("state", {"live": state[0], "running": state[1]}))
            self._state = state

    async def _follow(self) -> None:
        while True:
            live = self.backend.live(self.session_id)
            await self._say_state(live)
            if live is not None:
                await self._watch(live)
                continue
            try:
                stored = await self.backend.runtime.session_events(self.session_id, self.last)
            except UnknownSession:
                await self.write(sse("deleted", {"session_id": self.session_id}))
                return
            for event in stored:
                if event.seq > self.last:
                    await self.write(sse(event.type, event_to_json(event), event.seq))
                    self.last = event.seq
            await self._wait_live()

    async def _wait_live(self) -> None:
        """Until the session is live here, the store has events the page has not seen
        (the session was live for less than a poll, say), or it is gone; pinging
        meanwhile."""
        polls = 0
        quiet = 0.0
        while self.backend.live(self.session_id) is None:
            await trio.sleep(_POLL_S)
            polls += 1
            quiet += _POLL_S
            if quiet >= self.backend.heartbeat_s:
                await self.write(PING)
                quiet = 0.0
            if polls % _STORE_EVERY == 0:
                try:
                    if await self.backend.runtime.last_seq(self.session_id) > self.last:
                        return
                except UnknownSession:
                    return

    async def _watch(self, live: LiveSession) -> None:
        """Follow the live session as a watcher until it closes or the page falls behind."""
        out, frames = trio.open_memory_channel[tuple[int, bytes]](_BUFFER)
        peer = Peer(SseTransport(out), NoRequests(), name="dashboard stream", outbox=OUTBOX)
        key = id(peer)
        self.backend.stream_peers.add(key)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(peer.run, name="dashboard stream peer")
                nursery.start_soon(_close_when, live.pump_done, peer)
                await live.watch(peer, self.last, approves=True)
                await self._relay(frames)
                nursery.cancel_scope.cancel(reason="watch ended")
        finally:
            live.detach(peer)
            self.backend.stream_peers.discard(key)
            peer.close("event stream ended")

    async def _relay(self, frames: trio.MemoryReceiveChannel[tuple[int, bytes]]) -> None:
        while True:
            with trio.move_on_after(self.backend.heartbeat_s) as idle:
                try:
                    seq, frame = await frames.receive()
                except trio.EndOfChannel:
                    return  # cut off (it resyncs) or the session closed
            if idle.cancelled_caught:
                await self.write(PING)
                continue
            if seq > self.last:
                await self.write(frame)
                self.last = seq


async def _close_when(done: trio.Event, peer: Peer) -> None:
    await done.wait()
    peer.close("the session closed")
