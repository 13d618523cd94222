"""Command-line entry point. Imports nothing heavy before the arguments are parsed.

`rawtrio sessions …` is recognised by its first word and handed to `rawtrio.cli.sessions`
(its own parser) before anything else is built; everything else is the chat, or a
headless run with `-p`, each in a new session or the one `--continue` / `--resume`
(`--fork`) names.

The process's signal disposition is decided here, before anything heavy is imported, and
holds until the process ends (`rawtrio.cli.signals`): SIGINT and SIGTERM never surface as a
`KeyboardInterrupt` traceback or as death by signal.

The program leaves with `os._exit` once its output is flushed: tearing down the
interpreter after the provider SDKs were imported costs most of a second, which would
put "signal → exit" far outside the cancel budget (docs/benchmarks.md). Everything that
matters is done by then — the turn is recorded, child processes are reaped, the store is
closed — so nothing is lost by skipping the teardown.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import NoReturn

from rawtrio import __version__
from rawtrio.cli.flags import (
    HelpFormatter,
    add_headless_flags,
    add_session_flags,
    settle_headless_args,
)
from rawtrio.cli.signals import Interrupted, SignalLatch


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rawtrio",
        formatter_class=HelpFormatter,
        description="A local coding agent with strict cancellation.",
        epilog="Stored sessions: rawtrio sessions {list,show,search,export,rm,rename} "
        "(rawtrio sessions --help). Configuration: rawtrio config {check,init}. "
        "MCP servers: rawtrio mcp {list,test,import}. "
        "Undo a turn's file changes: rawtrio undo|redo|rewind (rawtrio undo --help). "
        "Editors (Agent Client Protocol): rawtrio acp [--ws]. "
        "The host front ends attach to: rawtrio serve [--detach|--status|--stop]. "
        "Browser dashboard: rawtrio dashboard, rawtrio serve --dashboard.",
    )
    p.add_argument("-V", "--version", action="version", version=f"rawtrio {__version__}")
    p.add_argument(
        "-p",
        "--print",
        dest="prompt",
        metavar="PROMPT",
        nargs="?",
        const="",
        help="run one turn headless with PROMPT and print the answer ('-', or neither "
        "PROMPT nor QUERY, reads stdin)",
    )
    p.add_argument("query", nargs="?", metavar="QUERY", help="with -p and no PROMPT: the prompt")
    add_headless_flags(p)
    add_session_flags(p)
    p.add_argument("--cwd", help="working directory of the session (default: current)")
    p.add_argument(
        "--trust",
        action="store_true",
        help="trust this project's .rawtrio/config.toml (hooks, commands, servers) from now on",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="headless: approve calls that would ask (deny rules still apply)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "-c",
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the most recently updated session of the working directory",
    )
    which.add_argument(
        "-r", "--resume", metavar="ID", help="resume the session ID (see `rawtrio sessions list`)"
    )
    p.add_argument(
        "--fork",
        action="store_true",
        help="with --continue or --resume: run in a new copy of that session, leaving it as it was",
    )
    p.add_argument(
        "--plain",
        action="store_true",
        help="the line-mode chat instead of the full-screen one (also used without a terminal)",
    )
    attach = p.add_mutually_exclusive_group()
    attach.add_argument(
        "--attach",
        action="store_true",
        help="-p and the chat: run in the host of this state directory, starting one if "
        "none runs (config host.attach, host.autostart; docs/user-guide.md)",
    )
    attach.add_argument(
        "--no-attach",
        action="store_true",
        help="-p and the chat: run in this process even when a host runs",
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="an offline demo of the chat against the built-in fake model (docs/tui.md)",
    )
    return p


def run(argv: list[str] | None = None, latch: SignalLatch | None = None) -> int:
    """Parse `argv` and run the front end it asks for; return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    latch = latch or SignalLatch()
    problem = undecodable_argument(argv)
    if problem is not None:
        print(f"rawtrio: {problem}", file=sys.stderr)
        return 2
    if argv[:1] == ["sessions"]:  # `rawtrio sessions …` has a parser of its own
        try:
            with latch.raising():
                from rawtrio.cli.sessions import main as sessions_main
        except Interrupted as exc:
            return exc.exit_code
        return sessions_main(argv[1:], latch)
    if argv[:1] in (["undo"], ["redo"]):  # checkpoints (docs/checkpoints.md)
        from rawtrio.cli.undo import main as undo_main

        return undo_main(argv[1:], argv[0])
    if argv[:1] == ["rewind"]:  # back to just before a prompt (docs/checkpoints.md)
        from rawtrio.cli.rewind import main as rewind_main

        return rewind_main(argv[1:])
    if argv[:1] == ["config"]:  # `rawtrio config check|init`
        from rawtrio.cli.config import main as config_main

        return config_main(argv[1:])
    if argv[:1] == ["mcp"]:  # `rawtrio mcp list|test|import` (docs/mcp.md)
        from rawtrio.cli.mcp import main as mcp_main

        return mcp_main(argv[1:], latch)
    if argv[:1] == ["acp"]:  # `rawtrio acp [--ws]`: the Agent Client Protocol (docs/acp.md)
        from rawtrio.acp.cli import main as acp_main

        return acp_main(argv[1:], latch)
    if argv[:1] == ["dashboard"]:  # `rawtrio dashboard`: the browser front end
        from rawtrio.dashboard.cli import main as dashboard_main

        return dashboard_main(argv[1:], latch)
    if argv[:1] == ["serve"]:  # `rawtrio serve`: the host front ends attach to
        from rawtrio.cli.serve import main as serve_main

        return serve_main(argv[1:], latch)
    parser = build_parser()
    args = parser.parse_args(argv)
    settle_headless_args(parser, args)
    line_chat = (
        args.prompt is None
        and not args.demo
        and (args.plain or not (sys.stdin.isatty() and sys.stdout.isatty()))
    )
    if line_chat and (args.attach or args.no_attach):
        which = "--attach" if args.attach else "--no-attach"
        parser.error(
            f"{which} applies to -p and the full-screen chat, not the line chat "
            "(--plain, or no terminal)"
        )
    if args.demo and args.attach:
        parser.error("--demo always runs in this process: leave out --attach")
    if args.fork and not (args.continue_ or args.resume):
        parser.error("--fork needs --continue or --resume ID (the session to copy)")
    if args.demo and (args.prompt is not None or args.plain):
        parser.error("--demo runs the full-screen chat: leave out -p and --plain")
    try:
        with latch.raising():
            if args.prompt is not None:
                from rawtrio.cli.attach import main as front_end
            elif line_chat:
                from rawtrio.cli.repl import main as front_end
            else:
                from rawtrio.tui.start import main as front_end
    except Interrupted as exc:
        return exc.exit_code
    return front_end(args, latch)


def undecodable_argument(argv: list[str]) -> str | None:
    """Why an argument is not text, or None. Python decodes `argv` with `surrogateescape`,
    so invalid UTF-8 arrives as lone surrogates, which no writer (terminal, JSON, SQLite)
    can encode: refused here, naming the argument, before anything else runs."""
    from rawtrio.unicode_safety import describe_undecodable

    for i, arg in enumerate(argv):
        before = argv[i - 1] if i else ""
        what = (
            f"the value of {before}"
            if before.startswith("-") and not arg.startswith("-")
            else f"argument {i + 1}"
        )
        problem = describe_undecodable(arg, what)
        if problem is not None:
            return problem
    return None


def main(argv: list[str] | None = None) -> NoReturn:
    """The program: run, flush, and leave without tearing the interpreter down."""
    from rawtrio.logs import log_to_stream

    log_to_stream(sys.stderr)  # full-screen front ends move it to a file
    with SignalLatch().installed() as latch:
        try:
            code = run(argv, latch)
        except SystemExit as exc:  # argparse: --help, --version (0) and usage errors (2)
            code = exc.code if isinstance(exc.code, int) else 0
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


if __name__ == "__main__":
    main()
