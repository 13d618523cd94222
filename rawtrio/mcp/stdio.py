"""The stdio transport: an MCP server as a child process in its own process group.

rawtrio runs its own transport instead of `mcp.client.stdio.stdio_client` because it must
bound what a misbehaving server can do to it, and stop the server on its own terms:

- **stdout** is split into lines of at most `max_message_bytes`; a line that is not a
  JSON-RPC message (a banner, a stray `print`) goes to the server's capped `ServerLog`
  instead of the session, and an endless line without a newline is skipped, not buffered.
- **stderr** is read all along into the same capped log, so a flood neither blocks the
  server on a full pipe nor grows memory.
- **stopping** follows the MCP lifecycle, with the session's grace period: close stdin,
  wait up to `grace_s` for the server to exit, then the process group's one stop
  (`rawtrio.processes`: SIGTERM, `grace_s`, SIGKILL, reap with trio's own
  `Process.wait`). Descendants that escaped the group carry the transport's `RAWTRIO_CALL`
  marker and are ended too. It runs shielded, bounded by `CLEANUP_DEADLINE_S`, whenever
  the transport's block is left — normally, by an error or by a cancellation.

The streams handed to `mcp.ClientSession` are anyio memory streams (the SDK runs on anyio,
which runs on trio here). When the server exits, its stream is closed, so every request in
flight fails with the SDK's "connection closed" error instead of waiting.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import anyio
import mcp_types as types
import trio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.mcp.log import LineSplitter, ServerLog
from rawtrio.processes import ProcessGroup, ProcessSpec, open_process_group, signal_name

_READ_SIZE: Final = 65536
#: How long to wait for stdout's end of file once the server process exited.
_EOF_AFTER_EXIT_S: Final = 0.2
#: Messages to the server that may wait while one is being written.
_WRITE_BUFFER: Final = 32
#: Lines on stderr longer than this are cut in the log.
_STDERR_LINE_BYTES: Final = 4096


@dataclass(frozen=True, slots=True)
class StdioSpec:
    #: The server (its `grace_s` is the session's grace period); `stdin` and `stderr` pipes.
    process: ProcessSpec
    max_message_bytes: int


class StdioTransport:
    """The running server process, as the connection sees it."""

    def __init__(self, group: ProcessGroup, spec: StdioSpec, log: ServerLog) -> None:
        self.group = group
        self.proc = group.proc
        self.spec = spec
        self.log = log
        #: Set once the server exited and its stream was closed.
        self.closed = trio.Event()
        self._eof = trio.Event()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    @property
    def stopped_with(self) -> str | None:
        """What stopping took: "exited" (on stdin close, nothing signalled), "SIGTERM"
        (the group or a descendant that left it), "SIGKILL", or None before the stop."""
        if not self.group.stop_attempted:
            return None
        if self.group.killed:
            return "SIGKILL"
        return "SIGTERM" if self.group.sigterm_sent else "exited"

    def exit_text(self) -> str:
        code = self.proc.returncode
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by {signal_name(-code)}"
        return f"exit code {code}"

    async def read_stdout(self, out: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        assert self.proc.stdout is not None
        splitter = LineSplitter(self.spec.max_message_bytes)
        try:
            while True:
                data = await self.proc.stdout.receive_some(_READ_SIZE)
                if not data:
                    break
                for line, oversized, size in splitter.feed(data):
                    if oversized:
                        self.log.add(
                            "stdout",
                            f"skipped a line of {size} bytes (over {self.spec.max_message_bytes}"
                            f" bytes): {line.decode('utf-8', 'replace')}",
                        )
                        continue
                    if not line.strip():
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError:
                        self.log.add("stdout", line.decode("utf-8", "replace"))
                        continue
                    await out.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the session or our shutdown closed a stream
        except OSError as exc:
            self.log.add("rawtrio", f"reading stdout failed: {exc}")
        finally:
            self._eof.set()

    async def read_stderr(self) -> None:
        assert self.proc.stderr is not None
        splitter = LineSplitter(_STDERR_LINE_BYTES, keep=self.log.max_line_chars)
        with contextlib.suppress(trio.ClosedResourceError, OSError):
            while True:
                data = await self.proc.stderr.receive_some(_READ_SIZE)
                if not data:
                    return
                for line, oversized, size in splitter.feed(data):
                    text = line.decode("utf-8", "replace")
                    self.log.add("stderr", f"{text} [line of {size} bytes]" if oversized else text)

    async def write_stdin(self, messages: MemoryObjectReceiveStream[SessionMessage]) -> None:
        assert self.proc.stdin is not None
        try:
            async with messages:
                async for message in messages:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await self.proc.stdin.send_all((text + "\n").encode("utf-8"))
        except (trio.ClosedResourceError, trio.BrokenResourceError, OSError) as exc:
            if not self.closed.is_set():
                self.log.add("rawtrio", f"writing to the server failed: {exc!r}")

    async def watch_exit(self, out: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        """Once the process exited (and its stdout drained), end the session's stream."""
        await self.proc.wait()
        with trio.move_on_after(_EOF_AFTER_EXIT_S):
            await self._eof.wait()
        await out.aclose()
        self.closed.set()

    async def stop(self) -> None:
        """Close stdin, grace, then the group's stop (shielded, bounded)."""
        await self.group.stop(ask_first_s=self.spec.process.grace_s)


@asynccontextmanager
async def open_stdio_transport(
    spec: StdioSpec, log: ServerLog
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
        StdioTransport,
    ]
]:
    """Start the server; yield (read stream, write stream, transport). OSError when the
    program cannot be started."""
    async with open_process_group(spec.process) as group:
        transport = StdioTransport(group, spec, log)
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        # A small buffer towards the server: a `notifications/cancelled` sent when a turn is
        # cancelled is accepted at once even while a large request is still being written
        # to a server that reads slowly (the SDK would otherwise wait up to 5 s for the
        # write).
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](_WRITE_BUFFER)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(transport.read_stdout, read_send)
                nursery.start_soon(transport.read_stderr)
                nursery.start_soon(transport.write_stdin, write_recv)
                nursery.start_soon(transport.watch_exit, read_send)
                try:
                    yield read_recv, write_send, transport
                finally:
                    await transport.stop()
                    nursery.cancel_scope.cancel(reason="MCP server stopped")
        finally:
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                for stream in (read_send, read_recv, write_send, write_recv):
                    await stream.aclose()
