"""Fan-out of session events to subscribers, never blocking the publisher (I8).

Each subscriber has a bounded buffer. Publishing is synchronous and non-blocking: when a
subscriber's buffer is full, that subscriber is cut off (`lagged` set, its channel
closed); it resyncs from the store with `events_since(last_seq)` and subscribes again.
A slow, stuck or crashed renderer therefore costs the turn nothing, and costs other
subscribers nothing either.
"""

from __future__ import annotations

from types import TracebackType

import trio

from rawtrio.events import Event

DEFAULT_BUFFER = 10_000


class Subscription:
    """An async iterator of events; use as a context manager so it unsubscribes."""

    def __init__(self, hub: SubscriberHub, buffer: int) -> None:
        self._hub = hub
        self._send, self._receive = trio.open_memory_channel[Event](buffer)
        #: True when the subscriber fell behind and was cut off; resync from the store.
        self.lagged = False
        #: The sequence number of the last event received.
        self.last_seq = 0

    def _offer(self, event: Event) -> None:
        try:
            self._send.send_nowait(event)
        except trio.WouldBlock:
            self.lagged = True
            self._send.close()
            self._hub._drop(self)
        except trio.ClosedResourceError:
            self._hub._drop(self)

    def close(self) -> None:
        self._send.close()
        self._hub._drop(self)

    async def receive(self) -> Event:
        """The next event; raises `trio.EndOfChannel` when closed or cut off."""
        event = await self._receive.receive()
        self.last_seq = event.seq
        return event

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    def __enter__(self) -> Subscription:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        self._receive.close()


class SubscriberHub:
    def __init__(self) -> None:
        self._subs: list[Subscription] = []

    def subscribe(self, buffer: int = DEFAULT_BUFFER) -> Subscription:
        sub = Subscription(self, buffer)
        self._subs.append(sub)
        return sub

    def publish(self, event: Event) -> None:
        for sub in list(self._subs):
            sub._offer(event)

    def close_all(self) -> None:
        for sub in list(self._subs):
            sub.close()

    def _drop(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def __len__(self) -> int:
        return len(self._subs)
