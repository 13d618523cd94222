"""`rawtrio dashboard [--port N]`: serve the browser dashboard with a runtime of its own.

Like `rawtrio acp --ws`, it opens the application in this process (the same store and
configuration as every front end) and one `AcpAgent` on it, then serves the web app and
its API (rawtrio.dashboard.server) on `http://127.0.0.1:PORT` until SIGINT/SIGTERM. It
prints the URL to open, with the per-process token in its fragment, once on stderr:
`rawtrio dashboard: http://127.0.0.1:PORT/#token=TOKEN` (also in `<state>/dashboard.json`).

Each session's options come from the configuration for its folder, as for an ACP client
(`rawtrio.acp.cli.session_options`); the session flags (`--model`, `--agent`, …) apply to
every session it opens. A session no page follows any more is closed once idle, as in a
host. To follow sessions that a terminal or an editor drives, serve the dashboard from the
host instead: `rawtrio serve --dashboard`.

Exit codes: 0 stopped by a signal, 1 the port could not be bound or the server failed,
2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

from rawtrio.cli.flags import add_session_flags
from rawtrio.cli.signals import SignalLatch
from rawtrio.contracts import ExitCode

log = logging.getLogger("rawtrio.dashboard")

#: Seconds a permission request waits for a page (or an editor) to answer it.
DEFAULT_PERMISSION_TIMEOUT_S = 300.0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rawtrio dashboard",
        description="Serve the browser dashboard on 127.0.0.1 with a runtime of its own "
        "(on a host: rawtrio serve --dashboard).",
    )
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--cwd", help="folder of new sessions unless the page names one (default: .)")
    p.add_argument(
        "--permission-timeout",
        type=float,
        default=DEFAULT_PERMISSION_TIMEOUT_S,
        metavar="SECONDS",
        help="cancel a turn whose permission request no page answers within this time "
        "while none is open (default 300)",
    )
    p.add_argument("--log-file", metavar="PATH", help="write logs here instead of stderr")
    add_session_flags(p)
    return p


def main(argv: list[str], latch: SignalLatch | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error("--port: expected 0 (a free port) to 65535")
    if not args.permission_timeout > 0:
        parser.error("--permission-timeout: expected a number of seconds > 0")
    cwd = Path(args.cwd).expanduser().resolve() if args.cwd else Path.cwd()
    if not cwd.is_dir():
        parser.error(f"--cwd: {args.cwd!r} is not a folder")
    args.cwd = str(cwd)
    if args.log_file:
        from rawtrio.logs import log_to_file

        log_to_file(Path(args.log_file))
    import trio

    from rawtrio.errors import RawtrioError, exit_code_for

    try:
        return trio.run(run, args, latch or SignalLatch())
    except RawtrioError as exc:  # the store could not be opened, …
        print(f"rawtrio: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except OSError as exc:  # the port could not be bound
        print(f"rawtrio: cannot serve the dashboard: {exc}", file=sys.stderr)
        return ExitCode.ERROR


async def run(args: argparse.Namespace, latch: SignalLatch) -> int:
    import trio

    from rawtrio.acp.agent import open_acp_agent
    from rawtrio.acp.cli import session_options
    from rawtrio.app import open_app
    from rawtrio.cli.signals import stopped_by_signal
    from rawtrio.dashboard.server import serve_dashboard
    from rawtrio.store.paths import state_dir

    async with (
        open_app(args, configure=False) as app,
        open_acp_agent(
            app.runtime,
            session_options(app),
            permission_timeout_s=args.permission_timeout,
            close_unattended=True,
        ) as agent,
        stopped_by_signal(latch, _log_signal) as nursery,
    ):
        info = await serve_dashboard(
            nursery,
            agent,
            mode="standalone",
            default_cwd=Path(args.cwd),
            port=args.port,
            state_dir=state_dir(),
        )
        print(f"rawtrio dashboard: {info.open_url}", file=sys.stderr, flush=True)
        log.info("serving the dashboard for pid %d", os.getpid())
        await trio.sleep_forever()
    return ExitCode.COMPLETED


def _log_signal(sig: signal.Signals) -> None:
    log.warning("received %s: closing every session", sig.name)
