"""A watcher that joins with `since` (the dashboard's event stream, an attached chat's
`_rawtrio/session/start`) gets the stored events and the live ones in `seq` order, with
no gap — also when live events arrive while the stored ones are still being read.

Regression: the stored events were put behind the live ones that arrived during the
read, and then dropped as older than what was already sent (a gap in the stream)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import trio
import trio.testing

from rawtrio import events as ev
from rawtrio.acp.jsonrpc import Peer
from rawtrio.acp.live import LiveSession
from rawtrio.dashboard.stream import NoRequests, SseTransport
from rawtrio.runtime.subscribers import SubscriberHub


class SlowStoreSession:
    """What `LiveSession` uses of a session, with a store read the test holds open."""

    def __init__(self, stored: list[ev.Event]) -> None:
        self.id = "s1"
        self.cwd = Path("/")
        self.record = SimpleNamespace(title="")
        self.closed = False
        self.running_turn = None
        self.recorder = SimpleNamespace(seq=len(stored))
        self.hub = SubscriberHub()
        self.stored = stored
        self.reading = trio.Event()
        self.release = trio.Event()

    def subscribe(self) -> Any:
        return self.hub.subscribe()

    async def events_since(self, seq: int) -> list[ev.Event]:
        self.reading.set()
        await self.release.wait()
        return [e for e in self.stored if e.seq > seq]


def notice(seq: int) -> ev.Event:
    return ev.Notice(session_id="s1", seq=seq, level="info", text=f"event {seq}")


async def test_live_events_during_the_replay_come_after_the_stored_ones() -> None:
    session = SlowStoreSession([notice(1), notice(2)])
    live = LiveSession(cast("Any", session), permission_timeout_s=60)
    out, frames = trio.open_memory_channel[tuple[int, bytes]](100)
    peer = Peer(SseTransport(out), NoRequests(), name="test")
    async with trio.open_nursery() as nursery:
        await nursery.start(live.run)
        nursery.start_soon(peer.run)
        nursery.start_soon(live.watch, peer, 0)
        await session.reading.wait()
        session.stored.append(notice(3))  # recorded while the read was under way ...
        session.hub.publish(notice(3))  # ... and published live
        session.hub.publish(notice(4))
        await trio.testing.wait_all_tasks_blocked()
        session.release.set()
        await trio.testing.wait_all_tasks_blocked()
        seqs = []
        while True:
            try:
                seqs.append(frames.receive_nowait()[0])
            except trio.WouldBlock:
                break
        assert seqs == [1, 2, 3, 4]
        nursery.cancel_scope.cancel(reason="done")
