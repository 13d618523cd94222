"""`rawtrio acp` attached to a host: a relay between the editor's stdio and the host's socket
(docs/acp.md, "Attached to a host").

Every JSON-RPC frame passes unchanged both ways — the editor's requests and the host's
answers and updates, the host's `fs/*`, `terminal/*` and `session/request_permission`
requests and the editor's answers — except one thing added: on `session/new`,
`session/load` and `session/resume` the relay puts this process's context into the
params as `_meta.rawtrio = {"env": <its environment>, "flags": <its session flags>}`, so
the host resolves that session as if it ran here (the configuration, AGENTS.md and keys
of this environment and the editor's `cwd`; tools run with this environment).

It is a single-threaded loop over non-blocking descriptors (`selectors`, poll: stdin may
be a file or /dev/null): no trio, no runtime, no pydantic, no provider SDK is imported.
The host → editor direction is not even split into messages to be forwarded: bytes go
out as they come, and lines are only looked at (parsed when a `session/prompt` of this
editor waits, to know which prompts are still pending). Each direction buffers at most
`HIGH_WATER` bytes before the relay stops reading the side that feeds it, so a reader
that stalls stalls its writer, as a pipe would: a host cut off for not reading is the
host's `--max-queued` rule, as for the local agent.

Frames: a line from the editor over `--max-message` is dropped (up to its newline) and
answered by the relay as the local agent answers it (-32600, `id: null`, "message too
large: N bytes (the limit is L)"); the connection goes on. The relay's own answers are
written to the editor only between two of the host's lines.

Ends: stdin closes → what is buffered for the host is written, the socket half-closed,
the host's last answers (it writes what it had queued and closes) forwarded within
`CLOSE_S`, exit 0; the host's sessions and turns go on (as for a dropped WebSocket
connection). The host goes away → one line on stderr (the editor's log), exit 1.
SIGINT/SIGTERM → as the local `rawtrio acp` closes its sessions with their running turns
cancelled: `session/cancel` for each session where a prompt of this editor is pending,
then the socket is closed, exit 0; a second signal leaves at once.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import socket
import time
from typing import Any, Final

from rawtrio.cli.attaching import drain, wake_on_signals
from rawtrio.cli.signals import SignalLatch
from rawtrio.contracts import ExitCode

log = logging.getLogger("rawtrio.acp")

#: The requests that open a session: they carry this process's context to the host.
OPENING: Final = frozenset({"session/new", "session/load", "session/resume"})
#: Bytes buffered for one side before the side that feeds it is no longer read.
HIGH_WATER: Final = 4 * 1024 * 1024
#: After stdin closed or a signal: how long the last writes (and the host's last answers)
#: may take.
CLOSE_S: Final = 5.0
#: Host lines longer than this are never a prompt's answer (they are not parsed).
_ANSWER_LINE: Final = 64 * 1024
_READ: Final = 256 * 1024
_INVALID_REQUEST: Final = -32600


class Relay:
    """One editor (stdin, the protocol descriptor) relayed to one host connection."""

    def __init__(
        self,
        sock: socket.socket,
        *,
        stdin_fd: int,
        out_fd: int,
        context: dict[str, Any],
        max_frame: int,
        latch: SignalLatch,
        host: str,
    ) -> None:
        self._sock = sock
        self._in_fd = stdin_fd
        self._out_fd = out_fd
        self._context = context
        self._max = max_frame
        self._latch = latch
        self._host = host
        self._to_host = bytearray()
        self._to_editor = bytearray()
        self._editor_line = bytearray()  # the editor's incomplete line
        self._skipping = False  # inside an editor line over the limit: drop to its newline
        self._host_line = bytearray()  # the host's incomplete line (up to _ANSWER_LINE)
        self._host_long = False  # the host's current line is over _ANSWER_LINE
        self._host_mid = False  # what went to the editor ends inside one of the host's lines
        self._own: list[bytes] = []  # the relay's own lines, for the next line boundary
        #: Pending `session/prompt` requests of this editor: JSON id → session id.
        self.prompts: dict[str, str] = {}

    # --- the editor's side ------------------------------------------------------------

    def from_editor(self, chunk: bytes) -> None:
        """Take bytes from stdin: complete lines go to the host (b"" is the end)."""
        buf = self._editor_line
        buf += chunk
        while (nl := buf.find(b"\n")) >= 0:
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            if self._skipping:
                self._skipping = False
            elif len(line) > self._max:
                self._too_large(len(line))
            else:
                self._editor_message(line)
        if len(buf) > self._max:
            size = len(buf)
            buf.clear()
            if not self._skipping:
                self._skipping = True
                self._too_large(size)
        if not chunk:  # the end: a last line without its newline is still a message
            if not self._skipping:
                self._editor_message(bytes(buf))
            buf.clear()

    def _too_large(self, size: int) -> None:
        message = f"message too large: {size} bytes (the limit is {self._max})"
        error = {"code": _INVALID_REQUEST, "message": message}
        self._say({"jsonrpc": "2.0", "id": None, "error": error})

    def _editor_message(self, line: bytes) -> None:
        if not line.strip():
            return
        if b'"session/' in line:  # the only methods the relay looks at
            message = _parse(line)
            if isinstance(message, dict):
                line = self._look_at(message) or line
        self._to_host += line
        self._to_host += b"\n"

    def _look_at(self, message: dict[str, Any]) -> bytes | None:
        """The line to send instead of the editor's, or None (the editor's as it is)."""
        method, rid, params = message.get("method"), message.get("id"), message.get("params")
        if rid is None or not isinstance(params, dict):
            return None
        if method == "session/prompt":
            sid = params.get("sessionId")
            if isinstance(sid, str):
                self.prompts[_key(rid)] = sid
            return None
        if method not in OPENING:
            return None
        meta = params.get("_meta", {})
        if not isinstance(meta, dict):
            return None  # the host refuses the params as they are
        params["_meta"] = {**meta, "rawtrio": self._context}
        return _dump(message)

    # --- the host's side --------------------------------------------------------------

    def from_host(self, chunk: bytes) -> None:
        """Take bytes from the socket: they go to the editor as they are."""
        self._to_editor += chunk
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            if not self._host_long:
                self._host_line += chunk[start:nl]
                self._host_answer(bytes(self._host_line))
            self._host_line.clear()
            self._host_long = False
            start = nl + 1
        rest = chunk[start:]
        if rest and not self._host_long:
            self._host_line += rest
            if len(self._host_line) > _ANSWER_LINE:
                self._host_long = True
                self._host_line.clear()
        if chunk:
            self._host_mid = bool(rest)
        self._flush_own()

    def _host_answer(self, line: bytes) -> None:
        """Forget a pending prompt when this line is its answer."""
        if not self.prompts or len(line) > _ANSWER_LINE:
            return
        message = _parse(line)
        if isinstance(message, dict) and "method" not in message and "id" in message:
            self.prompts.pop(_key(message["id"]), None)

    def _say(self, message: dict[str, Any]) -> None:
        self._own.append(_dump(message) + b"\n")
        self._flush_own()

    def _flush_own(self) -> None:
        if self._own and not self._host_mid:
            for line in self._own:
                self._to_editor += line
            self._own.clear()

    # --- the loop ---------------------------------------------------------------------

    def run(self) -> int:
        self._sock.setblocking(False)
        was_blocking = os.get_blocking(self._out_fd)
        os.set_blocking(self._out_fd, False)
        try:
            with wake_on_signals() as wake_fd, selectors.PollSelector() as selector:
                return self._loop(selector, wake_fd)
        finally:
            self._sock.close()
            os.set_blocking(self._out_fd, was_blocking)

    def _loop(self, selector: selectors.BaseSelector, wake_fd: int) -> int:
        selector.register(wake_fd, selectors.EVENT_READ)
        wanted: dict[int, int] = {}
        stdin_open, deadline = True, None
        while True:
            if self._latch.received:
                return self._stop(selector, wake_fd, wanted)
            if deadline is not None and time.monotonic() >= deadline:
                return ExitCode.COMPLETED  # the host's last answers took too long
            if not stdin_open and not self._to_host and deadline is None:
                self._sock.shutdown(socket.SHUT_WR)  # the host answers what it has, closes
                deadline = time.monotonic() + CLOSE_S
            want = {
                self._in_fd: selectors.EVENT_READ
                if stdin_open and len(self._to_host) < HIGH_WATER
                else 0,
                self._sock.fileno(): (
                    selectors.EVENT_READ if len(self._to_editor) < HIGH_WATER else 0
                )
                | (selectors.EVENT_WRITE if self._to_host else 0),
                self._out_fd: selectors.EVENT_WRITE if self._to_editor else 0,
            }
            _watch(selector, wanted, want)
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = selector.select(timeout)
            for key, events in ready:
                fd = key.fd
                if fd == wake_fd:
                    drain(wake_fd)
                elif fd == self._in_fd:
                    chunk = _read_fd(self._in_fd)
                    self.from_editor(chunk)
                    stdin_open = bool(chunk)
                elif fd == self._out_fd:
                    if not self._write_editor():
                        return ExitCode.COMPLETED  # the editor closed our stdout
                else:
                    if events & selectors.EVENT_WRITE and not self._write_host():
                        return self._host_gone(stdin_open)
                    if events & selectors.EVENT_READ:
                        got = _recv(self._sock)
                        if got == b"":
                            return self._host_gone(stdin_open)
                        if got is not None:
                            self.from_host(got)

    def _write_editor(self) -> bool:
        try:
            n = os.write(self._out_fd, self._to_editor)
        except BlockingIOError:
            return True
        except OSError:  # EPIPE: nobody reads the protocol any more
            return False
        del self._to_editor[:n]
        return True

    def _write_host(self) -> bool:
        try:
            n = self._sock.send(self._to_host)
        except BlockingIOError:
            return True
        except OSError:
            return False
        del self._to_host[:n]
        return True

    def _host_gone(self, stdin_open: bool) -> int:
        """The host closed the connection: forward what it sent, then say so (or, after
        stdin closed, just leave: that close was the answer to ours)."""
        self._flush_editor(time.monotonic() + CLOSE_S)
        if not stdin_open:
            return ExitCode.COMPLETED
        log.error("the %s went away", self._host)
        return ExitCode.ERROR

    def _flush_editor(self, deadline: float) -> None:
        with selectors.PollSelector() as selector:
            selector.register(self._out_fd, selectors.EVENT_WRITE)
            while self._to_editor and (left := deadline - time.monotonic()) > 0:
                if selector.select(left) and not self._write_editor():
                    return

    def _stop(self, selector: selectors.BaseSelector, wake_fd: int, wanted: dict[int, int]) -> int:
        """A signal: cancel the turns of this editor's pending prompts, as the local agent
        does, and leave; a second signal leaves at once."""
        seen = len(self._latch.received)
        for sid in dict.fromkeys(self.prompts.values()):
            reason = f"received {self._latch.received[0].name}"
            log.warning("%s: cancelling the turn of session %s", reason, sid)
            cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
            self._to_host += _dump(cancel) + b"\n"
        _watch(selector, wanted, {self._sock.fileno(): selectors.EVENT_WRITE})
        deadline = time.monotonic() + CLOSE_S
        while self._to_host and len(self._latch.received) == seen:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for key, _ in selector.select(left):
                if key.fd == wake_fd:
                    drain(wake_fd)
                elif not self._write_host():
                    return ExitCode.COMPLETED
        return ExitCode.COMPLETED


def _watch(selector: selectors.BaseSelector, wanted: dict[int, int], want: dict[int, int]) -> None:
    """Make the selector watch each descriptor for `want[fd]` events (0: not at all)."""
    for fd, events in want.items():
        if wanted.get(fd, 0) == events:
            continue
        if not events:
            selector.unregister(fd)
        elif wanted.get(fd):
            selector.modify(fd, events)
        else:
            selector.register(fd, events)
        wanted[fd] = events


def _read_fd(fd: int) -> bytes:
    try:
        return os.read(fd, _READ)
    except OSError:  # EIO and the like: the editor's end is gone
        return b""


def _recv(sock: socket.socket) -> bytes | None:
    """What the socket has (b"": the end), or None when nothing after all."""
    try:
        return sock.recv(_READ)
    except BlockingIOError:
        return None
    except OSError:  # ECONNRESET: the host is gone
        return b""


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:  # not JSON (or not UTF-8): passed on as it is, the host answers
        return None


def _dump(message: Any) -> bytes:
    # ensure_ascii: a lone surrogate the editor escaped crosses as the same escape.
    return json.dumps(message, separators=(",", ":")).encode("ascii")


def _key(rid: Any) -> str:
    return json.dumps(rid, sort_keys=True)
