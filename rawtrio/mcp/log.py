"""A server's capped log: what it wrote on stderr, and stdout lines that were not protocol.

An MCP server may print a banner on stdout, log megabytes to stderr or write one endless
line without a newline. None of it may grow rawtrio's memory: the log keeps the last
`max_lines` lines, each cut to `max_line_chars`, and counts what it dropped. `rawtrio mcp
test` and crash reports show its tail.
"""

from __future__ import annotations

from collections import deque
from typing import Final

DEFAULT_MAX_LINES: Final = 200
DEFAULT_MAX_LINE_CHARS: Final = 500


class ServerLog:
    def __init__(
        self, max_lines: int = DEFAULT_MAX_LINES, max_line_chars: int = DEFAULT_MAX_LINE_CHARS
    ) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self.max_line_chars = max_line_chars
        #: Lines that fell off the front of the log.
        self.dropped_lines = 0
        #: Bytes received in total (kept or not).
        self.total_bytes = 0

    def add(self, source: str, text: str) -> None:
        """One line (`source` is `stderr`, `stdout` or `rawtrio`)."""
        text = text.rstrip("\r\n")
        if len(text) > self.max_line_chars:
            text = f"{text[: self.max_line_chars]}… [{len(text) - self.max_line_chars} more chars]"
        if len(self._lines) == self._lines.maxlen:
            self.dropped_lines += 1
        self._lines.append(f"[{source}] {text}")

    def lines(self) -> list[str]:
        return list(self._lines)

    def tail(self, n: int = 10) -> str:
        """The last `n` lines, one per line ('' when the log is empty)."""
        return "\n".join(list(self._lines)[-n:])

    def buffered_chars(self) -> int:
        """Characters held right now (for tests of the memory bound)."""
        return sum(len(line) for line in self._lines)


class LineSplitter:
    """Splits a byte stream into lines with a bound on the memory a line may take.

    A line longer than `max_bytes` is not kept whole: once it ends it is reported as
    `(first keep bytes, oversized=True, its total length)`; the rest was skipped.
    """

    def __init__(self, max_bytes: int, keep: int = DEFAULT_MAX_LINE_CHARS) -> None:
        self.max_bytes = max_bytes
        self.keep = keep
        self._buf = bytearray()
        #: The kept head of an oversized line, and its length so far (None: not oversized).
        self._head = b""
        self._skipped: int | None = None

    def feed(self, data: bytes | bytearray) -> list[tuple[bytes, bool, int]]:
        """Complete lines in `data`: (line, oversized, total length), without newlines."""
        out: list[tuple[bytes, bool, int]] = []
        start = 0
        while start < len(data):
            nl = data.find(b"\n", start)
            piece = bytes(data[start : len(data) if nl < 0 else nl])
            if self._skipped is not None:
                self._skipped += len(piece)
            else:
                self._buf += piece
                if len(self._buf) > self.max_bytes:
                    self._head = bytes(self._buf[: self.keep])
                    self._skipped = len(self._buf)
                    self._buf = bytearray()
            if nl < 0:
                break
            if self._skipped is not None:
                out.append((self._head, True, self._skipped))
                self._head, self._skipped = b"", None
            else:
                out.append((bytes(self._buf), False, len(self._buf)))
                self._buf = bytearray()
            start = nl + 1
        return out

    @property
    def buffered_bytes(self) -> int:
        return len(self._buf) + len(self._head)
