"""A blocking client of the host's socket: JSON-RPC 2.0, one JSON text per line
(docs/contracts.md, "The host and attaching").

For front ends that attach without starting trio or the runtime (`rawtrio -p`): it imports
only the standard library's `json`, `socket` and `selectors` and the host's path constants.
The caller owns the waiting: `request` blocks until the answer (keeping the notifications
that came first, in order), and a loop that must also wake for something else (a signal)
selects on `fileno()` itself, then calls `receive_available` and takes the buffered
messages with `next_message`.

A request the host sends (`session/request_permission`, say) is answered at once with an
error: this client takes no part in a turn beyond watching it, so nothing waits on it.
"""

from __future__ import annotations

import errno
import json
import selectors
import socket
import time
from collections import deque
from pathlib import Path
from typing import Any, Final, NamedTuple

from rawtrio.host.paths import PROTOCOL, socket_path_fits

#: JSON-RPC error codes of the attach protocol (docs/contracts.md).
RAWTRIO_ERROR: Final = -32000  # an error a local run would raise: data {kind, exit_code}
#: A turn runs in the session (`data.reason` `TURN_RUNNING`), or the session is not live in
#: the host (`NOT_LIVE`): one code, as ACP clients know it, two reasons.
TURN_IN_PROGRESS: Final = -32002
TURN_RUNNING: Final = "turn_running"
NOT_LIVE: Final = "not_live"
METHOD_NOT_FOUND: Final = -32601
#: The most one line from the host may hold (a big event: a long tool result).
MAX_LINE: Final = 64 * 1024 * 1024
_READ_SIZE: Final = 256 * 1024


class NoHost(Exception):
    """Nothing listens on the socket (`ENOENT`, `ECONNREFUSED`): no host runs."""


class HostGone(Exception):
    """The host closed the connection (or it broke) before the answer came."""


class ProtocolFault(Exception):
    """The host sent something that is not the protocol (not JSON, a line far too long)."""


class RemoteError(Exception):
    """The host answered a request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{method}: {message} ({code})")
        self.method = method
        self.code = code
        self.message = message
        self.data = data

    @property
    def exit_code(self) -> int | None:
        """The exit code a local run would have ended with, for an error it would raise."""
        if self.code != RAWTRIO_ERROR or not isinstance(self.data, dict):
            return None
        code = self.data.get("exit_code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None

    @property
    def not_live(self) -> bool:
        """The host said the session is not live in it (closed, or never opened there):
        nothing holds it on the host's behalf, unlike a turn running there."""
        reason = self.data.get("reason") if isinstance(self.data, dict) else None
        return self.code == TURN_IN_PROGRESS and reason == NOT_LIVE


class HostInfo(NamedTuple):
    """Who answered the handshake (`initialize`)."""

    pid: int | None
    version: str | None
    protocol: int | None

    def compatible(self, version: str) -> bool:
        return self.version == version and self.protocol == PROTOCOL


