"""`rawtrio acp --ws` under a flood of connections that never finish the handshake: a
closed peer frees its descriptor at once, idle handshakes are capped per listener, and a
real client is still served while the server runs with few descriptors.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
from collections.abc import Iterator

import psutil
import pytest
import trio
from trio_websocket import open_websocket_url

from tests.acp.conftest import LIVENESS_S, FakeModel, WsServer, acp_argv, acp_env
from tests.headless.support import Isolation, wait_until

MAX_PENDING = 32
#: Far beyond the liveness bound: nothing in these tests is released by a timeout.
WS_ARGS = ("--handshake-timeout", "600", "--max-pending-handshakes", str(MAX_PENDING))
#: Descriptors the server may open beyond those it holds, in the flood tests.
SPARE_FDS = {"beyond the cap": 128, "below the cap": 16}


def fds(server: WsServer) -> int:
    return int(psutil.Process(server.proc.pid).num_fds())


def peers_held(server: WsServer, ports: set[int]) -> int:
    """How many of the peers on `ports` the server holds a socket for (so a descriptor
    the server opens or closes for its own reasons never counts)."""
    held = psutil.Process(server.proc.pid).net_connections(kind="tcp")
    return sum(1 for c in held if c.raddr and c.raddr.port in ports)


@contextlib.contextmanager
def idle_connections(server: WsServer, n: int) -> Iterator[list[socket.socket]]:
    """`n` TCP connections that send nothing, closed on the way out."""
    conns: list[socket.socket] = []
    try:
        for _ in range(n):
            conns.append(socket.create_connection(("127.0.0.1", server.port), LIVENESS_S))
        yield conns
    finally:
        for c in conns:
            c.close()


def closed_by_server(conn: socket.socket) -> bool:
    conn.setblocking(False)
    try:
        return conn.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def a_client_is_served(server: WsServer) -> bool:
    async def initialize() -> bool:
        with trio.fail_after(LIVENESS_S):
            headers = [(b"authorization", f"Bearer {server.token}".encode())]
            async with open_websocket_url(server.url, extra_headers=headers) as ws:
                frame = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
                await ws.send_message(json.dumps({**frame, "params": {"protocolVersion": 1}}))
                answer = json.loads(await ws.get_message())
        return bool(answer["result"]["protocolVersion"] == 1)

    return trio.run(initialize)


def test_a_peer_that_closes_before_its_handshake_frees_its_descriptor(
    ws_server: WsServer,
) -> None:
    with idle_connections(ws_server, 20) as conns:
        ports = {c.getsockname()[1] for c in conns}
        wait_until(lambda: peers_held(ws_server, ports) == 20, "the server accepted them")
        conns[0].sendall(b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half a request
    # Closed by the peers; the handshake timeout is 600 s: only the peer's end frees them.
    wait_until(
        lambda: peers_held(ws_server, ports) == 0, "the closed peers' descriptors were released"
    )
    assert a_client_is_served(ws_server)


def test_the_oldest_idle_handshakes_are_closed_beyond_the_cap(ws_server: WsServer) -> None:
    with idle_connections(ws_server, MAX_PENDING + 10) as conns:
        wait_until(
            lambda: all(closed_by_server(c) for c in conns[:10]),
            "the 10 oldest connections were closed by the server",
        )
        assert peers_held(ws_server, {c.getsockname()[1] for c in conns}) <= MAX_PENDING
        assert a_client_is_served(ws_server)


@pytest.mark.parametrize("spare", SPARE_FDS.values(), ids=SPARE_FDS.keys())
def test_a_client_is_served_during_a_flood_that_exceeds_the_descriptor_limit(
    ws_server: WsServer, spare: int
) -> None:
    """With 16 spare descriptors the cap is never reached: `accept` runs out of
    descriptors (EMFILE) and the oldest idle connection makes room."""
    server = psutil.Process(ws_server.proc.pid)
    soft, hard = server.rlimit(psutil.RLIMIT_NOFILE)
    server.rlimit(psutil.RLIMIT_NOFILE, (fds(ws_server) + spare, hard))
    try:
        with idle_connections(ws_server, 300):
            assert a_client_is_served(ws_server)
            with idle_connections(ws_server, 300):  # and again, with the first 300 open
                assert a_client_is_served(ws_server)
        assert ws_server.proc.poll() is None
    finally:
        server.rlimit(psutil.RLIMIT_NOFILE, (soft, hard))


def test_a_connection_without_a_handshake_is_closed_after_the_timeout(
    fake_model: FakeModel, iso: Isolation
) -> None:
    proc = subprocess.Popen(
        acp_argv(fake_model, "--ws", "--handshake-timeout", "0.5"),
        env=acp_env(iso),
        cwd=iso.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = json.loads(proc.stderr.readline())["acp_ws"]
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), LIVENESS_S) as idle:
            wait_until(lambda: closed_by_server(idle), "the idle connection was closed")
    finally:
        proc.terminate()
        proc.wait(timeout=LIVENESS_S)
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == 0
