"""`rawtrio` without `-p` on a terminal: the prompt on screen first, then the chat.

The order, each step for a reason: the host this state directory may have is looked for
first (`rawtrio.cli.attaching`: what it says, such as a host of another version, must be
readable, so before the screen is the chat's); then the first frame is drawn
(`rawtrio.tui.first_frame`, the standard library only); then trio and urwid are imported
behind it, and `rawtrio.tui.runner` takes the terminal over, brings the runtime up and
runs the chat. Nothing here imports trio, urwid or the runtime before the frame is drawn
(docs/benchmarks.md, "start → prompt drawn").

SIGINT (from `kill`: the terminal's Ctrl-C is a key from the first frame on) while trio
and urwid are imported ends the run with its exit code, as before any screen.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rawtrio.cli.signals import Interrupted, SignalLatch
from rawtrio.contracts import ExitCode
from rawtrio.tui import first_frame

if TYPE_CHECKING:
    from rawtrio.host.client import HostConnection, HostInfo


def main(args: argparse.Namespace, latch: SignalLatch | None = None) -> int:
    latch = latch or SignalLatch()
    if latch.exit_code is not None:  # Ctrl-C before the screen
        return latch.exit_code
    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # `--demo` without a terminal
        print("rawtrio: the full-screen chat needs a terminal (stdin and stdout)", file=sys.stderr)
        return ExitCode.USAGE
    found = find_host(args)
    with first_frame.shown(sys.stdin.fileno(), sys.stdout.fileno()) as frame:
        try:
            with latch.raising():
                import trio

                from rawtrio.tui import runner
        except Interrupted as exc:
            if found is not None:
                found[0].close()
            return exc.exit_code
        return trio.run(runner.run, args, found, frame)


def find_host(args: argparse.Namespace) -> tuple[HostConnection, HostInfo] | None:
    """A compatible host's connection (`rawtrio.cli.attach`'s decision), or None to run
    here; `--demo` always runs here."""
    if getattr(args, "demo", False) or not hasattr(args, "no_attach"):
        return None
    from rawtrio.cli.attaching import attach_mode
    from rawtrio.cli.attaching import find_host as find

    attach, autostart = attach_mode(args)
    return find(args, autostart=autostart) if attach else None
