"""The `write_file` tool: create a file or replace its content, atomically."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

import trio

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import atomic_write, describe_os_error, display_path

DESCRIPTION: Final = """\
Create a file, or replace the whole content of an existing one. Missing parent \
directories are created. The write is atomic and keeps an existing file's permissions.

- `path` is absolute or relative to the working directory.
- To change part of an existing file, prefer edit_file: it is safer and shows a diff.
"""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "The file to write."},
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}


def write_file_tool() -> Tool:
    return Tool(
        id="write_file",
        description=DESCRIPTION,
        input_schema=freeze(_SCHEMA),
        handler=_handle,
        key_argument="path",
    )


async def _handle(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    path = ctx.resolve(str(args["path"]))
    shown = display_path(path, ctx.cwd)
    content = str(args["content"])
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as e:
        return ToolOutput.error(f"content is not valid Unicode text ({e.reason}); nothing written")
    try:
        created = await trio.to_thread.run_sync(functools.partial(atomic_write, path, data))
    except OSError as e:
        return ToolOutput.error(f"could not write: {describe_os_error(e, shown)}")
    except ValueError as e:  # e.g. a NUL byte in the path
        return ToolOutput.error(f"invalid path {shown!r}: {e}")
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "created" if created else "overwrote"
    return ToolOutput.ok(
        f"{verb} {shown} ({len(data)} bytes, {lines} lines)",
        path=shown,
        created=created,
        bytes=len(data),
    )
