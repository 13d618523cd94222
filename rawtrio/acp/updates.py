"""Session events as ACP `session/update` payloads, live and for `session/load` replay.

| rawtrio event | ACP update |
|---|---|
| `user_message` | `user_message_chunk` (replay, and live to connections other than the prompter) |
| `text_delta` / `thinking_delta` | `agent_message_chunk` / `agent_thought_chunk` |
| `tool_call_announced` | `tool_call` (status `pending`, title = tool name) |
| `assistant_message` (its calls) | `tool_call_update` with title, kind, locations, `rawInput` |
| `stream_interrupted` | `tool_call_update` `failed` for calls announced by the cut stream |
| `tool_call_started` | `tool_call_update` `in_progress` |
| `tool_output_delta` | `tool_call_update` with the output so far (its tail) as content |
| `tool_call_finished` | `tool_call_update` `completed` (`ok`) or `failed` (any other status, |
|   | named in `rawOutput.status`); content = the result, plus a diff for edits |
| `plan_updated` | `plan` |
| `mode_changed` | `current_mode_update` (and `config_option_update`, live) |
| `model_changed` | `config_option_update` (live) |
| `usage` (with context figures) | `usage_update` |
| `notice` (warning, in a turn) | an `agent_thought_chunk` of its own (`<turn>-notice-<seq>`) |

Message ids are derived from the turn id and step (`<turn>-user`, `<turn>-<step>`,
`<turn>-<step>-thought`), so a replay gives the same ids as the live stream did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus
from rawtrio.frozen import thaw
from rawtrio.permissions.summary import summarize_call

#: How much live tool output a `tool_call_update` carries (its tail).
OUTPUT_TAIL: Final = 16_000

_KINDS: Final = {
    "read_file": "read",
    "list_dir": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "glob": "search",
    "grep": "search",
    "bash": "execute",
    "bash_output": "execute",
    "bash_stop": "execute",
    "todo_write": "think",
    "todo_read": "think",
    "load_skill": "read",
}


def tool_kind(tool_id: str) -> str:
    return _KINDS.get(tool_id, "fetch" if tool_id.startswith("mcp") else "other")


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


class UpdateMapper:
    """Turns one session's events, in order, into `session/update` payloads."""

    def __init__(self, cwd: str | Path) -> None:
        self.cwd = Path(cwd)
        self._args: dict[str, Mapping[str, Any]] = {}
        self._tool_ids: dict[str, str] = {}
        self._announced: dict[str, str] = {}  # call id → name, announced, not committed
        self._output: dict[str, str] = {}
        #: Calls whose command runs in an editor terminal (it shows the live output).
        self.terminals: dict[str, str] = {}

    def updates(self, event: ev.Event, *, include_user: bool = True) -> list[dict[str, Any]]:
        turn = event.turn_id or "session"
        if isinstance(event, ev.UserMessageCommitted):
            if not include_user:
                return []
            return [_chunk("user_message_chunk", event.text, f"{turn}-user")]
        if isinstance(event, ev.TextDelta):
            return [_chunk("agent_message_chunk", event.text, f"{turn}-{event.step}")]
        if isinstance(event, ev.ThinkingDelta):
            return [_chunk("agent_thought_chunk", event.text, f"{turn}-{event.step}-thought")]
        if isinstance(event, ev.Notice) and event.turn_id and event.level != "info":
            # ACP has no notice update: a warning during a turn (a request being retried)
            # is a thought of its own, so the editor shows it without touching the reply.
            return [
                _chunk("agent_thought_chunk", f"[{event.text}]\n", f"{turn}-notice-{event.seq}")
            ]
        if isinstance(event, ev.ToolCallAnnounced):
            self._announced[event.call_id] = event.name
            return [
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": event.call_id,
                    "title": event.name,
                    "kind": tool_kind(event.name),
                    "status": "pending",
                }
            ]
        if isinstance(event, ev.AssistantMessageCommitted):
            return [self._committed_call(cid, name, args) for cid, name, args in event.tool_calls]
        if isinstance(event, ev.StreamInterrupted):
            cut = [
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": cid,
                    "status": "failed",
                    "content": [_content(f"not run: the reply was cut ({event.reason})")],
                    "rawOutput": {"status": "cancelled", "started": False},
                }
                for cid in self._announced
            ]
            self._announced.clear()
            return cut
        if isinstance(event, ev.ToolCallStarted):
            args = _as_args(event.arguments)
            self._args[event.call_id] = args
            self._tool_ids[event.call_id] = event.tool_id
            return [
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": event.call_id,
                    "status": "in_progress",
                    "title": summarize_call(event.tool_id, args),
                    "kind": tool_kind(event.tool_id),
                    "rawInput": args,
                    "locations": self._locations(args),
                }
            ]
        if isinstance(event, ev.ToolOutputDelta):
            if event.call_id in self.terminals:
                return []
            so_far = (self._output.get(event.call_id, "") + event.text)[-OUTPUT_TAIL:]
            self._output[event.call_id] = so_far
            return [
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": event.call_id,
                    "content": [_content(so_far)],
                }
            ]
        if isinstance(event, ev.ToolCallFinished):
            return [self._finished(event)]
        if isinstance(event, ev.PlanUpdated):
            return [plan_update(thaw(event.items))]
        if isinstance(event, ev.ModeChanged):
            return [{"sessionUpdate": "current_mode_update", "currentModeId": event.mode}]
        if isinstance(event, ev.Usage):
            usage = usage_update(event)
            return [usage] if usage is not None else []
        return []

    def _committed_call(self, call_id: str, name: str, arguments: Any) -> dict[str, Any]:
        args = _as_args(arguments)
        self._args[call_id] = args
        self._tool_ids.setdefault(call_id, name)
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update" if call_id in self._announced else "tool_call",
            "toolCallId": call_id,
            "title": summarize_call(name, args),
            "kind": tool_kind(name),
            "status": "pending",
            "rawInput": args if arguments is not None else None,
            "locations": self._locations(args),
        }
        self._announced.pop(call_id, None)
        return update

    def _finished(self, event: ev.ToolCallFinished) -> dict[str, Any]:
        self._output.pop(event.call_id, None)
        args = self._args.pop(event.call_id, {})
        tool_id = self._tool_ids.pop(event.call_id, event.name)
        content: list[dict[str, Any]] = []
        terminal = self.terminals.pop(event.call_id, None)
        if terminal is not None:
            content.append({"type": "terminal", "terminalId": terminal})
        if event.status is ToolStatus.OK:
            content.extend(self._diffs(tool_id, args))
        if event.content:
            content.append(_content(event.content))
        raw: dict[str, Any] = {"status": str(event.status), "started": event.started}
        if event.denied_by is not None:
            raw["denied_by"] = str(event.denied_by)
        details = thaw(event.details)
        if details:
            raw["details"] = details
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.call_id,
            "status": "completed" if event.status is ToolStatus.OK else "failed",
            "content": content,
            "rawOutput": raw,
        }

    def _path(self, value: str) -> str:
        return str(self.cwd / value) if not Path(value).is_absolute() else value

    def _locations(self, args: Mapping[str, Any]) -> list[dict[str, Any]]:
        paths = [args.get("path")]
        files = args.get("files")
        if isinstance(files, list):
            paths += [f.get("path") for f in files if isinstance(f, dict)]
        out = []
        for p in paths:
            if isinstance(p, str) and p:
                loc: dict[str, Any] = {"path": self._path(p)}
                line = args.get("start_line") or args.get("offset")
                if isinstance(line, int) and not isinstance(line, bool) and line >= 0:
                    loc["line"] = line
                out.append(loc)
        return out

    def _diffs(self, tool_id: str, args: Mapping[str, Any]) -> list[dict[str, Any]]:
        path = args.get("path")
        if not isinstance(path, str):
            return []
        if tool_id == "write_file" and isinstance(args.get("content"), str):
            return [{"type": "diff", "path": self._path(path), "newText": args["content"]}]
        if tool_id == "edit_file" and isinstance(args.get("new_text"), str):
            old = args.get("old_text")
            return [
                {
                    "type": "diff",
                    "path": self._path(path),
                    "oldText": old if isinstance(old, str) else None,
                    "newText": args["new_text"],
                }
            ]
        return []


