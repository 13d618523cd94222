"""ACP over stdio: newline-delimited JSON-RPC on stdin/stdout.

stdout carries protocol messages only: `rawtrio.acp.cli.protocol_stdout()` moves the real
stdout to a private descriptor and points descriptor 1 (and `sys.stdout`) at stderr, so a
stray `print` in any library, or a child process that inherits descriptor 1, can never
corrupt the stream (it lives there: the command decides whether it serves here or relays
to a host before trio is imported). Logs go to stderr.
"""

from __future__ import annotations

import os
from typing import Final

import trio

from rawtrio.acp.jsonrpc import FrameTooLarge

#: The largest frame (one line) accepted, in bytes.
DEFAULT_MAX_FRAME: Final = 8 * 1024 * 1024
_READ: Final = 65536


class LineTransport:
    """One JSON-RPC message per line over a pair of byte streams."""

    def __init__(
        self,
        receive: trio.abc.ReceiveStream,
        send: trio.abc.SendStream,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self._receive = receive
        self._send = send
        self._max = max_frame
        self._buf = bytearray()
        self._skipping = False  # inside an oversized line: drop until its newline
        self._eof = False

    async def receive(self) -> str | None:
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                if self._skipping:
                    self._skipping = False
                    continue
                if len(line) > self._max:
                    raise FrameTooLarge(len(line), self._max)
                if not line.strip():
                    continue
                return line.decode("utf-8", errors="replace")
            if len(self._buf) > self._max:
                size = len(self._buf)
                self._buf.clear()
                if not self._skipping:
                    self._skipping = True
                    raise FrameTooLarge(size, self._max)
            if self._eof:
                if self._buf.strip() and not self._skipping:
                    line = bytes(self._buf)
                    self._buf.clear()
                    return line.decode("utf-8", errors="replace")
                return None
            data = await self._receive.receive_some(_READ)
            if not data:
                self._eof = True
            self._buf += data

    async def send(self, text: str) -> None:
        await self._send.send_all(text.encode() + b"\n")

    async def aclose(self) -> None:
        await self._send.aclose()
        await self._receive.aclose()


def stdio_transport(out_fd: int, *, max_frame: int = DEFAULT_MAX_FRAME) -> LineTransport:
    return LineTransport(
        trio.lowlevel.FdStream(os.dup(0)), trio.lowlevel.FdStream(out_fd), max_frame=max_frame
    )
