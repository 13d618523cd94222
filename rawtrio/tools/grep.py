"""The `grep` tool: search file contents with a regular expression, .gitignore honoured.

Files are read whole (up to `MAX_FILE_BYTES`) and tested with one `search` over the text
before any line splitting, so the common case — a file without a match — costs one read
and one regex scan in C. Binary files (a NUL byte near the start) are skipped. Output is
bounded by match count and the output cap, and the result counts what was left out.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import FileToolError, describe_os_error, display_path, is_binary
from rawtrio.tools.paths import resolve_path
from rawtrio.tools.walk import Walker, glob_matches

DEFAULT_MAX_MATCHES: Final = 200
MAX_FILE_BYTES: Final = 20 * 1024 * 1024
MAX_LINE_CHARS: Final = 300
MODES: Final = ("content", "files_with_matches", "count")

DESCRIPTION: Final = f"""\
Search file contents for a regular expression (Python `re` syntax, applied line by line) \
and return the matching lines as `path:line: text`.

- `path` (default: the working directory) may be a directory or a single file.
- `glob` limits which files are searched, e.g. "*.py" or ["src/**/*.ts", "!*.d.ts"].
- `mode`: "content" (default) lists matching lines; "files_with_matches" lists only the \
files; "count" gives the number of matching lines per file.
- `context` adds that many lines before and after each match; `ignore_case` ignores case.
- Files ignored by .gitignore, binary files and files over {MAX_FILE_BYTES // 2**20} MiB \
are skipped; the result says how many.
- At most `max_matches` (default {DEFAULT_MAX_MATCHES}) lines are returned; the result \
counts the rest. Escape regex characters such as `(`, `[`, `.` to match them literally.
"""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "minLength": 1, "description": "The regular expression."},
        "path": {"type": "string", "minLength": 1, "description": "Directory or file."},
        "glob": {
            "description": "File glob(s) to include; a leading ! excludes.",
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
            ],
        },
        "mode": {"type": "string", "enum": list(MODES), "description": "What to return."},
        "ignore_case": {"type": "boolean", "description": "Case-insensitive (default false)."},
        "context": {
            "type": "integer",
            "minimum": 0,
            "maximum": 10,
            "description": "Lines of context around each match (default 0).",
        },
        "max_matches": {
            "type": "integer",
            "minimum": 1,
            "maximum": 5000,
            "description": f"Most matching lines to return (default {DEFAULT_MAX_MATCHES}).",
        },
        "include_ignored": {
            "type": "boolean",
            "description": "Also search files that .gitignore ignores (default false).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def grep_tool() -> Tool:
    return Tool(
        id="grep",
        description=DESCRIPTION,
        input_schema=freeze(_SCHEMA),
        handler=_handle,
        read_only=True,
        key_argument="pattern",
    )


@dataclass
class _Search:
    regex: re.Pattern[str]
    globs: tuple[str, ...]
    mode: str
    context: int
    max_matches: int
    cap: int
    lines: list[str] = field(default_factory=list)
    size: int = 0
    matches: int = 0
    shown: int = 0
    files_matched: int = 0
    files_searched: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    unreadable: int = 0

    def add(self, line: str) -> bool:
        """Keep a line of output unless the cap is reached; whether it was kept."""
        if self.size + len(line) + 1 > self.cap:
            return False
        self.lines.append(line)
        self.size += len(line) + 1
        return True


async def _handle(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    flags = re.MULTILINE | (re.IGNORECASE if args.get("ignore_case") else 0)
    try:
        regex = re.compile(str(args["pattern"]), flags)
    except re.error as e:
        return ToolOutput.error(
            f"the pattern does not compile: {e}; use Python regex syntax and escape "
            f"special characters (e.g. \\( \\[ \\.) to match them literally"
        )
    globs = args.get("glob") or ()
    search = _Search(
        regex=regex,
        globs=(globs,) if isinstance(globs, str) else tuple(globs),
        mode=str(args.get("mode") or "content"),
        context=int(args.get("context") or 0),
        max_matches=int(args.get("max_matches") or DEFAULT_MAX_MATCHES),
        cap=ctx.settings.output_cap,
    )
    raw = str(args.get("path") or ".")
    shown = raw
    try:
        root = resolve_path(raw, ctx.cwd, confine=ctx.settings.confine)
        shown = display_path(root, ctx.cwd)
        gitignore = not bool(args.get("include_ignored", False))
        run = functools.partial(_run, search, root, ctx.cwd, gitignore)
        ignored = await trio.to_thread.run_sync(run)
    except FileToolError as e:
        return ToolOutput.error(str(e))
    except OSError as e:
        return ToolOutput.error(describe_os_error(e, shown))
    return _render(search, shown, ignored)


def _run(search: _Search, root: Path, cwd: Path, gitignore: bool) -> int:
    if root.is_file():
        _search_file(search, str(root), display_path(root, cwd))
        return 0
    if not root.is_dir():
        raise FileNotFoundError(2, "No such file or directory", str(root))
    walker = Walker(root, gitignore=gitignore)
    for entry in walker:
        if entry.is_dir or entry.is_symlink:
            continue
        if search.globs and not glob_matches(search.globs, entry.rel):
            continue
        _search_file(search, entry.path, display_path(Path(entry.path), cwd))
    return walker.skipped_ignored


def _search_file(search: _Search, path: str, shown: str) -> None:
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_FILE_BYTES:
                search.skipped_large += 1
                return
            data = f.read()
    except OSError:
        search.unreadable += 1
        return
    if is_binary(data):
        search.skipped_binary += 1
        return
    search.files_searched += 1
    text = data.decode("utf-8", errors="replace")
    if search.regex.search(text) is None:
        return
    search.files_matched += 1
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if search.regex.search(line)]
    search.matches += len(hits)
    if search.mode == "files_with_matches":
        search.shown += search.add(shown)
        return
    if search.mode == "count":
        search.shown += search.add(f"{shown}: {len(hits)}")
        return
    _add_content(search, shown, lines, hits)


def _add_content(search: _Search, shown: str, lines: list[str], hits: list[int]) -> None:
    wanted: dict[int, bool] = {}
    for i in hits:
        if search.shown >= search.max_matches:
            break
        search.shown += 1
        for j in range(max(0, i - search.context), min(len(lines), i + search.context + 1)):
            wanted[j] = wanted.get(j, False) or j == i
    previous = -2
    for j in sorted(wanted):
        if search.context and previous >= 0 and j != previous + 1:
            search.add("--")
        previous = j
        text = lines[j]
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + " …[cut]"
        sep = ":" if wanted[j] else "-"
        if not search.add(f"{shown}{sep}{j + 1}{sep} {text}"):
            return


def _render(s: _Search, shown: str, ignored: int) -> ToolOutput:
    notes = []
    if s.matches == 0:
        notes.append(f"no matches for {s.regex.pattern!r} in {shown}")
    unit = "matching lines" if s.mode != "files_with_matches" else "files"
    total = s.matches if s.mode == "content" else s.files_matched
    if s.mode == "content" and s.shown < s.matches:
        notes.append(f"[{s.matches - s.shown} more {unit} not shown; narrow the search]")
    elif s.mode != "content" and s.shown < s.files_matched:
        notes.append(f"[{s.files_matched - s.shown} more files not shown]")
    if s.size >= s.cap * 0.95:
        notes.append("[output size limit reached; some lines were left out]")
    skipped = [
        f"{n} {what}"
        for n, what in (
            (ignored, "ignored by .gitignore"),
            (s.skipped_binary, "binary"),
            (s.skipped_large, "too large"),
            (s.unreadable, "unreadable"),
        )
        if n
    ]
    if skipped:
        notes.append(f"[skipped files: {', '.join(skipped)}]")
    summary = f"[{s.matches} matching lines in {s.files_matched} of {s.files_searched} files]"
    if s.matches:
        notes.append(summary)
    return ToolOutput.ok(
        "\n".join(s.lines + notes),
        matches=s.matches,
        files_matched=s.files_matched,
        files_searched=s.files_searched,
        shown=s.shown,
        total=total,
        skipped_binary=s.skipped_binary,
        skipped_large=s.skipped_large,
        ignored=ignored,
    )
