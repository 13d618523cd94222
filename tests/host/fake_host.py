"""A scripted host for testing the attach client: a real Unix socket on a thread of the
test, speaking JSON-RPC lines; the test plays the host's side message by message."""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rawtrio import __version__
from rawtrio import events as ev
from rawtrio.host.paths import PROTOCOL

LIVENESS_S = 60.0


class Peer:
    """One accepted connection: read the client's messages, send the host's."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._file = conn.makefile("rb")
        self.closed = False

    def read(self) -> dict[str, Any] | None:
        """The client's next message (None when it closed the connection)."""
        self._conn.settimeout(LIVENESS_S)
        line = self._file.readline()
        if not line:
            return None
        message: dict[str, Any] = json.loads(line)
        return message

    def expect(self, method: str) -> dict[str, Any]:
        message = self.read()
        assert message is not None, f"the client closed the connection instead of {method}"
        assert message.get("method") == method, message
        return message

    def send(self, message: dict[str, Any]) -> None:
        self._conn.sendall(json.dumps(message).encode() + b"\n")

    def answer(self, request: dict[str, Any], result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def fail(self, request: dict[str, Any], code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    def event(self, event: ev.Event) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "method": "_rawtrio/event",
                "params": {"sessionId": event.session_id, "event": ev.event_to_json(event)},
            }
        )

    def handshake(
        self, *, version: str = __version__, protocol: int = PROTOCOL, pid: int = 4242
    ) -> dict[str, Any]:
        init = self.expect("initialize")
        self.answer(
            init,
            {
                "protocolVersion": 1,
                "agentInfo": {"name": "rawtrio", "version": version},
                "agentCapabilities": {},
                "_meta": {"rawtrio": {"version": version, "protocol": protocol, "pid": pid}},
            },
        )
        return init

    def start_turn(self, session_id: str = "s1", turn_id: str = "t1") -> dict[str, Any]:
        """Answer the handshake, the session's start and the submit; the start's params."""
        self.handshake()
        start = self.expect("_rawtrio/session/start")
        self.answer(
            start, {"sessionId": session_id, "agent": "default", "model": "m", "notices": []}
        )
        submit = self.expect("_rawtrio/session/submit")
        assert submit["params"]["sessionId"] == session_id
        self.answer(submit, {"turnId": turn_id})
        params: dict[str, Any] = start["params"]
        return params

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._file.close()
            self._conn.close()


class FakeHost:
    def __init__(self, listener: socket.socket) -> None:
        self._listener = listener
        self._peers: queue.Queue[Peer] = queue.Queue()
        self._all: list[Peer] = []

    def accept(self) -> Peer:
        """The next connection (liveness-bounded)."""
        try:
            return self._peers.get(timeout=LIVENESS_S)
        except queue.Empty:
            raise AssertionError(f"no client connected within {LIVENESS_S} s") from None

    def connected(self) -> bool:
        return not self._peers.empty()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            peer = Peer(conn)
            self._all.append(peer)
            self._peers.put(peer)


@contextmanager
def fake_host(path: Path) -> Iterator[FakeHost]:
    """A socket listening at `path` (as a host's would); each connection goes to the test."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    host = FakeHost(listener)
    thread = threading.Thread(target=host._serve, name="fake host", daemon=True)
    thread.start()
    try:
        yield host
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(LIVENESS_S)
        for peer in host._all:
            peer.close()
        path.unlink(missing_ok=True)