def _as_args(arguments: Any) -> dict[str, Any]:
    value = thaw(arguments)
    return value if isinstance(value, dict) else {}


def _chunk(kind: str, text: str, message_id: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": text_block(text), "messageId": message_id}


def _content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": text_block(text)}


_PLAN_STATUSES: Final = ("pending", "in_progress", "completed")


def plan_update(items: Any) -> dict[str, Any]:
    entries = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        status = item.get("status")
        entries.append(
            {
                "content": str(item.get("content", "")),
                "priority": "medium",
                "status": status
                if status in ("pending", "in_progress", "completed")
                else "pending",
            }
        )
    return {"sessionUpdate": "plan", "entries": entries}


def usage_update(event: ev.Usage) -> dict[str, Any] | None:
    """`usage_update` needs a known context window (`size` is required)."""
    if event.context_window is None:
        return None
    update: dict[str, Any] = {
        "sessionUpdate": "usage_update",
        "used": event.context_tokens,
        "size": event.context_window,
    }
    if event.session_cost_usd is not None:
        update["cost"] = {"amount": event.session_cost_usd, "currency": "USD"}
    return update


def replay(events: Iterable[ev.Event], cwd: str | Path) -> list[dict[str, Any]]:
    """The display history as updates, the chunks of each message merged into one."""
    mapper = UpdateMapper(cwd)
    out: list[dict[str, Any]] = []
    # Chunks of one message since the last other update (thinking and text may interleave).
    open_messages: dict[str, dict[str, Any]] = {}
    for event in events:
        for update in mapper.updates(event):
            last = out[-1] if out else None
            message = open_messages.get(update.get("messageId", ""))
            if message is not None and message["sessionUpdate"] == update["sessionUpdate"]:
                text = message["content"]["text"] + update["content"]["text"]
                message["content"] = text_block(text)
            elif "messageId" in update:
                open_messages[update["messageId"]] = update
                out.append(update)
            elif (
                last is not None
                and update["sessionUpdate"] == "tool_call_update"
                and last["sessionUpdate"] in ("tool_call", "tool_call_update")
                and last["toolCallId"] == update["toolCallId"]
            ):
                last.update({k: v for k, v in update.items() if k != "sessionUpdate"})
                open_messages.clear()
            else:
                out.append(update)
                open_messages.clear()
    return out
