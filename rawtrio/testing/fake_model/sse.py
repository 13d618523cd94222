"""Server-sent events: encoding, and sending a scripted event list with its faults.

The faults a reply can ask for are applied here, counted in events (the first event is
number 0): `cut_after=N` closes the connection after N events without finishing the
chunked body, `malformed_after=N` slips a line that is not the protocol in after N events,
`stall_after=N` sends N events and then nothing until the client goes away.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import trio

from rawtrio.testing.fake_model.http_server import ResponseWriter
from rawtrio.testing.fake_model.scenario import Reply

#: What a malformed event carries: JSON cut in the middle, which no SDK can parse.
MALFORMED_DATA = '{"fake-model": "malformed'

Outcome = Literal["completed", "cut", "stalled"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str | None = None

    def encode(self) -> bytes:
        lines = [] if self.event is None else [f"event: {self.event}"]
        lines.extend(f"data: {line}" for line in self.data.split("\n"))
        return ("\n".join(lines) + "\n\n").encode()


async def send_events(
    writer: ResponseWriter,
    events: list[SSEEvent],
    reply: Reply,
    on_event: Callable[[], None] | None = None,
) -> Outcome:
    """Send `events` as a 200 event stream, applying the reply's delay and faults.

    Raises `ClientGone` when the client disconnects; a stall returns only that way (or when
    the surrounding scope is cancelled).
    """
    await writer.start_stream()
    for i, event in enumerate(events):
        if reply.cut_after is not None and i >= reply.cut_after:
            await writer.abort()
            return "cut"
        if reply.stall_after is not None and i >= reply.stall_after:
            await trio.sleep_forever()
        if reply.malformed_after is not None and i == reply.malformed_after:
            await writer.send_chunk(SSEEvent(MALFORMED_DATA, event.event).encode())
            if on_event is not None:
                on_event()
        if i and reply.delay_ms:
            await trio.sleep(reply.delay_ms / 1000)
        await writer.send_chunk(event.encode())
        if on_event is not None:
            on_event()
    if reply.cut_after is not None and reply.cut_after >= len(events):
        # Everything was sent but the body is never finished.
        await writer.abort()
        return "cut"
    if reply.stall_after is not None and reply.stall_after >= len(events):
        await trio.sleep_forever()
    await writer.end()
    return "completed"


def split(text: str, size: int) -> list[str]:
    """`text` in pieces of `size` characters (no pieces for empty text)."""
    return [text[i : i + size] for i in range(0, len(text), size)]
