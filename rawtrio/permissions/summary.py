"""One human line for a tool call, shown with an approval request.

The summary names what will happen ("Run `git push`", "Edit src/app.py (2 edits)"), never
the whole argument blob; front ends can still show the arguments in full. Secrets are
redacted when a `redact` function is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from rawtrio.frozen import thaw

MAX_SUMMARY: Final = 200


def key_value(arguments: Mapping[str, Any], key_argument: str | None) -> str | None:
    """The tool's key argument (e.g. `command`) when it is a string."""
    if key_argument is None:
        return None
    value = arguments.get(key_argument)
    return value if isinstance(value, str) else None


def summarize_call(
    tool_id: str,
    arguments: Mapping[str, Any],
    *,
    key_argument: str | None = None,
    redact: Callable[[str], str] | None = None,
    limit: int = MAX_SUMMARY,
) -> str:
    text = _summary(tool_id, arguments, key_argument)
    if redact is not None:
        text = redact(text)
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _summary(tool_id: str, arguments: Mapping[str, Any], key_argument: str | None) -> str:
    path = arguments.get("path")
    if tool_id == "bash" and isinstance(arguments.get("command"), str):
        return f"Run `{arguments['command']}`"
    if tool_id == "write_file" and isinstance(path, str):
        content = arguments.get("content")
        size = f" ({len(content)} characters)" if isinstance(content, str) else ""
        return f"Write {path}{size}"
    if tool_id == "edit_file" and isinstance(path, str):
        edits = arguments.get("edits")
        count = (
            f" ({len(edits)} edit{'s' if len(edits) != 1 else ''})"
            if isinstance(edits, list | tuple)
            else ""
        )
        return f"Edit {path}{count}"
    if tool_id in ("read_file", "list_dir") and isinstance(path, str):
        return f"{'Read' if tool_id == 'read_file' else 'List'} {path}"
    key = key_value(arguments, key_argument)
    if key is not None:
        return f"{tool_id}: {key}"
    shown = ", ".join(f"{k}={_short(v)}" for k, v in arguments.items())
    return f"{tool_id}({shown})"


def _short(value: Any) -> str:
    try:
        text = json.dumps(thaw(value), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
