"""Session events as ACP `session/update` payloads, live and for `session/load` replay.

The events are folded into the transcript view (`rawtrio.runtime.view`); each change of a
view item becomes the update below (the table names the events behind each change).

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
|   | and, for `bash` / MCP calls, a diff per file the call changed (`file_changes`) |
| `plan_updated` | `plan` |
| `mode_changed` | `current_mode_update` (and `config_option_update`, live) |
| `model_changed` | `config_option_update` (live) |
| `usage` (with context figures) | `usage_update` |
| `notice` (in a turn, any level) | an `agent_thought_chunk` of its own (`<turn>-notice-<seq>`): |
|   | a retried request, a Stop hook's message to the model, what the turn changed |
|   | (the checkpoint summary, without the chat's `/diff` / `/undo` hint) |

Message ids are derived from the turn id and step (`<turn>-user`, `<turn>-<step>`,
`<turn>-<step>-thought`), so a replay gives the same ids as the live stream did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus
from rawtrio.frozen import thaw
from rawtrio.permissions.summary import summarize_call
from rawtrio.runtime.view import (
    Change,
    ChangeKind,
    MessageView,
    ModeView,
    NoticeView,
    PlanEntry,
    PlanView,
    ThinkingView,
    ToolCallView,
    ToolPhase,
    TranscriptView,
    UserView,
)

#: The turn-end checkpoint notice's pointer to the chat's commands, which an editor does
#: not have (rawtrio.runtime.session: `… — checkpoint K; /diff shows them, /undo …`).
CHAT_HINT: Final = "; /diff shows them, /undo puts them back"

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
    """Turns one session's events, in order, into `session/update` payloads: it folds them
    into the transcript view and sends what changed."""

    def __init__(self, cwd: str | Path) -> None:
        self.cwd = Path(cwd)
        self._view = TranscriptView(retain=False)
        #: Calls whose command runs in an editor terminal (it shows the live output).
        self.terminals: dict[str, str] = {}

    def updates(self, event: ev.Event, *, include_user: bool = True) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for change in self._view.apply(event):
            out += self._updates(change, include_user)
        if isinstance(event, ev.Usage):  # not part of the transcript
            usage = usage_update(event)
            if usage is not None:
                out.append(usage)
        return out

    def _updates(self, change: Change, include_user: bool) -> list[dict[str, Any]]:
        item = change.item
        turn = item.turn_id or "session"
        if isinstance(item, MessageView):
            if item.final:  # committed or cut: the editor has the chunks already
                return []
            return [_chunk("agent_message_chunk", change.appended, f"{turn}-{item.step}")]
        if isinstance(item, ThinkingView):
            return [_chunk("agent_thought_chunk", change.appended, f"{turn}-{item.step}-thought")]
        if isinstance(item, ToolCallView):
            return self._tool_updates(change, item)
        if isinstance(item, UserView):
            return [_chunk("user_message_chunk", item.text, f"{turn}-user")] if include_user else []
        if isinstance(item, NoticeView) and item.turn_id:
            # ACP has no notice update: a notice of a turn (a request being retried, what
            # the turn changed) is a thought of its own, so the editor shows it without
            # touching the reply. Notices outside a turn have no prompt to belong to.
            text = item.text.replace(CHAT_HINT, "")
            return [_chunk("agent_thought_chunk", f"[{text}]\n", f"{turn}-notice-{item.seq}")]
        if isinstance(item, PlanView):
            return [plan_update(item.entries)]
        if isinstance(item, ModeView):
            return [{"sessionUpdate": "current_mode_update", "currentModeId": item.mode}]
        return []

    def _tool_updates(self, change: Change, item: ToolCallView) -> list[dict[str, Any]]:
        if change.kind is ChangeKind.REMOVED:  # announced by a stream that was cut
            return [
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": item.call_id,
                    "status": "failed",
                    "content": [_content(f"not run: the reply was cut ({item.dropped})")],
                    "rawOutput": {"status": "cancelled", "started": False},
                }
            ]
        if change.committed_now:
            return [self._committed_call(change, item)]
        if change.kind is ChangeKind.ADDED and item.phase is ToolPhase.ANNOUNCED:
            return [
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": item.call_id,
                    "title": item.name,
                    "kind": tool_kind(item.name),
                    "status": "pending",
                }
            ]
        if change.entered(ToolPhase.RUNNING) and item.started_at is not None:
            args = item.args
            return [
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": item.call_id,
                    "status": "in_progress",
                    "title": summarize_call(item.tool_id, args),
                    "kind": tool_kind(item.tool_id),
                    "rawInput": args,
                    "locations": self._locations(args),
                }
            ]
        if change.appended:
            if item.call_id in self.terminals:
                return []
            return [
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": item.call_id,
                    "content": [_content(item.output[-OUTPUT_TAIL:])],
                }
            ]
        if change.entered(ToolPhase.FINISHED):
            return [self._finished(item)]
        return []

    def _committed_call(self, change: Change, item: ToolCallView) -> dict[str, Any]:
        args = item.args
        return {
            "sessionUpdate": "tool_call" if change.before is None else "tool_call_update",
            "toolCallId": item.call_id,
            "title": summarize_call(item.name, args),
            "kind": tool_kind(item.name),
            "status": "pending",
            "rawInput": args if item.arguments is not None else None,
            "locations": self._locations(args),
        }

    def _finished(self, item: ToolCallView) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        terminal = self.terminals.pop(item.call_id, None)
        if terminal is not None:
            content.append({"type": "terminal", "terminalId": terminal})
        if item.diff is not None:
            diff = item.diff
            update: dict[str, Any] = {"type": "diff", "path": self._path(diff.path)}
            if item.tool_id != "write_file":
                update["oldText"] = diff.old_text
            update["newText"] = diff.new_text
            content.append(update)
        if item.content:
            content.append(_content(item.content))
        details = thaw(item.details)
        if isinstance(details, dict) and "file_changes" in details:
            content += file_change_content(details, self._path)
            details = without_texts(details)
        raw: dict[str, Any] = {"status": str(item.status), "started": item.started}
        if item.denied_by is not None:
            raw["denied_by"] = str(item.denied_by)
        if details:
            raw["details"] = details
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": item.call_id,
            "status": "completed" if item.status is ToolStatus.OK else "failed",
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


def file_change_content(
    details: Mapping[str, Any], path_of: Callable[[str], str]
) -> list[dict[str, Any]]:
    """The files a `bash` or MCP call changed (its result's `details["file_changes"]`,
    rawtrio.checkpoints.diff.call_changes) as ACP content: a `diff` per text file (no
    `oldText` for a created file), then one text block for what has no diff (deleted,
    binary, too large, mode changes, files past the cap)."""
    out: list[dict[str, Any]] = []
    said: list[str] = []
    entries = details.get("file_changes")
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("path"), str):
            continue
        path, note = entry["path"], entry.get("note")
        if isinstance(entry.get("new_text"), str):
            diff: dict[str, Any] = {"type": "diff", "path": path_of(path)}
            if isinstance(entry.get("old_text"), str):
                diff["oldText"] = entry["old_text"]
            diff["newText"] = entry["new_text"]
            out.append(diff)
            if note:
                said.append(f"{path}: {note}")
        elif entry.get("kind") in ("deleted", "mode"):
            said.append(f"{path}: {note or entry.get('kind')}")
        else:
            said.append(f"{path}: {entry.get('kind')}, {note or 'not shown'}")
    left_out = details.get("file_changes_left_out")
    if isinstance(left_out, int) and left_out > 0:
        said.append(f"and {left_out} more changed file(s), not listed")
    if said:
        lines = "\n".join(f"  {line}" for line in said)
        out.append(_content(f"files this call changed, not shown as diffs:\n{lines}"))
    return out


def without_texts(details: dict[str, Any]) -> dict[str, Any]:
    """`details` for `rawOutput`: the file texts are in the content already."""
    entries = details.get("file_changes")
    if not isinstance(entries, list):
        return details
    kept = [
        {k: v for k, v in e.items() if k not in ("old_text", "new_text")}
        for e in entries
        if isinstance(e, dict)
    ]
    return {**details, "file_changes": kept}


def _chunk(kind: str, text: str, message_id: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": text_block(text), "messageId": message_id}


def _content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": text_block(text)}


_PLAN_STATUSES: Final = ("pending", "in_progress", "completed")


def plan_update(entries: Iterable[PlanEntry]) -> dict[str, Any]:
    return {
        "sessionUpdate": "plan",
        "entries": [
            {
                "content": entry.content,
                "priority": "medium",
                "status": entry.status if entry.status in _PLAN_STATUSES else "pending",
            }
            for entry in entries
        ],
    }


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
