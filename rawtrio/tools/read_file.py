"""The `read_file` tool: numbered lines of a text file, a window at a time.

The file is read in a worker thread, line by line, so a huge file costs neither memory
nor event-loop time; the thread checks for cancellation every few thousand lines, so a
cancelled turn does not leave it scanning (invariant I4). Output stops at the line limit
or the output cap, and ends with the offset to continue from.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

import trio

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import SNIFF_BYTES, describe_os_error, display_path, is_binary

DEFAULT_LIMIT: Final = 2000
#: Lines longer than this (in characters) are cut in the output.
MAX_LINE_CHARS: Final = 2000
_MAX_LINE_BYTES: Final = 4 * MAX_LINE_CHARS
_CANCEL_CHECK_EVERY: Final = 4096

DESCRIPTION: Final = f"""\
Read a text file and return its lines, each prefixed with its line number and a tab \
(the prefix is not part of the file).

- `path` is absolute or relative to the working directory.
- By default up to {DEFAULT_LIMIT} lines are returned from the start. For longer files, \
use `offset` (the 1-based line to start at) and `limit` (how many lines) to read the rest; \
the result says where to continue.
- Lines longer than {MAX_LINE_CHARS} characters are cut.
- Binary files are refused; text that is not valid UTF-8 is shown with \
replacement characters.
- Read a file before editing it, and copy text for edit_file exactly, without the \
line-number prefixes.
"""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "The file to read."},
        "offset": {
            "type": "integer",
            "minimum": 1,
            "description": "The 1-based line number to start reading at (default 1).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": f"How many lines to read at most (default {DEFAULT_LIMIT}).",
        },
    },
    "required": ["path"],
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
    path = ctx.resolve(str(args["path"]))
    shown = display_path(path, ctx.cwd)
    offset = int(args.get("offset") or 1)
    limit = int(args.get("limit") or DEFAULT_LIMIT)
    read = functools.partial(_read, path, shown, offset, limit, ctx.settings.output_cap)
    try:
        return await trio.to_thread.run_sync(read)
    except OSError as e:
        return ToolOutput.error(describe_os_error(e, shown))
    except ValueError as e:  # e.g. a NUL byte in the path
        return ToolOutput.error(f"invalid path {shown!r}: {e}")


@dataclass
class _Window:
    lines: list[str]
    first: int
    total: int = 0
    size: int = 0
    stopped_early: bool = False
    replaced: bool = False
    cut: bool = False
    crlf: bool = False


def _read(path: Path, shown: str, offset: int, limit: int, cap: int) -> ToolOutput:
    if path.is_dir():
        return ToolOutput.error(f"{shown} is a directory, not a file; list it with bash (ls)")
    with open(path, "rb") as f:
        if is_binary(f.read(SNIFF_BYTES)):
            return ToolOutput.error(f"{shown} looks like a binary file (it contains NUL bytes)")
        f.seek(0)
        w = _Window(lines=[], first=offset)
        for lineno, (raw, cut) in enumerate(_raw_lines(f), start=1):
            w.total = lineno
            if lineno % _CANCEL_CHECK_EVERY == 0:
                trio.from_thread.check_cancelled()
            if lineno < offset or w.stopped_early:
                continue
            if len(w.lines) >= limit:
                w.stopped_early = True
                continue
            rendered = f"{lineno:6}\t{_decode(raw, cut, w)}\n"
            w.size += len(rendered.encode("utf-8"))
            if w.size > cap and w.lines:
                w.stopped_early = True
                continue
            w.lines.append(rendered)
    return _render(w, shown, limit)


def _render(w: _Window, shown: str, limit: int) -> ToolOutput:
    details = {"path": shown, "total_lines": w.total}
    if w.total == 0:
        return ToolOutput.ok(f"({shown} is empty)", **details)
    if w.first > w.total:
        return ToolOutput.error(
            f"offset {w.first} is past the end of {shown}, which has {w.total} lines"
        )
    last = w.first + len(w.lines) - 1
    notes = []
    if w.stopped_early:
        why = "line limit" if len(w.lines) >= limit else "output size limit"
        notes.append(
            f"[{why} reached: showed lines {w.first}-{last} of {w.total}; "
            f"call read_file with offset={last + 1} to read more]"
        )
    if w.replaced:
        notes.append("[note: the file is not valid UTF-8; undecodable bytes are shown as �]")
    if w.cut:
        notes.append(f"[note: lines longer than {MAX_LINE_CHARS} characters were cut]")
    if w.crlf:
        notes.append("[note: the file has Windows (CRLF) line endings]")
    text = "".join(w.lines) + "\n".join(notes)
    return ToolOutput.ok(text.rstrip("\n"), first_line=w.first, last_line=last, **details)


def _raw_lines(f: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """Each line (at most _MAX_LINE_BYTES of it) and whether it was longer."""
    while part := f.readline(_MAX_LINE_BYTES):
        cut = False
        if not part.endswith(b"\n") and len(part) == _MAX_LINE_BYTES:
            while rest := f.readline(_MAX_LINE_BYTES):
                cut = True
                if rest.endswith(b"\n"):
                    break
        yield part, cut


def _decode(raw: bytes, cut: bool, w: _Window) -> str:
    if raw.endswith(b"\r\n"):
        w.crlf = True
    raw = raw.rstrip(b"\n").removesuffix(b"\r")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        # A cut line may end inside a character: that alone is no reason for the note.
        w.replaced = w.replaced or not cut or "\ufffd" in text[:-1]
    if cut or len(text) > MAX_LINE_CHARS:
        w.cut = True
        text = text[:MAX_LINE_CHARS] + " …[line cut]"
    return text
