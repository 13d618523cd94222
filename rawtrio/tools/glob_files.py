"""The `glob` tool: find files by name pattern, .gitignore honoured, newest first."""

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
from rawtrio.tools.walk import Walker, glob_matches

MAX_RESULTS: Final = 500

DESCRIPTION: Final = f"""\
Find files whose path matches a glob pattern, e.g. `**/*.py`, `src/**/test_*.ts`, \
`*.{{json,yaml}}`. Returns paths relative to the working directory, most recently \
modified first.

- `*` and `?` match within one path component, `**` across directories; a pattern \
without "/" matches file names at any depth.
- `path` (default: the working directory) is the directory to search in.
- Files ignored by .gitignore are skipped unless `include_ignored` is true.
- At most {MAX_RESULTS} paths are returned; the result says how many more matched.
"""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "minLength": 1, "description": "The glob pattern."},
        "path": {"type": "string", "minLength": 1, "description": "Directory to search in."},
        "include_ignored": {
            "type": "boolean",
            "description": "Also match files that .gitignore ignores (default false).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def glob_tool() -> Tool:
    return Tool(
        id="glob",
        description=DESCRIPTION,
        input_schema=freeze(_SCHEMA),
        handler=_handle,
        read_only=True,
        key_argument="pattern",
    )


async def _handle(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    raw = str(args.get("path") or ".")
    shown = raw
    try:
        root = resolve_path(raw, ctx.cwd, confine=ctx.settings.confine)
        shown = display_path(root, ctx.cwd)
        find = functools.partial(
            _find,
            root,
            ctx.cwd,
            shown,
            str(args["pattern"]),
            not bool(args.get("include_ignored", False)),
        )
        return await trio.to_thread.run_sync(find)
    except FileToolError as e:
        return ToolOutput.error(str(e))
    except OSError as e:
        return ToolOutput.error(describe_os_error(e, shown))


def _find(root: Path, cwd: Path, shown: str, pattern: str, gitignore: bool) -> ToolOutput:
    if not root.is_dir():
        if root.exists():
            raise FileToolError(f"{shown} is a file, not a directory")
        raise FileNotFoundError(2, "No such file or directory", str(root))
    walker = Walker(root, gitignore=gitignore)
    patterns = (pattern,)
    found: list[tuple[float, str]] = []
    for entry in walker:
        if entry.is_dir or not glob_matches(patterns, entry.rel):
            continue
        try:
            mtime = os.stat(entry.path, follow_symlinks=False).st_mtime
        except OSError:
            continue
        found.append((-mtime, display_path(Path(entry.path), cwd)))
    found.sort()
    shown_paths = [p for _, p in found[:MAX_RESULTS]]
    notes = []
    if not found:
        notes.append(f"no files match {pattern!r} under {shown}")
    if len(found) > MAX_RESULTS:
        notes.append(
            f"[{len(found) - MAX_RESULTS} more matches not shown; narrow the pattern or path]"
        )
    if walker.skipped_ignored and gitignore:
        notes.append(f"[{walker.skipped_ignored} entries ignored by .gitignore were skipped]")
    return ToolOutput.ok(
        "\n".join(shown_paths + notes),
        matches=len(found),
        shown=len(shown_paths),
        ignored=walker.skipped_ignored,
    )
