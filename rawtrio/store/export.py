"""Exporting a session: JSON (complete, machine-readable) and Markdown (for people).

Both are pure functions of a session's record, model context and display history, so
every store exports the same way. JSON carries `{"format": "rawtrio-session", "version":
1, "session": …, "context": [messages], "history": [stream-json events]}`. Markdown
renders what the user saw: prompts, replies (with interrupted partial text marked as
such), tool calls with inputs and outputs, permission decisions, notices and outcomes;
streaming deltas are folded into the messages they became.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from rawtrio import events as ev
from rawtrio.frozen import thaw
from rawtrio.messages import Message, message_to_json
from rawtrio.store.base import ExportFormat, SessionRecord

EXPORT_VERSION = 1


def export(
    fmt: ExportFormat,
    record: SessionRecord,
    context: Sequence[Message],
    history: Sequence[ev.Event],
) -> str:
    if fmt == "json":
        return to_json(record, context, history)
    if fmt == "markdown":
        return to_markdown(record, history)
    raise ValueError(f"unknown export format {fmt!r}: expected 'json' or 'markdown'")


def to_json(record: SessionRecord, context: Sequence[Message], history: Sequence[ev.Event]) -> str:
    data: dict[str, Any] = {
        "format": "rawtrio-session",
        "version": EXPORT_VERSION,
        "session": dataclasses.asdict(record),
        "context": [message_to_json(m) for m in context],
        "history": [ev.event_to_json(e) for e in history],
    }
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _stamp(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _fence(text: str, info: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def to_markdown(record: SessionRecord, history: Sequence[ev.Event]) -> str:
    out = [
        f"# {record.title or 'Untitled session'}",
        "",
        f"- session: `{record.id}`",
        f"- directory: `{record.cwd}`",
        f"- model: {record.provider} / {record.model}",
        f"- created: {_stamp(record.created_at)}, updated: {_stamp(record.updated_at)}",
        "",
    ]
    for e in history:
        out.extend(_render(e))
    return "\n".join(out).rstrip() + "\n"


def _render(e: ev.Event) -> list[str]:
    if isinstance(e, ev.UserMessageCommitted):
        return ["## You", "", e.text, ""]
    if isinstance(e, ev.AssistantMessageCommitted):
        lines = ["## Assistant", ""]
        if e.text:
            lines += [e.text, ""]
        for call_id, name, args in e.tool_calls:
            lines += [f"**Tool call** `{name}` (`{call_id}`)", ""]
            lines += [_fence(json.dumps(thaw(args), indent=2, ensure_ascii=False), "json"), ""]
        return lines
    if isinstance(e, ev.StreamInterrupted):
        return [
            "## Assistant (interrupted)",
            "",
            e.partial_text or "_(no text yet)_",
            "",
            f"_The reply was cut off ({e.reason}) and was not kept for the model._",
            "",
        ]
    if isinstance(e, ev.ToolCallFinished):
        by = f" by {e.denied_by}" if e.denied_by else ""
        return [
            f"**Result** of `{e.name}` (`{e.call_id}`): {e.status}{by}",
            "",
            _fence(e.content),
            "",
        ]
    if isinstance(e, ev.PermissionRequested):
        return [f"_Permission asked for `{e.tool_id}` (`{e.call_id}`)._", ""]
    if isinstance(e, ev.PermissionAnswered):
        return [f"_Permission for `{e.call_id}`: {e.decision}._", ""]
    if isinstance(e, ev.Notice):
        return [f"> **{e.level}:** {e.text}", ""]
    if isinstance(e, ev.TurnEnded):
        return [f"_Turn ended: {e.outcome} ({e.reason})._", "", "---", ""]
    return []
