"""A real MCP server for the tests, written with the `mcp` package's own server API.

Run as `python tests/mcp/server.py [--http] [--mode MODE ...]`. Over stdio it serves on
stdin/stdout; with `--http` it serves streamable HTTP on 127.0.0.1 (a free port) and
prints one line `{"url": "http://127.0.0.1:PORT/mcp"}` once it listens.

Modes make it misbehave the ways real servers do:

- `junk-at-start` — print non-protocol lines on stdout before serving;
- `stubborn` — ignore SIGTERM and keep running after stdin closes (only SIGKILL ends it);
- `crash-at-start` — write a reason on stderr and exit 1 before serving;
- `hang-at-start` — never answer (not even `initialize`).

When `MCP_TEST_LOG` is set, tool handlers append one line per event (`started NAME`,
`cancelled NAME`) to that file, so a test can see what the server saw.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations

#: A 1×1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def note(line: str) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


server: MCPServer[Any] = MCPServer("rawtrio-test")
#: The protocol pipe. The SDK diverts fd 1 to stderr while it serves (so a stray `print`
#: cannot corrupt the protocol); a misbehaving server in another language has no such
#: guard, so `junk` writes to a duplicate of the real stdout taken before serving.
WIRE = os.dup(1)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text as it was given."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def wipe(target: str) -> str:
    """Pretend to delete `target` (a destructive tool)."""
    return f"wiped {target}"


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer; records whether it was cancelled."""
    note("started slow")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        note("cancelled slow")
        raise
    note("finished slow")
    return f"slept {seconds}"


@server.tool()
async def freeze(seconds: float) -> str:
    """Block the whole server (its event loop too) for `seconds`: a hung server."""
    note("started freeze")
    time.sleep(seconds)  # noqa: ASYNC251 - blocking the loop on purpose
    return "thawed"


@server.tool()
def crash(code: int = 3) -> str:
    """Exit the whole server process in the middle of the call."""
    note("started crash")
    sys.stderr.write("test server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(code)


@server.tool()
def big(size: int) -> str:
    """A result of `size` characters: a head, many x, a tail."""
    return "HEAD" + "x" * max(0, size - 8) + "TAIL"


@server.tool(structured_output=False)
def picture() -> list[Any]:
    """A text and an image."""
    return ["a red dot", Image(data=PNG, format="png")]


@server.tool()
def junk(lines: int, width: int = 100, newline: bool = True) -> str:
    """Write non-protocol output on the protocol pipe (stdout), then answer."""
    end = b"\n" if newline else b""
    for i in range(lines):
        os.write(WIRE, (f"junk {i} " + "j" * width).encode() + end)
    if not newline:
        os.write(WIRE, b"\n")
    return f"wrote {lines} junk lines"


@server.tool()
def flood(megabytes: int) -> str:
    """Write `megabytes` MB to stderr, then answer."""
    chunk = b"e" * 1023 + b"\n"
    for _ in range(megabytes * 1024):
        os.write(2, chunk)
    return f"wrote {megabytes} MB to stderr"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header (streamable HTTP only)."""
    headers = ctx.headers or {}
    return headers.get(name.lower(), headers.get(name, "<missing>"))


@server.tool()
def environ(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)

    async def main() -> None:
        print(json.dumps({"url": f"http://127.0.0.1:{port}/mcp"}), flush=True)
        await uv.serve(sockets=[sock])

    anyio.run(main)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--http", action="store_true")
    p.add_argument("--mode", action="append", default=[])
    args = p.parse_args()
    modes = set(args.mode)
    if "crash-at-start" in modes:
        sys.stderr.write("test server: cannot start (on purpose)\n")
        sys.exit(1)
    if "stubborn" in modes:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "hang-at-start" in modes:
        time.sleep(3600)
    if "junk-at-start" in modes:
        for i in range(5):
            os.write(1, f"starting up, line {i} (not JSON-RPC)\n".encode())
    if args.http:
        serve_http()
    else:
        server.run()
    if "stubborn" in modes:
        time.sleep(3600)  # stdin closed: a well-behaved server would exit now


if __name__ == "__main__":
    main()
