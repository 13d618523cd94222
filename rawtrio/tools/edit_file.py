"""The `edit_file` tool: change part of a file, in one of two modes.

- **search/replace** — `old_text` must occur exactly once (or `expected_occurrences`
  times, or any number with `replace_all`).
- **replace lines** — lines `start_line`..`end_line` are replaced, guarded by the SHA-256
  of an earlier read (the read_file footer) that covered them. The hash is recomputed
  over the file as it is now; if those lines changed since the read, the edit is refused.

The edit is all or nothing: on any problem the file is not touched; otherwise it is
rewritten atomically through `ctx.backend.fs`. The result carries a unified diff.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from rawtrio.frozen import freeze
from rawtrio.tools.backend import span_sha256, split_lines
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import (
    FileToolError,
    decode_for_edit,
    describe_os_error,
    display_path,
    unified_diff,
)
from rawtrio.tools.paths import resolve_path

#: Files above this size are not edited in memory.
MAX_EDIT_BYTES: Final = 10 * 1024 * 1024
#: A hash prefix shorter than this is not accepted as proof.
MIN_SHA_PREFIX: Final = 12
_LINE_NUMBER_PREFIX: Final = re.compile(r"^\s*\d+\t", re.MULTILINE)

DESCRIPTION: Final = """\
Change part of a text file and show the change as a diff. Two modes:

1. Search/replace: give `old_text` and `new_text`. `old_text` must match the file \
exactly (whitespace and indentation included; copy it from read_file output without the \
line-number prefixes) and occur exactly once — include more surrounding lines to make it \
unique — unless you set `expected_occurrences` (replace exactly that many) or \
`replace_all`.
2. Replace lines: give `start_line`, `end_line` (inclusive), `new_text` and `sha256`, the \
hash from the footer of a read_file call whose range covered those lines; if that read \
was not exactly start_line..end_line, give its range as `sha256_range` [first, last]. If \
the file changed there since you read it, the edit is refused: read it again. An empty \
`new_text` deletes the lines.

On any error the file is left unchanged. To create a file, use write_file.
"""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "The file to edit."},
        "new_text": {"type": "string", "description": "The text to put in place."},
        "old_text": {
            "type": "string",
            "minLength": 1,
            "description": "Search/replace: the exact text to replace.",
        },
        "replace_all": {
            "type": "boolean",
            "description": "Search/replace: replace every occurrence (default false).",
        },
        "expected_occurrences": {
            "type": "integer",
            "minimum": 1,
            "description": "Search/replace: replace all occurrences, but only if there are "
            "exactly this many.",
        },
        "start_line": {
            "type": "integer",
            "minimum": 1,
            "description": "Replace lines: the first line to replace (1-based).",
        },
        "end_line": {
            "type": "integer",
            "minimum": 1,
            "description": "Replace lines: the last line to replace (inclusive).",
        },
        "sha256": {
            "type": "string",
            "pattern": "^[0-9a-fA-F]{12,64}$",
            "description": "Replace lines: the sha256 from the read_file footer.",
        },
        "sha256_range": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1},
            "minItems": 2,
            "maxItems": 2,
            "description": "Replace lines: [first, last] line of the read the sha256 came "
            "from (default [start_line, end_line]).",
        },
    },
    "required": ["path", "new_text"],
    "oneOf": [
        {"required": ["old_text"]},
        {"required": ["start_line", "end_line", "sha256"]},
    ],
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
    raw = str(args["path"])
    shown = raw
    try:
        path = resolve_path(raw, ctx.cwd, confine=ctx.settings.confine)
        shown = display_path(path, ctx.cwd)
        info = await ctx.backend.fs.stat(path)
        if info.kind == "dir":
            raise FileToolError(f"{shown} is a directory, not a file")
        data = await ctx.backend.fs.read_bytes(path, max_bytes=MAX_EDIT_BYTES)
        text = decode_for_edit(data, shown)
        if "old_text" in args:
            updated, summary = _search_replace(text, shown, args)
        else:
            updated, summary = _replace_lines(data, shown, args)
        await ctx.backend.fs.write_bytes(path, updated.encode("utf-8"))
    except FileToolError as e:
        return ToolOutput.error(f"{e}; the file was not changed")
    except OSError as e:
        return ToolOutput.error(f"{describe_os_error(e, shown)}; the file was not changed")
    except UnicodeEncodeError as e:
        return ToolOutput.error(f"new_text is not valid Unicode ({e.reason}); not changed")
    diff = unified_diff(text, updated, shown, ctx.settings.output_cap)
    return ToolOutput.ok(f"edited {shown}: {summary}\n{diff}", path=shown)


def _search_replace(text: str, shown: str, args: Mapping[str, Any]) -> tuple[str, str]:
    old, new = str(args["old_text"]), str(args["new_text"])
    expected = args.get("expected_occurrences")
    replace_all = bool(args.get("replace_all", False)) or expected is not None
    if old == new:
        raise FileToolError("old_text and new_text are the same, so there is nothing to change")
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\r\n" not in old:
        # The model sees CRLF files with plain newlines: match them as the file has them.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise FileToolError(f"old_text was not found in {shown}{_not_found_hint(text, old)}")
    if expected is not None and count != int(expected):
        raise FileToolError(f"old_text occurs {count} times in {shown}, not {expected} as expected")
    if count > 1 and not replace_all:
        raise FileToolError(
            f"old_text occurs {count} times in {shown}; include more surrounding lines "
            f"to make it unique, or set replace_all (or expected_occurrences) to replace "
            f"every occurrence"
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    replaced = count if replace_all else 1
    return updated, f"replaced {replaced} occurrence{'s' if replaced != 1 else ''}"


def _replace_lines(data: bytes, shown: str, args: Mapping[str, Any]) -> tuple[str, str]:
    start, end = int(args["start_line"]), int(args["end_line"])
    first, last = (int(n) for n in args.get("sha256_range") or (start, end))
    expected = str(args["sha256"]).lower()
    if end < start:
        raise FileToolError(f"end_line {end} is before start_line {start}")
    if not first <= start <= end <= last:
        raise FileToolError(
            f"sha256_range [{first}, {last}] must contain lines {start}-{end}; read those "
            f"lines and pass the range of that read"
        )
    lines = split_lines(data)
    if last > len(lines):
        raise FileToolError(
            f"{shown} has {len(lines)} lines now, fewer than {last}: it changed since it "
            f"was read; read it again"
        )
    actual, _ = span_sha256(data, first, last)
    if not actual.startswith(expected) or len(expected) < MIN_SHA_PREFIX:
        raise FileToolError(
            f"lines {first}-{last} of {shown} changed since they were read (their sha256 "
            f"is now {actual}); read them again and retry"
        )
    new = str(args["new_text"])
    ending = b"\r\n" if lines[end - 1].endswith(b"\r\n") else b"\n"
    new_bytes = new.encode("utf-8")
    if new and lines[end - 1].endswith(b"\n") and not new.endswith("\n"):
        new_bytes += ending
    updated = b"".join(lines[: start - 1]) + new_bytes + b"".join(lines[end:])
    count = end - start + 1
    what = "deleted" if not new else "replaced"
    return updated.decode("utf-8"), f"{what} lines {start}-{end} ({count} line{'s' * (count > 1)})"


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
