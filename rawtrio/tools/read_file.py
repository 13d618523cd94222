"""The `read_file` tool: numbered lines of one or more text files, a window at a time.

Each window ends with a footer giving the lines shown, the file's line count and the
SHA-256 of the exact bytes of those lines (terminators included, long lines uncut). The
hash is what `edit_file`'s `replace_lines` mode checks against the file as it is at edit
time, so an edit based on a stale read is refused. Reading goes through
`ctx.backend.fs`, line by line in a worker thread that checks for cancellation (I4), so
a huge file costs neither memory nor event-loop time; output is bounded by the output
cap, shared by all files of a call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.tools.backend import MAX_LINE_BYTES, LineWindow
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import FileToolError, describe_os_error, display_path
from rawtrio.tools.paths import resolve_path

DEFAULT_LIMIT: Final = 2000
MAX_FILES: Final = 20

_MAGIC: Final = (
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "zip archive (or a format based on zip)"),
    (b"\x7fELF", "ELF executable or library"),
    (b"\x1f\x8b", "gzip archive"),
    (b"SQLite format 3", "SQLite database"),
)

DESCRIPTION: Final = f"""\
Read text files. Each line is prefixed with its line number and a tab (the prefix is \
not part of the file); each file ends with a footer such as \
`[lines 1-40 of 40; sha256=…]`.

- Give `path` for one file, or `files` (up to {MAX_FILES}) to read several at once. Paths \
are absolute or relative to the working directory.
- By default up to {DEFAULT_LIMIT} lines are returned from line 1. Use `offset` (1-based \
first line) and `limit` (number of lines) for a range; when output is cut, the footer \
says which offset to read next.
- The sha256 in the footer covers exactly the lines shown. Pass it to edit_file's \
replace-lines mode to prove the lines have not changed since you read them.
- Binary files are not shown (their size and type are); lines over {MAX_LINE_BYTES} \
bytes are cut; invalid UTF-8 shows as �.
- Copy text for edit_file exactly, without the line-number prefixes.
"""

_RANGE: Final = {
    "offset": {
        "type": "integer",
        "minimum": 1,
        "description": "The 1-based line number to start at (default 1).",
    },
    "limit": {
        "type": "integer",
        "minimum": 1,
        "description": f"How many lines to read at most (default {DEFAULT_LIMIT}).",
    },
}

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "The file to read."},
        **_RANGE,
        "files": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_FILES,
            "description": "Several files to read, each with an optional line range.",
            "items": {
                "type": "object",
                "properties": {"path": {"type": "string", "minLength": 1}, **_RANGE},
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    "oneOf": [{"required": ["path"]}, {"required": ["files"]}],
    "additionalProperties": False,
}


def read_file_tool() -> Tool:
    return Tool(
        id="read_file",
        description=DESCRIPTION,
        input_schema=freeze(_SCHEMA),
        handler=_handle,
        read_only=True,
        key_argument="path",
    )


async def _handle(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    requests = list(args["files"]) if "files" in args else [args]
    budget = ctx.settings.output_cap
    parts: list[str] = []
    files: list[dict[str, Any]] = []
    failures = 0
    for request in requests:
        raw = str(request["path"])
        text, info = await _read_one(ctx, raw, request, max(budget, 1))
        budget -= len(text.encode("utf-8"))
        failures += info.get("error", False)
        files.append(info)
        parts.append(text if len(requests) == 1 else f"==> {info['path']} <==\n{text}")
    content = "\n\n".join(parts)
    status = ToolStatus.ERROR if failures == len(requests) else ToolStatus.OK
    details = files[0] if len(files) == 1 else {"files": files}
    return ToolOutput(status, content, freeze(details))


async def _read_one(
    ctx: ToolContext, raw: str, request: Mapping[str, Any], budget: int
) -> tuple[str, dict[str, Any]]:
    shown = raw
    try:
        path = resolve_path(raw, ctx.cwd, confine=ctx.settings.confine)
        shown = display_path(path, ctx.cwd)
        first = int(request.get("offset") or 1)
        limit = int(request.get("limit") or DEFAULT_LIMIT)
        window = await ctx.backend.fs.read_lines(path, first=first, limit=limit, max_bytes=budget)
    except FileToolError as e:
        return str(e), {"path": shown, "error": True}
    except FileNotFoundError as e:
        return _missing(e, shown, Path(raw) if os.path.isabs(raw) else ctx.cwd / raw), {
            "path": shown,
            "error": True,
        }
    except IsADirectoryError:
        msg = f"{shown} is a directory, not a file; use list_dir to see what it holds"
        return msg, {"path": shown, "error": True}
    except OSError as e:
        return describe_os_error(e, shown), {"path": shown, "error": True}
    return _render(window, shown)


def _missing(error: OSError, shown: str, path: Path) -> str:
    msg = describe_os_error(error, shown)
    try:
        siblings = os.listdir(path.parent)
    except OSError:
        return msg
    import difflib  # only for a path that does not exist

    close = difflib.get_close_matches(path.name, siblings, n=3)
    if close:
        msg += "; did you mean " + ", ".join(repr(str(path.parent / c)) for c in close) + "?"
    return msg


def _render(w: LineWindow, shown: str) -> tuple[str, dict[str, Any]]:
    info: dict[str, Any] = {"path": shown, "total_lines": w.total_lines, "size": w.size}
    if w.binary:
        kind = _binary_kind(w)
        text = f"{shown} is a binary file ({w.size} bytes{kind}); its content is not shown"
        return text, {**info, "binary": True, "error": True}
    if w.total_lines == 0:
        return f"({shown} is empty)", info
    if w.first > w.total_lines:
        text = f"offset {w.first} is past the end of {shown}, which has {w.total_lines} lines"
        return text, {**info, "error": True}
    last = w.first + len(w.lines) - 1
    out: list[str] = []
    crlf = replaced = False
    for i, (raw, cut) in enumerate(zip(w.lines, w.cut, strict=True)):
        crlf = crlf or raw.endswith(b"\r\n")
        body = raw.rstrip(b"\n").removesuffix(b"\r")
        text = body.decode("utf-8", errors="replace")
        # A cut line may end inside a character: that alone is no reason for the note.
        replaced = replaced or ("\ufffd" in (text[:-1] if cut else text))
        suffix = " …[line cut]" if cut else ""
        out.append(f"{w.first + i:6}\t{text}{suffix}\n")
    footer = f"[lines {w.first}-{last} of {w.total_lines}; sha256={w.sha256}]"
    notes = [footer]
    if last < w.total_lines:
        why = "output size limit" if w.stopped_by_size else "line limit"
        notes.append(
            f"[{why} reached; {w.total_lines - last} more lines: call read_file with "
            f"offset={last + 1} to read on]"
        )
    if replaced:
        notes.append("[note: the file is not valid UTF-8; undecodable bytes are shown as �]")
    if any(w.cut):
        notes.append(f"[note: lines longer than {MAX_LINE_BYTES} bytes were cut]")
    if crlf:
        notes.append("[note: the file has Windows (CRLF) line endings]")
    info.update(first_line=w.first, last_line=last, sha256=w.sha256)
    return "".join(out) + "\n".join(notes), info


def _binary_kind(w: LineWindow) -> str:
    for magic, name in _MAGIC:
        if w.head.startswith(magic):
            return f", {name}"
    return ""
