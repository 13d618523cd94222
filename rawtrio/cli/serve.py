"""`rawtrio serve`: run the host that front ends attach to (docs/contracts.md, "The host and
attaching"; docs/acp.md, "The host").

- `rawtrio serve` runs it in the foreground until SIGINT/SIGTERM, `rawtrio serve --stop`,
  or `host.idle_exit` seconds (`--idle-exit`) with no connection and no running turn.
- `--detach` starts the same host as a background process (a new session, stdin
  `/dev/null`, stdout and stderr appended to `<state>/host.log`), waits until it answers
  `initialize` on its socket, prints its pid and socket, and exits 0 — or exits 1 with the
  log's last lines when it did not come up.
- `--status` prints the registration and the host's live status (`_rawtrio/host/status`)
  as JSON, exit 0; "no host running", exit 3.
- `--stop` asks the host to stop (`_rawtrio/host/stop`) and waits until its pid is gone;
  exit 0, or 3 when none runs.
- `--ws` also serves the ACP WebSocket listener (as `rawtrio acp --ws`) from the host.
- `--dashboard` also serves the browser dashboard (rawtrio.dashboard) on the host's agent,
  on 127.0.0.1 (`--dashboard-port`, default a free port); its URL with the token is
  printed once on stderr (with `--detach`: in `host.log`) and kept in
  `<state>/dashboard.json` (0600) while the host runs.

Exit codes: 0 done, 1 the host failed (or did not come up), 2 usage error or a host already
runs for this state directory, 3 no host running (`--status`, `--stop`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

from rawtrio import __version__
from rawtrio.acp.flags import add_listener_flags, check_listener_flags
from rawtrio.cli.signals import SignalLatch
from rawtrio.contracts import ExitCode
from rawtrio.host.client import (
    HostConnection,
    HostGone,
    HostInfo,
    NoHost,
    ProtocolFault,
    RemoteError,
)

NO_HOST: Final = 3
#: How long `--detach` waits for the new host to answer, and `--stop` for it to go.
START_DEADLINE_S: Final = 60.0
STOP_DEADLINE_S: Final = 60.0
_LOG_TAIL: Final = 20


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rawtrio serve",
        description="Run the host that front ends attach to: one runtime and one store for "
        "this user and state directory, on a private Unix socket (ACP).",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--detach", action="store_true", help="start the host in the background (log: host.log)"
    )
    what.add_argument("--status", action="store_true", help="show the running host")
    what.add_argument("--stop", action="store_true", help="stop the running host")
    p.add_argument(
        "--idle-exit",
        type=float,
        metavar="SECONDS",
        help="exit after this long with no client and no running turn (0: never; default "
        "host.idle_exit, 1800)",
    )
    p.add_argument("--ws", action="store_true", help="also serve ACP on a local WebSocket")
    p.add_argument(
        "--dashboard",
        action="store_true",
        help="also serve the browser dashboard on 127.0.0.1 (its URL is printed once)",
    )
    p.add_argument(
        "--dashboard-port",
        type=int,
        default=0,
        metavar="N",
        help="the dashboard's port (default: a free one)",
    )
    add_listener_flags(p)
    p.add_argument("--config", metavar="PATH", help="user config file to read [host] from")
    return p


def main(argv: list[str], latch: SignalLatch | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.idle_exit is not None and not 0 <= args.idle_exit < math.inf:
        parser.error("--idle-exit: expected 0 (never) or more seconds")
    check_listener_flags(parser, args)
    if not 0 <= args.dashboard_port <= 65535:
        parser.error("--dashboard-port: expected 0 (a free port) to 65535")
    if args.dashboard_port and not args.dashboard:
        parser.error("--dashboard-port needs --dashboard")
    from rawtrio.host.paths import host_paths
    from rawtrio.store.paths import state_dir

    paths = host_paths(state_dir())
    if args.status:
        return _status(paths)
    if args.stop:
        return _stop(paths)
    if args.detach:
        return _detach(paths, argv)
    return _foreground(paths, args, latch or SignalLatch())


def _foreground(paths: Any, args: argparse.Namespace, latch: SignalLatch) -> int:
    import trio

    from rawtrio.errors import RawtrioError, exit_code_for
    from rawtrio.host.server import (
        DashboardOptions,
        HostRunning,
        WsOptions,
        host_lock,
        run_host,
    )
    from rawtrio.host.settings import read_host_settings

    try:
        idle = args.idle_exit
        if idle is None:
            idle = read_host_settings(args.config).idle_exit_s
        ws = (
            WsOptions(
                host=args.host,
                port=args.port,
                allowed_origins=tuple(args.allow_origin),
                handshake_timeout=args.handshake_timeout,
                max_pending=args.max_pending_handshakes,
            )
            if args.ws
            else None
        )
        with host_lock(paths):
            trio.run(
                lambda: run_host(
                    paths,
                    latch,
                    idle_exit_s=idle,
                    ws=ws,
                    dashboard=DashboardOptions(args.dashboard_port) if args.dashboard else None,
                    permission_timeout_s=args.permission_timeout,
                    max_frame=args.max_message,
                    outbox=args.max_queued,
                )
            )
    except HostRunning as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except RawtrioError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except OSError as exc:  # the socket could not be bound, the state dir not written
        print(f"rawtrio: cannot serve: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    return ExitCode.COMPLETED


# --- --status, --stop and --detach: the front ends' client (rawtrio.host.client) --------


class _Unanswered(Exception):
    """Nobody answered on the socket (no listener, a closed connection, an error answer,
    no answer within the time): the message says which."""


def _ask(sock_path: str | Path, method: str | None, *, timeout: float) -> tuple[HostInfo, Any]:
    """Who answers `initialize` on the socket, and the result of `method` (None when no
    method is asked) after it; `_Unanswered` when nobody answers."""
    try:
        with HostConnection.connect(Path(sock_path), timeout) as conn:
            info = conn.initialize(__version__, timeout)
            result = conn.request(method, {}, timeout=timeout) if method is not None else None
    except (NoHost, HostGone, ProtocolFault, RemoteError, OSError) as exc:  # TimeoutError too
        raise _Unanswered(str(exc) or type(exc).__name__) from None
    return info, result


def _running(paths: Any) -> Any:
    from rawtrio.host.paths import read_registration

    reg = read_registration(paths.registration)
    if reg is None or not _alive(reg.pid):
        return None
    return reg


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _status(paths: Any) -> int:
    reg = _running(paths)
    if reg is None:
        print("no host running", file=sys.stderr)
        return NO_HOST
    try:
        _, live = _ask(reg.socket, "_rawtrio/host/status", timeout=10)
    except _Unanswered as exc:
        print(f"no host running (pid {reg.pid} does not answer: {exc})", file=sys.stderr)
        return NO_HOST
    print(json.dumps({"registration": reg.to_json(), "status": live}, indent=2))
    return ExitCode.COMPLETED


def _stop(paths: Any) -> int:
    reg = _running(paths)
    if reg is None:
        print("no host running", file=sys.stderr)
        return NO_HOST
    try:
        _ask(reg.socket, "_rawtrio/host/stop", timeout=10)
    except _Unanswered as exc:
        print(f"rawtrio: the host (pid {reg.pid}) did not answer: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    deadline = time.monotonic() + STOP_DEADLINE_S
    while _alive(reg.pid) and not _reaped(reg.pid):
        if time.monotonic() > deadline:
            print(f"rawtrio: the host (pid {reg.pid}) is still running", file=sys.stderr)
            return ExitCode.ERROR
        time.sleep(0.05)
    print(f"stopped the host (pid {reg.pid})", file=sys.stderr)
    return ExitCode.COMPLETED


def _reaped(pid: int) -> bool:
    """A zombie counts as gone (its parent has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _detach(paths: Any, argv: list[str]) -> int:
    from rawtrio.host.paths import lock_is_held, lock_pid
    from rawtrio.private_files import open_private

    if lock_is_held(paths.lock):
        pid = lock_pid(paths.lock)
        who = f" (pid {pid})" if pid is not None else ""
        print(f"rawtrio: a host already runs for {paths.state}{who}", file=sys.stderr)
        return ExitCode.USAGE
    child_argv = [sys.executable, "-m", "rawtrio", "serve", *(a for a in argv if a != "--detach")]
    with open_private(paths.log, "a") as log, open(os.devnull, "rb") as devnull:
        log.write(f"--- rawtrio serve --detach at {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        log.flush()
        proc = subprocess.Popen(
            child_argv,
            stdin=devnull,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            info, _ = _ask(paths.socket, None, timeout=5)
        except _Unanswered:
            time.sleep(0.05)
            continue
        if info.pid == proc.pid:
            print(json.dumps({"pid": proc.pid, "socket": str(paths.socket)}))
            return ExitCode.COMPLETED
        time.sleep(0.05)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
    print(f"rawtrio: the host did not come up (log: {paths.log}):", file=sys.stderr)
    for line in _tail(paths.log):
        print(f"  {line}", file=sys.stderr)
    return ExitCode.ERROR


def _tail(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[-_LOG_TAIL:]
    except OSError:
        return []
