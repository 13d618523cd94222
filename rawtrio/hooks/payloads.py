"""The event-specific part of a hook's stdin, one builder per event.

Field names are Claude Code's where it has the field (`tool_name`, `tool_input`,
`tool_use_id`, `tool_response`, `prompt`, `source`, `trigger`, `custom_instructions`,
`stop_hook_active`, `reason`), so its hook scripts read them unchanged. `tool_name` is the
rawtrio tool id (`bash`, `edit_file`, `mcp/github/create_issue`), not Claude Code's tool
name; docs/hooks.md has the table. `HookRunner` adds `session_id`, `cwd` and
`hook_event_name` to every payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rawtrio.frozen import FrozenJSON, thaw

Payload = dict[str, Any]


def session_start(source: Literal["startup", "resume", "clear", "compact"]) -> Payload:
    return {"source": source}


def user_prompt_submit(prompt: str) -> Payload:
    return {"prompt": prompt}


def pre_tool_use(tool_id: str, tool_input: FrozenJSON, call_id: str) -> Payload:
    return _tool(tool_id, tool_input, call_id)


def permission_request(tool_id: str, tool_input: FrozenJSON, call_id: str) -> Payload:
    return _tool(tool_id, tool_input, call_id)


def post_tool_use(
    tool_id: str,
    tool_input: FrozenJSON,
    call_id: str,
    *,
    status: str,
    content: str,
    details: Mapping[str, Any] | None = None,
) -> Payload:
    """After a call that ended `ok`."""
    response = {"status": status, "content": content, "details": thaw(details or {})}
    return {**_tool(tool_id, tool_input, call_id), "tool_response": response}


def post_tool_use_failure(
    tool_id: str,
    tool_input: FrozenJSON,
    call_id: str,
    *,
    status: str,
    error: str,
) -> Payload:
    """After a call that ran and did not end `ok` (`error`, `timed_out`)."""
    return {**_tool(tool_id, tool_input, call_id), "status": status, "error": error}


def pre_compact(trigger: Literal["manual", "auto"], custom_instructions: str = "") -> Payload:
    return {"trigger": trigger, "custom_instructions": custom_instructions}


def stop(*, stop_hook_active: bool, last_assistant_message: str = "") -> Payload:
    """When the model answered without tool calls. `stop_hook_active` is true when the turn
    is already going on because a Stop hook blocked the previous stop (avoid loops)."""
    return {"stop_hook_active": stop_hook_active, "last_assistant_message": last_assistant_message}


def interrupt(*, turn_id: str, reason: str) -> Payload:
    return {"turn_id": turn_id, "reason": reason}


def subagent_start(
    *, call_id: str, description: str, agent: str | None, child_session_id: str, depth: int
) -> Payload:
    return {
        "tool_use_id": call_id,
        "description": description,
        "agent": agent,
        "child_session_id": child_session_id,
        "depth": depth,
    }


def subagent_stop(*, call_id: str, child_session_id: str, outcome: str, reason: str) -> Payload:
    return {
        "tool_use_id": call_id,
        "child_session_id": child_session_id,
        "outcome": outcome,
        "reason": reason,
    }


def session_end(reason: str) -> Payload:
    return {"reason": reason}


def _tool(tool_id: str, tool_input: FrozenJSON, call_id: str) -> Payload:
    return {
        "tool_name": tool_id,
        "tool_input": thaw(tool_input) if tool_input is not None else None,
        "tool_use_id": call_id,
    }
