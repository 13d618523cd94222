"""`todo_write` / `todo_read`: the model's tools on the session's task list (the `Plan` of
`rawtrio.tools.todo`, given to a call as `ToolContext.plan`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.todo import TodoItem, TodoStatus, plan_to_json

MAX_ITEMS: Final = 100

WRITE_DESCRIPTION: Final = """\
Replace the session's task list (the plan the user sees) with the list you send.

Use it for work with several steps: write the steps first, mark one `in_progress` before \
you start on it, and mark it `completed` as soon as it is done (then the next one \
`in_progress`). Send every item each time, including completed ones; items you leave out \
are removed. Skip it for trivial one-step requests.
"""

READ_DESCRIPTION: Final = "Show the session's current task list with each item's status."

_WRITE_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "maxItems": MAX_ITEMS,
            "description": "The complete new task list, in order.",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "description": "The task."},
                    "status": {"type": "string", "enum": [str(s) for s in TodoStatus]},
                    "id": {"type": "string", "minLength": 1, "description": "Optional id."},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}

_MARKS: Final = {
    TodoStatus.PENDING: "[ ]",
    TodoStatus.IN_PROGRESS: "[~]",
    TodoStatus.COMPLETED: "[x]",
}


def todo_write_tool() -> Tool:
    return Tool(
        id="todo_write",
        description=WRITE_DESCRIPTION,
        input_schema=freeze(_WRITE_SCHEMA),
        handler=_write,
    )


def todo_read_tool() -> Tool:
    return Tool(
        id="todo_read",
        description=READ_DESCRIPTION,
        input_schema=freeze({"type": "object", "properties": {}, "additionalProperties": False}),
        handler=_read,
        read_only=True,
    )


async def _write(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    if ctx.plan is None:
        return ToolOutput.error("this session keeps no task list")
    items = []
    for n, raw in enumerate(args["todos"], start=1):
        item_id = str(raw.get("id") or n)
        items.append(TodoItem(item_id, str(raw["content"]).strip(), TodoStatus(raw["status"])))
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        return ToolOutput.error("two items share an id; give each a distinct id (or none)")
    await ctx.plan.set(items)
    text = _render(items)
    if sum(i.status is TodoStatus.IN_PROGRESS for i in items) > 1:
        text += "\n[note: more than one item is in_progress; keep one at a time]"
    return ToolOutput.ok(text, todos=plan_to_json(items))


async def _read(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    if ctx.plan is None:
        return ToolOutput.error("this session keeps no task list")
    items = await ctx.plan.get()
    return ToolOutput.ok(_render(items), todos=plan_to_json(items))


def _render(items: Sequence[TodoItem]) -> str:
    if not items:
        return "(the task list is empty)"
    done = sum(i.status is TodoStatus.COMPLETED for i in items)
    lines = [f"{_MARKS[i.status]} {i.id}. {i.content}" for i in items]
    return "\n".join([*lines, f"[{done} of {len(items)} completed]"])
