"""The `edit_file` tool: replace an exact piece of text in a file.

The edit is all or nothing: when the text is missing, ambiguous or the file cannot be
read as UTF-8 text, the file is not touched; otherwise it is rewritten atomically. The
result carries a unified diff so the model (and the user) can see what changed.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import (
    FileToolError,
    atomic_write,
    describe_os_error,
    display_path,
    read_text_for_edit,
)

#: Files above this size are not edited in memory.
MAX_EDIT_BYTES: Final = 10 * 1024 * 1024
_LINE_NUMBER_PREFIX: Final = re.compile(r"^\s*\d+\t", re.MULTILINE)

DESCRIPTION: Final = """\
Replace an exact piece of text in a file with new text, and show the change as a diff.

- `old_text` must match the file exactly, including whitespace and indentation; copy it \
from read_file output without the line-number prefixes.
- `old_text` must occur exactly once, unless `replace_all` is true: include enough \
surrounding lines to make it unique.
- On any error the file is left unchanged. To create a file, use write_file.
"""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "The file to edit."},
        "old_text": {
            "type": "string",
            "minLength": 1,
            "description": "The exact text to replace.",
        },
        "new_text": {"type": "string", "description": "The text to put in its place."},
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence instead of exactly one (default false).",
        },
    },
    "required": ["path", "old_text", "new_text"],
    "additionalProperties": False,
}


def edit_file_tool() -> Tool:
    return Tool(
        id="edit_file",
        description=DESCRIPTION,
        input_schema=freeze(_SCHEMA),
        handler=_handle,
        key_argument="path",
    )


async def _handle(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    path = ctx.resolve(str(args["path"]))
    shown = display_path(path, ctx.cwd)
    edit = functools.partial(
        _edit,
        path,
        shown,
        str(args["old_text"]),
        str(args["new_text"]),
        bool(args.get("replace_all", False)),
        ctx.settings.output_cap,
    )
    try:
        return await trio.to_thread.run_sync(edit)
    except FileToolError as e:
        return ToolOutput.error(f"{e}; the file was not changed")
    except OSError as e:
        return ToolOutput.error(f"{describe_os_error(e, shown)}; the file was not changed")
    except (ValueError, UnicodeEncodeError) as e:
        return ToolOutput.error(f"could not edit {shown}: {e}; the file was not changed")


def _edit(path: Path, shown: str, old: str, new: str, replace_all: bool, cap: int) -> ToolOutput:
    if not old:
        raise FileToolError("old_text is empty; to create a file use write_file")
    if old == new:
        raise FileToolError("old_text and new_text are the same, so there is nothing to change")
    text = read_text_for_edit(path, MAX_EDIT_BYTES)
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\r\n" not in old:
        # The model sees CRLF files with plain newlines: match them as the file has them.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise FileToolError(f"old_text was not found in {shown}{_not_found_hint(text, old)}")
    if count > 1 and not replace_all:
        raise FileToolError(
            f"old_text occurs {count} times in {shown}; include more surrounding lines "
            f"to make it unique, or set replace_all to true to replace every occurrence"
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    atomic_write(path, updated.encode("utf-8"))
    diff = _diff(text, updated, shown, cap)
    replaced = count if replace_all else 1
    plural = "s" if replaced != 1 else ""
    return ToolOutput.ok(
        f"edited {shown}: replaced {replaced} occurrence{plural}\n{diff}",
        path=shown,
        replacements=replaced,
    )


def _not_found_hint(text: str, old: str) -> str:
    if _LINE_NUMBER_PREFIX.search(old):
        return " (old_text seems to contain read_file's line-number prefixes; leave them out)"
    squeezed = " ".join(old.split())
    if squeezed and squeezed in " ".join(text.split()):
        return (
            " exactly, but it matches when whitespace is ignored: copy the indentation "
            "and line breaks exactly as the file has them"
        )
    return "; read the file again and copy the text exactly"


def _diff(before: str, after: str, shown: str, cap: int) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(diff) > cap:
        diff = diff[:cap] + f"\n[... diff cut at {cap} characters ...]\n"
    return diff.rstrip("\n")
