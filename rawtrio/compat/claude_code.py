"""Claude Code's tool names, tool input shapes and matchers, for hooks written for it.

A hook read from a Claude Code settings file (`.claude/settings.json`, docs/compat.md) has
the dialect `claude-code`: it is matched against Claude Code's tool names and reads what
Claude Code would send it. This module is the one place that knows the mapping:

| rawtrio tool | Claude Code name | input as the hook sees it |
|---|---|---|
| `bash` | `Bash` | `{command, description, timeout (ms), run_in_background}` |
| `read_file` | `Read` | `{file_path (absolute), offset, limit}` |
| `write_file` | `Write` | `{file_path, content}` |
| `edit_file` | `Edit` | `{file_path, old_string, new_string, replace_all}` |
| `glob` | `Glob` | `{pattern, path}` |
| `grep` | `Grep` | `{pattern, path, glob, output_mode, -i, -C, head_limit}` |
| `list_dir` | `LS` | `{path}` |
| `todo_write`, `todo_read` | `TodoWrite`, `TodoRead` | `{todos: [{content, status, activeForm}]}` |
| `bash_output` / `bash_stop` | `BashOutput` / `KillShell` | `{bash_id}` / `{shell_id}` |
| `load_skill` | `Skill` | the arguments as they are |
| `mcp/<server>/<tool>` | `mcp__<server>__<tool>` | the arguments as they are |

Matchers follow Claude Code: `""` or `"*"` match every tool; a matcher of letters,
digits, `_` and `|` is a list of exact names (`Edit|Write`); anything else is a regular
expression that must match the whole name (`mcp__github__.*`, `Notebook.*`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

#: rawtrio tool id → Claude Code tool name (MCP tools are mapped by `claude_tool_name`).
TOOL_NAMES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "bash": "Bash",
        "read_file": "Read",
        "write_file": "Write",
        "edit_file": "Edit",
        "glob": "Glob",
        "grep": "Grep",
        "list_dir": "LS",
        "todo_write": "TodoWrite",
        "todo_read": "TodoRead",
        "bash_output": "BashOutput",
        "bash_stop": "KillShell",
        "load_skill": "Skill",
    }
)
#: Claude Code tool name → rawtrio tool id (`MultiEdit` is one more name for `edit_file`,
#: `KillBash` the former name of `KillShell`).
TOOL_IDS: Final[Mapping[str, str]] = MappingProxyType(
    {**{v: k for k, v in TOOL_NAMES.items()}, "MultiEdit": "edit_file", "KillBash": "bash_stop"}
)
#: Claude Code's tools rawtrio does not have (a command-line tool list names them with a
#: warning; Claude Code, too, accepts names of tools a session does not have).
CLAUDE_ONLY_TOOLS: Final = (
    "WebFetch",
    "WebSearch",
    "Task",
    "NotebookEdit",
    "NotebookRead",
    "ExitPlanMode",
    "SlashCommand",
)

_EXACT_NAMES: Final = re.compile(r"[A-Za-z0-9_|]+")
_MS_PER_S: Final = 1000


def claude_tool_name(tool_id: str) -> str:
    """The name Claude Code gives the tool (`bash` → `Bash`, `mcp/gh/x` → `mcp__gh__x`);
    a tool Claude Code has no name for keeps its rawtrio id."""
    if tool_id in TOOL_NAMES:
        return TOOL_NAMES[tool_id]
    if tool_id.startswith("mcp/"):
        return "mcp__" + "__".join(tool_id.split("/")[1:])
    return tool_id


def rawtrio_tool_id(name: str) -> str | None:
    """The rawtrio tool id for a Claude Code tool name, None when rawtrio has no such tool
    (`WebFetch`, `Task`, `NotebookEdit`)."""
    if name in TOOL_IDS:
        return TOOL_IDS[name]
    if name.startswith("mcp__"):
        parts = name.removeprefix("mcp__").split("__", 1)
        if all(parts):
            return "mcp/" + "/".join(parts)
    return None


def compile_matcher(matcher: str) -> re.Pattern[str] | None:
    """A Claude Code matcher as a regular expression over tool names; None matches every
    tool. Raises ValueError (naming the matcher) for an invalid regular expression."""
    text = matcher.strip()
    if text in ("", "*"):
        return None
    if _EXACT_NAMES.fullmatch(text):
        names = [re.escape(n.strip()) for n in text.split("|") if n.strip()]
        return re.compile("(?:" + "|".join(names) + ")")
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"matcher {matcher!r} is not a valid regular expression ({exc})") from None


def matches(pattern: re.Pattern[str] | None, subject: str) -> bool:
    return pattern is None or pattern.fullmatch(subject) is not None


def claude_tool_input(tool_id: str, tool_input: Any, cwd: Path) -> Any:
    """The tool input in Claude Code's shape. Fields rawtrio's tool does not have are left
    out; rawtrio-only arguments that change what the call does are kept under their own
    names (a hook that does not know them ignores them)."""
    if not isinstance(tool_input, Mapping):
        return tool_input
    args = dict(tool_input)
    shape = _SHAPES.get(tool_id)
    return shape(args, cwd) if shape is not None else args


def claude_payload(payload: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    """A hook payload (rawtrio.hooks.payloads) as a Claude Code hook reads it."""
    out = dict(payload)
    tool_id = out.get("tool_name")
    if isinstance(tool_id, str):
        out["tool_name"] = claude_tool_name(tool_id)
        if "tool_input" in out:
            out["tool_input"] = claude_tool_input(tool_id, out["tool_input"], cwd)
        response = out.get("tool_response")
        if isinstance(response, Mapping):
            out["tool_response"] = claude_tool_response(tool_id, response, out["tool_input"])
    return out


def claude_tool_response(
    tool_id: str, response: Mapping[str, Any], claude_input: Any
) -> dict[str, Any]:
    """rawtrio's `{status, content, details}` plus the fields of Claude Code's response that
    hooks read most: `success`; `stdout`, `stderr`, `interrupted` for `Bash` (rawtrio's
    output holds both streams, in order, in `stdout`); `filePath` for the file tools."""
    out = dict(response)
    out["success"] = response.get("status") == "ok"
    if tool_id == "bash":
        out.update(stdout=response.get("content", ""), stderr="", interrupted=False)
    file_path = claude_input.get("file_path") if isinstance(claude_input, Mapping) else None
    if isinstance(file_path, str):
        out["filePath"] = file_path
    return out


def _abs(path: Any, cwd: Path) -> Any:
    """Claude Code always hands hooks absolute paths."""
    if not isinstance(path, str) or not path:
        return path
    given = Path(path).expanduser()
    return str(given if given.is_absolute() else cwd / given)


def _pick(args: Mapping[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """`renames` (rawtrio name → Claude Code name) applied; other arguments kept as they are."""
    return {renames.get(k, k): v for k, v in args.items()}


def _bash(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"command": args.pop("command", ""), "description": ""}
    timeout = args.pop("timeout_s", None)
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        out["timeout"] = int(timeout * _MS_PER_S)
    if "background" in args:
        out["run_in_background"] = args.pop("background")
    return {**out, **args}


def _read(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    files = args.pop("files", None)
    if "path" not in args and isinstance(files, list | tuple) and files:
        # Several files in one call: the first is the shape Claude Code knows; all of them
        # stay under `files` (each with `file_path`).
        args = {**files[0]} if isinstance(files[0], Mapping) else args
        args["files"] = [
            _pick({**f, "path": _abs(f.get("path"), cwd)}, {"path": "file_path"})
            for f in files
            if isinstance(f, Mapping)
        ]
    out = _pick(args, {"path": "file_path"})
    out["file_path"] = _abs(out.get("file_path"), cwd)
    return out


def _write(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    out = _pick(args, {"path": "file_path"})
    out["file_path"] = _abs(out.get("file_path"), cwd)
    return out


def _edit(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    out = _pick(args, {"path": "file_path", "old_text": "old_string", "new_text": "new_string"})
    out["file_path"] = _abs(out.get("file_path"), cwd)
    if "old_string" in out:
        out.setdefault("replace_all", bool(out.get("expected_occurrences")))
    return out


def _glob(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    out = dict(args)
    if "path" in out:
        out["path"] = _abs(out["path"], cwd)
    return out


def _grep(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    out = _pick(
        args,
        {"mode": "output_mode", "ignore_case": "-i", "context": "-C", "max_matches": "head_limit"},
    )
    if "path" in out:
        out["path"] = _abs(out["path"], cwd)
    return out


def _list_dir(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    return {**args, "path": _abs(args.get("path") or ".", cwd)}


def _todo_write(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    todos = args.get("todos")
    if isinstance(todos, list | tuple):
        args["todos"] = [
            {**t, "activeForm": t.get("content", "")} if isinstance(t, Mapping) else t
            for t in todos
        ]
    return args


def _bash_output(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    return _pick(args, {"job_id": "bash_id"})


def _bash_stop(args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    return _pick(args, {"job_id": "shell_id"})


_SHAPES: Final = MappingProxyType(
    {
        "bash": _bash,
        "read_file": _read,
        "write_file": _write,
        "edit_file": _edit,
        "glob": _glob,
        "grep": _grep,
        "list_dir": _list_dir,
        "todo_write": _todo_write,
        "bash_output": _bash_output,
        "bash_stop": _bash_stop,
    }
)
