"""The host itself (`rawtrio serve`): one runtime and one store for a user and a state
directory, served to front ends over a private Unix socket as ACP (docs/contracts.md, "The
host and attaching").

- `host.lock` (`flock`, non-blocking) is held for the host's whole life and holds its pid:
  a second host exits 2 naming the first (`HostRunning`).
- The socket's directory is made 0700, the socket bound and made 0600 before it listens
  (whatever the umask; the directory keeps everyone else out meanwhile). A socket file
  found there is stale — its host is dead, since we hold the lock — and is removed first.
- Every connection's peer is checked with `SO_PEERCRED`: another uid's is closed unanswered
  (and logged). Each connection is an ACP connection (one JSON text per line, the same
  frame bound as stdio) of one shared `AcpAgent`, which also serves the `_rawtrio/*`
  methods (`rawtrio.acp.extensions`) with this host as their `HostControl`.
- `host.json` (0600) is written once the socket listens and removed when the host exits,
  if it is still this host's.
- The host ends on SIGINT/SIGTERM, `_rawtrio/host/stop`, or after `idle_exit_s` with no
  connection and no running turn (0: never); every session then records its turn
  (cancelled) as the application closes.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import logging
import os
import signal
import socket as stdsocket
import stat
import struct
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from rawtrio import __version__
from rawtrio.acp.agent import AcpAgent, serve_peer
from rawtrio.acp.jsonrpc import DEFAULT_OUTBOX, Peer
from rawtrio.acp.stdio import DEFAULT_MAX_FRAME, LineTransport
from rawtrio.errors import ConfigError, RawtrioError
from rawtrio.host.paths import (
    MAX_SOCKET_PATH,
    PROTOCOL,
    HostPaths,
    Registration,
    lock_pid,
    read_registration,
    socket_path_fits,
)
from rawtrio.private_files import DIR_MODE, FILE_MODE, private_dir, private_file, write_private

if TYPE_CHECKING:
    from rawtrio.app import App
    from rawtrio.app.options import SessionSetup
    from rawtrio.cli.signals import SignalLatch
    from rawtrio.dashboard.backend import Backend

log = logging.getLogger("rawtrio.host")

_PEERCRED: Final = struct.Struct("3i")
#: How often the idle timer looks at the connections and turns, at most.
_IDLE_POLL_S: Final = 1.0
#: How long a stopping host lets its connections write what is queued for them.
CLOSE_CONNECTIONS_S: Final = 3.0


class HostRunning(RawtrioError):
    """Another host holds this state directory's lock."""

    def __init__(self, state: Path, pid: int | None) -> None:
        self.pid = pid
        who = f" (pid {pid})" if pid is not None else ""
        super().__init__(f"a host already runs for {state}{who}")


@dataclass(frozen=True)
class WsOptions:
    host: str
    port: int
    allowed_origins: tuple[str, ...]
    handshake_timeout: float
    max_pending: int


@dataclass(frozen=True)
class DashboardOptions:
    #: On 127.0.0.1; 0: a free port.
    port: int


