"""`rawtrio acp [--ws [--host H] [--port N]]`: serve the Agent Client Protocol.

On stdio (the default) the editor starts rawtrio and talks on its stdin/stdout; the
process ends when stdin closes. With `--ws` rawtrio serves many connections on
`ws://127.0.0.1:PORT/acp` until SIGINT/SIGTERM; at start it prints one JSON line on
stderr, `{"acp_ws": URL, "token": TOKEN}`, and writes the same to `acp-ws.json` (mode
0600) in the state directory.

Each session's options come from the configuration like any front end's, with the
client's `cwd` as the working directory (`session_options`). SIGINT/SIGTERM close every
session (running turns are cancelled and recorded) and exit 0.

On stdio, when a host runs for this state directory (`rawtrio serve`), the process is a
relay to it instead (`rawtrio.acp.relay`), decided as `rawtrio -p` decides
(`rawtrio.cli.attaching`: `--attach`/`--no-attach`, `[host] attach/autostart`, the version
check) before trio or the runtime is imported; `--ws` always serves here.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rawtrio.acp.flags import add_listener_flags, check_listener_flags
from rawtrio.cli.flags import add_session_flags
from rawtrio.cli.signals import SignalLatch, stopped_by_signal
from rawtrio.contracts import ExitCode

if TYPE_CHECKING:
    from rawtrio.app import App
    from rawtrio.host.client import HostConnection, HostInfo

log = logging.getLogger("rawtrio.acp")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rawtrio acp",
        description="Serve the Agent Client Protocol (ACP v1) for editors, on stdio or a "
        "local WebSocket.",
    )
    p.add_argument("--ws", action="store_true", help="serve on a local WebSocket, not stdio")
    add_listener_flags(p)
    p.add_argument("--log-file", metavar="PATH", help="write logs here instead of stderr")
    attach = p.add_mutually_exclusive_group()
    attach.add_argument(
        "--attach",
        action="store_true",
        help="stdio: relay to the host of this state directory, starting one if none runs "
        "(config host.attach, host.autostart; docs/acp.md)",
    )
    attach.add_argument(
        "--no-attach",
        action="store_true",
        help="stdio: serve in this process even when a host runs",
    )
    add_session_flags(p)
    return p


def main(argv: list[str], latch: SignalLatch | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_listener_flags(parser, args)
    if args.ws and args.attach:
        parser.error("--attach: rawtrio acp --ws is a listener itself and serves here")
    if args.log_file:  # else the log stays on stderr (the entry point put it there)
        from rawtrio.logs import log_to_file

        log_to_file(Path(args.log_file))
    latch = latch or SignalLatch()
    out_fd = None
    if not args.ws:
        out_fd = protocol_stdout()
        found = _find_host(args)
        if found is not None:
            return _relay(args, out_fd, latch, *found)
    import trio

    from rawtrio.errors import RawtrioError, exit_code_for

    try:
        return trio.run(run, args, out_fd, latch)
    except RawtrioError as exc:  # the store could not be opened, …
        print(f"rawtrio: {exc}", file=sys.stderr)
        return exit_code_for(exc)


def protocol_stdout() -> int:
    """A private descriptor for the protocol; descriptor 1 now goes to stderr (a stray
    `print`, or a child that inherits descriptor 1, can never corrupt the stream)."""
    fd = os.dup(1)
    os.set_inheritable(fd, False)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


def _find_host(args: argparse.Namespace) -> tuple[HostConnection, HostInfo] | None:
    """The host to relay to, decided as `rawtrio -p` decides; None: serve here (having
    said why in the log, when a host runs that cannot be used)."""
    from rawtrio.cli.attaching import attach_mode, find_host

    attach, autostart = attach_mode(args)
    if not attach:
        return None
    return find_host(args, autostart=autostart, say=log.warning)


def _relay(
    args: argparse.Namespace,
    out_fd: int,
    latch: SignalLatch,
    conn: HostConnection,
    info: HostInfo,
) -> int:
    """Relay the editor to the host (`rawtrio.acp.relay`), its sessions resolved with this
    process's environment and session flags."""
    from rawtrio.acp.relay import Relay
    from rawtrio.cli.attaching import client_env, session_flags

    host = f"host (pid {info.pid})" if info.pid else "host"
    sock, rest = conn.release()
    if latch.received:  # before the editor's first message crossed: nothing to cancel
        sock.close()
        return ExitCode.COMPLETED
    log.warning("attached to the %s: sessions run there", host)
    relay = Relay(
        sock,
        stdin_fd=0,
        out_fd=out_fd,
        context={"env": client_env(), "flags": session_flags(args)},
        max_frame=args.max_message,
        latch=latch,
        host=host,
    )
    relay.from_host(rest)
    return relay.run()


def session_options(app: App, env: Mapping[str, str] | None = None) -> Any:
    """The options factory: configuration for the client's `cwd` (and its MCP servers),
    resolved against `env` (this process's environment when None)."""
    from rawtrio.acp.mcp import mcp_servers_from_acp

    async def options_for(cwd: Path, servers: list[Any]) -> Any:
        setup = await app.options_for(cwd=cwd, env=env)
        for notice in setup.notices:
            log.warning("%s", notice)
        return mcp_servers_from_acp(setup.options, servers)

    return options_for


async def run(args: argparse.Namespace, out_fd: int | None, latch: SignalLatch) -> int:
    import trio

    from rawtrio.acp.agent import open_acp_agent, serve_peer
    from rawtrio.acp.editor_files import EditorRouter
    from rawtrio.acp.jsonrpc import Peer
    from rawtrio.app import open_app
    from rawtrio.store.paths import state_dir

    router = EditorRouter()
    async with (
        open_app(args, configure=False, registry_factory=router.registry) as app,
        open_acp_agent(
            app.runtime, session_options(app), permission_timeout_s=args.permission_timeout
        ) as agent,
        stopped_by_signal(latch, _log_signal) as nursery,
    ):
        router.agent = agent
        if out_fd is None:
            from rawtrio.acp import ws

            info = await ws.start_listener(
                nursery,
                agent,
                host=args.host,
                port=args.port,
                state=state_dir() / ws.STATE_FILE,
                allowed_origins=args.allow_origin,
                max_message=args.max_message,
                outbox=args.max_queued,
                handshake_timeout=args.handshake_timeout,
                max_pending=args.max_pending_handshakes,
            )
            print(json.dumps(info), file=sys.stderr, flush=True)
            await trio.sleep_forever()
        else:
            from rawtrio.acp.stdio import stdio_transport

            conn = agent.connection("stdio")
            peer = Peer(stdio_transport(out_fd, max_frame=args.max_message), conn, name="stdio")
            await serve_peer(agent, peer, conn)
            nursery.cancel_scope.cancel(reason="stdin closed")
    return ExitCode.COMPLETED


def _log_signal(sig: signal.Signals) -> None:
    log.warning("received %s: closing every session", sig.name)
