"""The session's task list, shown to front ends as a plan (the tools `todo_write` /
`todo_read` that change and read it are `rawtrio.tools.todo_tools`).

The session owns one `Plan`. `todo_write` replaces the whole list (the model sends every
item each time, which keeps the protocol simple and idempotent); `Plan.set` then calls the
session's `on_change` — persist with `store.set_state(session_id, "todos", plan_to_json(
items))` and emit a plan event — in a shielded, bounded scope, so a cancel cannot leave
the stored plan and the one in memory apart.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S

STATE_KEY: Final = "todos"


class TodoStatus(enum.StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


@dataclass(frozen=True, slots=True)
class TodoItem:
    id: str
    content: str
    status: TodoStatus


OnChange = Callable[[tuple[TodoItem, ...]], Awaitable[None]]


class Plan:
    """The task list of one session; `on_change` persists it and tells front ends."""

    def __init__(self, items: Sequence[TodoItem] = (), *, on_change: OnChange | None = None):
        self._items = tuple(items)
        self._on_change = on_change

    async def get(self) -> tuple[TodoItem, ...]:
        await trio.lowlevel.checkpoint()
        return self._items

    async def set(self, items: Sequence[TodoItem]) -> None:
        self._items = tuple(items)
        with trio.move_on_after(CLEANUP_DEADLINE_S) as scope:
            scope.shield = True
            if self._on_change is not None:
                await self._on_change(self._items)


def plan_to_json(items: Sequence[TodoItem]) -> list[dict[str, str]]:
    return [{"id": i.id, "content": i.content, "status": str(i.status)} for i in items]


def plan_from_json(value: Any) -> tuple[TodoItem, ...]:
    """Items from stored JSON; None or malformed entries give an empty/shorter list."""
    if not isinstance(value, list):
        return ()
    items = []
    for raw in value:
        try:
            items.append(TodoItem(str(raw["id"]), str(raw["content"]), TodoStatus(raw["status"])))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(items)
