"""The flags of an ACP listener, shared by `rawtrio acp` and `rawtrio serve` (which serves
the same protocol on its socket and, with `--ws`, the same WebSocket listener). Light: the
parsers are built before anything heavy is imported."""

from __future__ import annotations

import argparse
import math


def add_listener_flags(p: argparse.ArgumentParser) -> None:
    """The WebSocket address and limits, the permission timeout and the frame limits."""
    p.add_argument("--host", default="127.0.0.1", help="WebSocket address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="WebSocket port (default: a free one)")
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also accept WebSocket connections from this Origin (loopback origins always are)",
    )
    p.add_argument(
        "--permission-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="cancel a turn whose permission request finds no connected client this long "
        "(default 300)",
    )
    p.add_argument(
        "--max-message",
        type=int,
        default=8 * 1024 * 1024,
        metavar="BYTES",
        help="largest incoming message (default 8 MiB)",
    )
    p.add_argument(
        "--max-queued",
        type=int,
        default=4096,
        metavar="N",
        help="messages queued for a connection before a client that stopped reading is cut "
        "off (default 4096)",
    )
    p.add_argument(
        "--handshake-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="WebSocket: close a connection that has not sent its upgrade request this long "
        "(default 5)",
    )
    p.add_argument(
        "--max-pending-handshakes",
        type=int,
        default=64,
        metavar="N",
        help="WebSocket: connections waiting for their handshake at once; the next one "
        "closes the oldest (default 64)",
    )


def check_listener_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit 2 (`parser.error`) naming the first flag out of its range."""
    if not 0 < args.permission_timeout < math.inf:
        parser.error("--permission-timeout: expected seconds > 0")
    if args.max_queued < 16:
        parser.error("--max-queued: expected at least 16")
    if not 0 < args.handshake_timeout < math.inf:
        parser.error("--handshake-timeout: expected seconds > 0")
    if args.max_pending_handshakes < 1:
        parser.error("--max-pending-handshakes: expected at least 1")
    if args.max_message < 1024:
        parser.error("--max-message: expected at least 1024 bytes")
