"""The link of a `task` child to its parent in the durable store, and crash recovery of
children (they are never opened on their own: reopening the parent repairs them)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.messages import AssistantMessage, ToolCall, ToolResult, UserMessage, check_pairing
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.store.base import ParentLink
from rawtrio.store.sqlite import SqliteStore


def _new(store: SqliteStore, sid: str, parent: ParentLink | None = None) -> object:
    return store.create_session(
        session_id=sid,
        cwd="/tmp",
        system_prompt="p",
        provider="anthropic",
        model="m",
        title=sid,
        parent=parent,
    )


async def _cut_call(store: SqliteStore, sid: str, turn: str, call_id: str, name: str) -> None:
    """A turn whose call started and then the process died (no result, no outcome)."""
    await store.begin_turn(sid, turn, None)
    call = ToolCall(call_id, name, "{}", freeze({}))
    await store.commit(sid, turn, [UserMessage("do it"), AssistantMessage((call,))])
    await store.mark_call_started(sid, turn, call_id)


async def test_children_are_linked_listed_under_their_parent_and_not_top_level(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "s.db") as store:
        await _new(store, "parent")  # type: ignore[misc]
        await _new(store, "child", ParentLink("parent", "call_1", 1))  # type: ignore[misc]
        await _new(store, "grandchild", ParentLink("child", "call_2", 2))  # type: ignore[misc]
        assert [r.id for r in await store.list_sessions()] == ["parent"]
        [child] = await store.list_children("parent")
        assert (child.id, child.parent_id, child.parent_call_id, child.depth) == (
            "child",
            "parent",
            "call_1",
            1,
        )
        assert [r.id for r in await store.list_children("child")] == ["grandchild"]
        assert (await store.get_session("parent")).parent_id is None
    columns = {
        r[1] for r in sqlite3.connect(tmp_path / "s.db").execute("PRAGMA table_info(sessions)")
    }
    assert {"parent_id", "parent_call_id", "depth"} <= columns


async def test_reopening_the_parent_repairs_its_children_after_a_crash(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as store:
        await _new(store, "parent")  # type: ignore[misc]
        await _cut_call(store, "parent", "t1", "call_task", "task")
        await _new(store, "child", ParentLink("parent", "call_task", 1))  # type: ignore[misc]
        await _cut_call(store, "child", "t2", "call_bash", "bash")
        # The process "dies": leases are dropped with it, nothing else is written.
    async with SqliteStore(db) as store, open_runtime(store) as runtime:
        options = SessionOptions(
            cwd=tmp_path, provider=ProviderSettings(kind="anthropic", model="m", api_key="k")
        )
        session = await runtime.open_session("parent", options)
        parent_results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in parent_results] == [ToolStatus.OUTCOME_UNKNOWN]
        child_context = await store.load_context("child")
        assert check_pairing(child_context) == []
        child_results = [m for m in child_context if isinstance(m, ToolResult)]
        assert [r.status for r in child_results] == [ToolStatus.OUTCOME_UNKNOWN]
        await session.close()


async def test_deleting_a_session_deletes_its_children(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as store, open_runtime(store) as runtime:
        await _new(store, "parent")  # type: ignore[misc]
        await _new(store, "child", ParentLink("parent", "call_1", 1))  # type: ignore[misc]
        await _new(store, "grandchild", ParentLink("child", "call_2", 2))  # type: ignore[misc]
        for sid in ("parent", "child", "grandchild"):
            await store.close_session(sid)
        await runtime.delete_session("parent")
        assert await store.list_children("parent") == []
        assert await store.list_children("child") == []
        assert await store.list_sessions() == []
