"""The `write_file` tool: create a file, overwrite it or append to it, atomically.

Every mode writes the complete new content to a temporary file and renames it over the
target (`file_io.atomic_write`, through `ctx.backend.fs`), keeping an existing file's
mode; the result carries a unified diff against what was there before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import (
    FileToolError,
    decode_for_edit,
    describe_os_error,
    display_path,
    unified_diff,
)
from rawtrio.tools.paths import resolve_path

#: Existing files above this size are not overwritten or appended to in memory.
MAX_WRITE_BYTES: Final = 10 * 1024 * 1024
MODES: Final = ("create", "overwrite", "append")

DESCRIPTION: Final = """\
Write a text file. Missing parent directories are created. The write is atomic (a reader \
never sees half a file) and keeps an existing file's permissions. The result shows a diff.

- `mode`: "overwrite" (default) creates the file or replaces its whole content; "create" \
refuses if the file already exists; "append" adds `content` at the end (creating the file \
if needed; no newline is added for you).
- `path` is absolute or relative to the working directory.
- To change part of an existing file, prefer edit_file.
"""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "The file to write."},
        "content": {"type": "string", "description": "The text to write."},
        "mode": {
            "type": "string",
            "enum": list(MODES),
            "description": 'How to write: "overwrite" (default), "create" or "append".',
        },
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
    raw = str(args["path"])
    mode = str(args.get("mode") or "overwrite")
    shown = raw
    try:
        path = resolve_path(raw, ctx.cwd, confine=ctx.settings.confine)
        shown = display_path(path, ctx.cwd)
        content = str(args["content"])
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as e:
            raise FileToolError(f"content is not valid Unicode text ({e.reason})") from None
        fs = ctx.backend.fs
        before: str | None = None
        try:
            info = await fs.stat(path)
        except FileNotFoundError:
            info = None
        if info is not None:
            if info.kind == "dir":
                raise FileToolError(f"{shown} is a directory, not a file")
            if mode == "create":
                raise FileToolError(
                    f"{shown} already exists; use mode 'overwrite' to replace it, or "
                    f"edit_file to change part of it"
                )
            old = await fs.read_bytes(path, max_bytes=MAX_WRITE_BYTES)
            if mode == "append":
                before = decode_for_edit(old, shown)
                data = old + data
                content = before + content
            else:
                before = old.decode("utf-8", errors="replace")
        created = await fs.write_bytes(path, data)
    except FileToolError as e:
        return ToolOutput.error(f"{e}; nothing was written")
    except OSError as e:
        return ToolOutput.error(f"could not write: {describe_os_error(e, shown)}")
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "created" if created else ("appended to" if mode == "append" else "overwrote")
    diff = unified_diff(before or "", content, shown, ctx.settings.output_cap)
    summary = f"{verb} {shown} (now {len(data)} bytes, {lines} lines)"
    if not created and before == content:
        summary += "; the content is unchanged"
    return ToolOutput.ok(
        f"{summary}\n{diff}".rstrip("\n"),
        path=shown,
        created=created,
        mode=mode,
        bytes=len(data),
    )