@contextlib.contextmanager
def host_lock(paths: HostPaths) -> Iterator[None]:
    """Hold `host.lock` (with this pid in it) for the block; `HostRunning` if taken."""
    private_file(paths.lock)
    fd = os.open(paths.lock, os.O_RDWR | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HostRunning(paths.state, lock_pid(paths.lock)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def socket_dir(path: Path) -> None:
    """The socket's folder: ours, 0700 whatever the umask."""
    private_dir(path)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise RawtrioError(f"{path} is not a folder of this user: refusing to put the socket there")
    if stat.S_IMODE(st.st_mode) != DIR_MODE:
        os.chmod(path, DIR_MODE)


def bind_socket(path: Path) -> trio.socket.SocketType:
    """A listening Unix socket at `path`, 0600; a stale file there is removed first
    (the caller holds the host lock, so no live host owns it). ConfigError when `path` is
    too long for a socket address."""
    if not socket_path_fits(path):
        raise ConfigError(
            f"the host's socket path {path} is longer than the {MAX_SOCKET_PATH} bytes a "
            "socket address takes; set XDG_RUNTIME_DIR to a short private folder, or use a "
            "shorter RAWTRIO_STATE_DIR"
        )
    socket_dir(path.parent)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            log.info("removing the stale socket %s", path)
        path.unlink()
    sock = stdsocket.socket(stdsocket.AF_UNIX, stdsocket.SOCK_STREAM)
    try:
        sock.bind(os.fspath(path))
        os.chmod(path, FILE_MODE)  # the folder (0700) keeps others out until then
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return trio.socket.from_stdlib_socket(sock)


def peer_uid(sock: trio.socket.SocketType) -> int:
    """The uid of the process at the other end (`SO_PEERCRED`)."""
    raw = sock.getsockopt(stdsocket.SOL_SOCKET, stdsocket.SO_PEERCRED, _PEERCRED.size)
    _pid, uid, _gid = _PEERCRED.unpack(raw)
    return int(uid)


class Host:
    """The running host: the `HostControl` of the `_rawtrio/*` methods, the listener and
    the idle timer."""

    def __init__(
        self,
        app: App,
        agent: AcpAgent,
        paths: HostPaths,
        *,
        idle_exit_s: float,
        max_frame: int = DEFAULT_MAX_FRAME,
        outbox: int = DEFAULT_OUTBOX,
    ) -> None:
        self.app = app
        self.agent = agent
        self.paths = paths
        self.idle_exit_s = idle_exit_s
        self.max_frame = max_frame
        self.outbox = outbox
        self.started = time.time()
        self.ws: str | None = None
        #: The dashboard served from this host (`rawtrio serve --dashboard`), if any.
        self.dashboard: Backend | None = None
        self.dashboard_url: str | None = None
        self.connections = 0
        self._peers: set[Peer] = set()
        self._no_connection = trio.Event()
        self._served = 0
        self._stop = trio.Event()
        self.stop_reason = ""

    # --- HostControl -------------------------------------------------------------------

    def handshake(self) -> dict[str, Any]:
        return {"version": __version__, "protocol": PROTOCOL, "pid": os.getpid()}

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "protocol": PROTOCOL,
            "started": self.started,
            "socket": str(self.paths.socket),
            "ws": self.ws,
            "dashboard": self.dashboard_url,
            "clients": self.connections,
            "sessions": [
                {
                    "id": sid,
                    "running": live.session.running_turn,
                    "clients": len(live.attached) + len(live.watchers),
                }
                for sid, live in self.agent.sessions.items()
                if not live.session.closed
            ],
        }

    def stop(self, reason: str = "asked to stop (_rawtrio/host/stop)") -> None:
        if not self._stop.is_set():
            self.stop_reason = reason
            log.warning("stopping: %s", reason)
            self._stop.set()

    async def options(
        self,
        *,
        cwd: Path,
        env: Mapping[str, str],
        overrides: argparse.Namespace,
        headless: bool,
    ) -> SessionSetup:
        return await self.app.options_for(cwd=cwd, overrides=overrides, env=env, headless=headless)

    # --- serving -----------------------------------------------------------------------

    def registration(self) -> Registration:
        return Registration(
            pid=os.getpid(),
            version=__version__,
            protocol=PROTOCOL,
            socket=str(self.paths.socket),
            started=self.started,
            ws=self.ws,
        )

    async def wait_stopped(self) -> None:
        await self._stop.wait()

    async def accept_loop(self, sock: trio.socket.SocketType) -> None:
        listener = trio.SocketListener(sock)
        async with trio.open_nursery() as nursery:
            while True:
                stream = await listener.accept()
                nursery.start_soon(self._connection, stream)

    async def _connection(self, stream: trio.SocketStream) -> None:
        self._served += 1
        name = f"socket {self._served}"
        try:
            uid = peer_uid(stream.socket)
        except OSError as exc:
            log.warning("%s: no peer credentials (%s): closed", name, exc)
            await stream.aclose()
            return
        if self._stop.is_set():
            await stream.aclose()
            return
        if uid != os.getuid():
            log.warning(
                "%s: refused a connection from uid %d (this host is uid %d)", name, uid, os.getuid()
            )
            await stream.aclose()
            return
        self.connections += 1
        conn = self.agent.connection(name)
        # A peer of this uid on the private socket may send its own environment with a
        # session request (an attached `rawtrio acp`); one over WebSocket never can.
        conn.accepts_client_context = True
        transport = LineTransport(stream, stream, max_frame=self.max_frame)
        peer = Peer(transport, conn, name=name, outbox=self.outbox)
        self._peers.add(peer)
        try:
            await serve_peer(self.agent, peer, conn)
        except Exception:  # one connection's bug never takes the host down
            log.exception("%s: failed", name)
        finally:
            self._peers.discard(peer)
            self.connections -= 1
            if not self.connections:
                self._no_connection.set()
                self._no_connection = trio.Event()

    async def close_connections(self, reason: str) -> None:
        """End every connection after what is queued for it (the answer to
        `_rawtrio/host/stop`, say) was written; bounded."""
        for peer in list(self._peers):
            peer.close(reason)
        with trio.move_on_after(CLOSE_CONNECTIONS_S):
            while self.connections:
                await self._no_connection.wait()

    def idle(self) -> bool:
        """No connection, no dashboard request or page following a session, no running
        turn."""
        page = self.dashboard
        pages = page.streams + page.requests if page is not None else 0
        return (
            self.connections == 0
            and pages == 0
            and not any(live.session.running_turn for live in self.agent.sessions.values())
        )

    async def idle_timer(self) -> None:
        """Stop the host after `idle_exit_s` of being idle (0: never)."""
        if self.idle_exit_s <= 0:
            return
        idle_since: float | None = None
        while True:
            await trio.sleep(min(_IDLE_POLL_S, self.idle_exit_s / 4))
            if not self.idle():
                idle_since = None
                continue
            now = trio.current_time()
            idle_since = now if idle_since is None else idle_since
            if now - idle_since >= self.idle_exit_s:
                self.stop(f"idle for {self.idle_exit_s:g} s (host.idle_exit)")
                return


async def run_host(
    paths: HostPaths,
    latch: SignalLatch,
    *,
    idle_exit_s: float,
    ws: WsOptions | None = None,
    dashboard: DashboardOptions | None = None,
    permission_timeout_s: float = 300.0,
    max_frame: int = DEFAULT_MAX_FRAME,
    outbox: int = DEFAULT_OUTBOX,
) -> None:
    """Serve until stopped; the caller holds `host.lock`. The registration is written once
    the socket listens and removed on the way out (when it is still ours)."""
    from rawtrio.acp.agent import open_acp_agent
    from rawtrio.acp.cli import session_options
    from rawtrio.acp.editor_files import EditorRouter
    from rawtrio.acp.extensions import install
    from rawtrio.app import open_app
    from rawtrio.cli.signals import stopped_by_signal

    # The host's own environment resolves the sessions of plain ACP clients; the provider
    # SDKs must never read it for an attached client's session (its base URL, a token).
    host_env = scrub_sdk_environment()
    router = EditorRouter()
    sock = bind_socket(paths.socket)
    try:
        async with (
            open_app(
                argparse.Namespace(), configure=False, registry_factory=router.registry
            ) as app,
            open_acp_agent(
                app.runtime,
                session_options(app, host_env),
                permission_timeout_s=permission_timeout_s,
                close_unattended=True,
            ) as agent,
            stopped_by_signal(latch, _log_signal) as nursery,
        ):
            router.agent = agent
            host = Host(
                app, agent, paths, idle_exit_s=idle_exit_s, max_frame=max_frame, outbox=outbox
            )
            install(agent, host)
            nursery.start_soon(host.accept_loop, sock)
            if ws is not None:
                host.ws = await _serve_ws(nursery, agent, ws, outbox=outbox, max_frame=max_frame)
            if dashboard is not None:
                await _serve_dashboard(nursery, host, dashboard)
            write_private(paths.registration, json.dumps(host.registration().to_json()) + "\n")
            log.warning("listening on %s (pid %d)", paths.socket, os.getpid())
            nursery.start_soon(host.idle_timer)
            await host.wait_stopped()
            await host.close_connections(host.stop_reason)
            nursery.cancel_scope.cancel(reason=host.stop_reason)
    finally:
        sock.close()
        remove_files(paths)


def scrub_sdk_environment() -> dict[str, str]:
    """Remove from this process's environment every variable the provider SDKs read on
    their own (keys, tokens, base URLs); return the environment as it was. Each session's
    come explicitly from its own environment (`rawtrio.config.resolve.BASE_URL_ENV`)."""
    from rawtrio.config.resolve import SDK_ENV

    before = dict(os.environ)
    for name in SDK_ENV:
        os.environ.pop(name, None)
    return before


def remove_files(paths: HostPaths) -> None:
    """Remove the socket, and the registration when it is still this process's."""
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()
    reg = read_registration(paths.registration)
    if reg is not None and reg.pid == os.getpid():
        paths.registration.unlink(missing_ok=True)


async def _serve_ws(
    nursery: trio.Nursery, agent: AcpAgent, opts: WsOptions, *, outbox: int, max_frame: int
) -> str:
    """The ACP WebSocket listener on the same agent (as `rawtrio acp --ws`); its URL."""
    from rawtrio.acp import ws
    from rawtrio.store.paths import state_dir

    info = await ws.start_listener(
        nursery,
        agent,
        host=opts.host,
        port=opts.port,
        state=state_dir() / ws.STATE_FILE,
        allowed_origins=opts.allowed_origins,
        max_message=max_frame,
        outbox=outbox,
        handshake_timeout=opts.handshake_timeout,
        max_pending=opts.max_pending,
    )
    log.warning("%s", json.dumps(info))
    return info["acp_ws"]


async def _serve_dashboard(nursery: trio.Nursery, host: Host, opts: DashboardOptions) -> None:
    """The browser dashboard on the host's agent (docs/dashboard-api.md); its URL, with
    the token, printed once (and in `<state>/dashboard.json`)."""
    import sys

    from rawtrio.dashboard.server import serve_dashboard

    info = await serve_dashboard(
        nursery,
        host.agent,
        mode="host",
        default_cwd=Path.cwd(),
        port=opts.port,
        state_dir=host.paths.state,
    )
    host.dashboard = info.backend
    host.dashboard_url = info.url
    print(f"rawtrio dashboard: {info.open_url}", file=sys.stderr, flush=True)


def _log_signal(sig: signal.Signals) -> None:
    log.warning("received %s: closing every session", sig.name)
