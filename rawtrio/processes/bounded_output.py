"""Keep the head and tail of a byte stream of any length in bounded memory.

A command can print 100 MB; the model gets at most `cap` bytes of it: the first half and
the last half, with the middle elided and counted. The head is written once; the tail is
a sliding window trimmed in amortised O(1) (it may hold up to twice its share before a
trim), so memory stays at about 1.5 × `cap` whatever the stream's length.
"""

from __future__ import annotations

import codecs


class BoundedOutput:
    """Collects bytes; `text()` renders head + elision marker + tail as text."""

    def __init__(self, cap: int) -> None:
        if cap < 2:
            raise ValueError("output cap must be at least 2 bytes")
        self.cap = cap
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        #: Bytes received in total, kept or not.
        self.total_bytes = 0

    @property
    def elided_bytes(self) -> int:
        return self.total_bytes - len(self._head) - min(len(self._tail), self._tail_cap)

    @property
    def buffered_bytes(self) -> int:
        """Bytes held in memory right now (for tests of the memory bound)."""
        return len(self._head) + len(self._tail)

    def feed(self, data: bytes | bytearray) -> None:
        self.total_bytes += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) >= self._tail_cap:
            self._tail = bytearray(data[-self._tail_cap :])
            return
        self._tail += data
        if len(self._tail) > 2 * self._tail_cap:
            del self._tail[: len(self._tail) - self._tail_cap]

    def text(self) -> str:
        """UTF-8 text (undecodable bytes replaced) with the elided middle marked."""
        tail = bytes(self._tail[-self._tail_cap :]) if self._tail else b""
        elided = self.elided_bytes
        if elided == 0:
            return (bytes(self._head) + tail).decode("utf-8", errors="replace")
        # Cut points may fall inside a multi-byte character: drop the partial sequence at
        # the end of the head and the stray continuation bytes at the start of the tail.
        head_text = codecs.getincrementaldecoder("utf-8")("replace").decode(
            bytes(self._head), final=False
        )
        skip = 0
        while skip < min(3, len(tail)) and 0x80 <= tail[skip] <= 0xBF:
            skip += 1
        tail_text = tail[skip:].decode("utf-8", errors="replace")
        return f"{head_text}\n[... {elided} bytes of output elided ...]\n{tail_text}"
