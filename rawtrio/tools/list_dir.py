"""The `list_dir` tool: what a directory holds, as an indented tree, .gitignore honoured."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import FileToolError, describe_os_error, display_path
from rawtrio.tools.paths import resolve_path
from rawtrio.tools.walk import Walker

DEFAULT_DEPTH: Final = 2
MAX_DEPTH: Final = 10
MAX_ENTRIES: Final = 1000

DESCRIPTION: Final = f"""\
List the files and directories under a directory as an indented tree: directories end \
with "/", symlinks with "@", files show their size.

- `path` defaults to the working directory; `depth` (default {DEFAULT_DEPTH}) limits how \
deep to go.
- Entries ignored by .gitignore (and .git itself) are left out unless `include_ignored` \
is true; the result says how many were left out.
- At most {MAX_ENTRIES} entries are listed. To find files by name use glob; to search \
contents use grep.
"""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "The directory to list."},
        "depth": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_DEPTH,
            "description": f"How many levels to show (default {DEFAULT_DEPTH}).",
        },
        "include_ignored": {
            "type": "boolean",
            "description": "Also list entries that .gitignore ignores (default false).",
        },
    },
    "additionalProperties": False,
}


def list_dir_tool() -> Tool:
    return Tool(
        id="list_dir",
        description=DESCRIPTION,
        input_schema=freeze(_SCHEMA),
        handler=_handle,
        read_only=True,
        key_argument="path",
    )


async def _handle(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    raw = str(args.get("path") or ".")
    shown = raw
    try:
        root = resolve_path(raw, ctx.cwd, confine=ctx.settings.confine)
        shown = display_path(root, ctx.cwd) if root != ctx.cwd else "."
        depth = int(args.get("depth") or DEFAULT_DEPTH)
        gitignore = not bool(args.get("include_ignored", False))
        listing = functools.partial(_list, root, shown, depth, gitignore, ctx.settings.output_cap)
        return await trio.to_thread.run_sync(listing)
    except FileToolError as e:
        return ToolOutput.error(str(e))
    except OSError as e:
        return ToolOutput.error(describe_os_error(e, shown))


def _list(root: Path, shown: str, depth: int, gitignore: bool, cap: int) -> ToolOutput:
    if not root.is_dir():
        if root.exists():
            raise FileToolError(f"{shown} is a file, not a directory; read it with read_file")
        raise FileNotFoundError(2, "No such file or directory", str(root))
    walker = Walker(root, gitignore=gitignore, max_depth=depth)
    lines = [f"{shown.rstrip('/')}/"]
    size = 0
    listed = left_out = 0
    for entry in walker:
        if listed >= MAX_ENTRIES or size > cap:
            left_out += 1
            continue
        name = entry.rel.rsplit("/", 1)[-1]
        if entry.is_symlink:
            label = f"{name}@ -> {_readlink(entry.path)}"
        elif entry.is_dir:
            label = f"{name}/"
        else:
            label = f"{name} ({_size(entry.path)})"
        line = "  " * entry.depth + label
        size += len(line) + 1
        lines.append(line)
        listed += 1
    if listed == 0:
        lines.append("  (empty)")
    if left_out:
        lines.append(f"[{left_out} more entries not shown; list a subdirectory or lower `depth`]")
    if walker.skipped_ignored:
        lines.append(f"[{walker.skipped_ignored} entries ignored by .gitignore not shown]")
    return ToolOutput.ok(
        "\n".join(lines),
        path=shown,
        listed=listed,
        left_out=left_out,
        ignored=walker.skipped_ignored,
    )


def _size(path: str) -> str:
    try:
        n = float(os.stat(path, follow_symlinks=False).st_size)
    except OSError:
        return "?"
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return "?"


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"