class HostConnection:
    """One connection to a host. Not thread-safe; used from one thread."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._messages: deque[dict[str, Any]] = deque()
        self._next_id = 1
        self._closed = False

    @classmethod
    def connect(cls, path: Path, timeout: float) -> HostConnection:
        """Connect to the socket at `path`; `NoHost` when no host listens there (none can
        at a path too long for a socket address: a host refuses to start with one)."""
        if not socket_path_fits(path):
            raise NoHost(f"{path}: longer than a socket address can be")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise NoHost(f"{path}: {exc.strerror}") from None
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
                raise NoHost(f"{path}: {exc.strerror}") from None
            raise
        sock.settimeout(None)
        return cls(sock)

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._sock.close()

    def release(self) -> tuple[socket.socket, bytes]:
        """Hand the socket over (to a relay, `rawtrio.acp.relay`) with what was read from
        it but not taken yet, as the host's lines; this object is done with it."""
        rest = b"".join(
            json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in self._messages
        )
        self._messages.clear()
        rest += bytes(self._buffer)
        self._buffer.clear()
        self._closed = True
        return self._sock, rest

    def __enter__(self) -> HostConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def initialize(self, client_version: str, timeout: float) -> HostInfo:
        """ACP's handshake; who the host is (`_meta.rawtrio`)."""
        result = self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {},
                "clientInfo": {"name": "rawtrio", "version": client_version},
                "_meta": {"rawtrio": {"version": client_version, "protocol": PROTOCOL}},
            },
            timeout=timeout,
        )
        meta = result.get("_meta") if isinstance(result, dict) else None
        ours = meta.get("rawtrio") if isinstance(meta, dict) else None
        ours = ours if isinstance(ours, dict) else {}
        agent = result.get("agentInfo") if isinstance(result, dict) else None
        version = ours.get("version")
        if version is None and isinstance(agent, dict):
            version = agent.get("version")
        pid, protocol = ours.get("pid"), ours.get("protocol")
        return HostInfo(
            pid=pid if isinstance(pid, int) else None,
            version=version if isinstance(version, str) else None,
            protocol=protocol if isinstance(protocol, int) else None,
        )

    def send(self, message: dict[str, Any]) -> None:
        """Write one message; `HostGone` when the connection is broken."""
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            self._sock.sendall(data.encode("utf-8", "surrogatepass"))
        except OSError as exc:  # EPIPE, ECONNRESET: the host went away
            raise HostGone(str(exc)) from None

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float | None = None) -> Any:
        """Send a request and wait for its answer (its `result`); messages that come
        first stay buffered for `next_message`. `RemoteError` for an error answer,
        `HostGone` when the connection ends first, `TimeoutError` after `timeout` s."""
        request_id = self._next_id
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = None if timeout is None else time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self._sock, selectors.EVENT_READ)
            while True:
                answer = self._take_answer(request_id)
                if answer is not None:
                    break
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not selector.select(left):
                    raise TimeoutError(f"{method}: no answer within {timeout} s")
                self.receive_available()
        error = answer.get("error")
        if error is not None:
            if not isinstance(error, dict):
                raise ProtocolFault(f"{method}: the error is not an object: {error!r}")
            code = error.get("code")
            raise RemoteError(
                method,
                code if isinstance(code, int) else 0,
                str(error.get("message", "")),
                error.get("data"),
            )
        return answer.get("result")

    def _take_answer(self, request_id: int) -> dict[str, Any] | None:
        for i, message in enumerate(self._messages):
            if message.get("id") == request_id and "method" not in message:
                del self._messages[i]
                return message
        return None

    def next_message(self) -> dict[str, Any] | None:
        """The next buffered notification, or None when none is buffered."""
        return self._messages.popleft() if self._messages else None

    def receive_available(self) -> None:
        """Read what the socket has (it must be readable: one `recv`, which blocks
        otherwise), buffer the complete messages and answer the host's requests.
        `HostGone` at the end of the stream."""
        try:
            chunk = self._sock.recv(_READ_SIZE)
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise HostGone(str(exc)) from None
        if not chunk:
            raise HostGone("the connection was closed")
        self._buffer += chunk
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if line.strip():
                self._accept(line)
        if len(self._buffer) > MAX_LINE:
            raise ProtocolFault(f"a message longer than {MAX_LINE} bytes")

    def _accept(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            raise ProtocolFault(f"not JSON: {exc}") from None
        if not isinstance(message, dict):
            raise ProtocolFault(f"not a JSON-RPC message: {line[:200]!r}")
        if "method" in message and message.get("id") is not None:
            # A request this client cannot serve: refuse it at once, so nothing waits.
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {
                        "code": METHOD_NOT_FOUND,
                        "message": f"{message['method']}: not handled by this client "
                        "(an attached rawtrio -p)",
                    },
                }
            )
            return
        self._messages.append(message)
