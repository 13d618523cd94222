"""Text that is not Unicode reaching the SQLite store from anywhere (an MCP server's or a
hook's JSON can spell a lone surrogate as `"\\ud800"`; a directory name that is not UTF-8
arrives as one) is stored with U+FFFD in its place: no write fails on it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.messages import AssistantMessage, Message, TextPart, ToolCall, ToolResult, UserMessage
from rawtrio.store.sqlite import SqliteStore

BAD = "\ud800"
FFFD = "\ufffd"


async def test_every_text_with_a_lone_surrogate_is_stored_with_a_replacement_character(
    tmp_path: Path,
) -> None:
    db = tmp_path / "sessions.db"
    async with SqliteStore(db) as store:
        record = await store.create_session(
            session_id="s1",
            cwd=f"/work/caf{BAD}",
            system_prompt=f"You are {BAD}.",
            provider="anthropic",
            model=f"m{BAD}",
            title=f"title {BAD}",
        )
        assert record.id == "s1"
        await store.open_for_write("s1")
        await store.begin_turn("s1", "t1", f"req{BAD}")
        call = ToolCall.parse("c1", "mcp__srv__get", "{}")
        messages: list[Message] = [
            UserMessage(f"hello {BAD}"),
            AssistantMessage((TextPart("calling"), call), "anthropic"),
            ToolResult("c1", call.name, ToolStatus.OK, f"result {BAD}", details=freeze({"k": BAD})),
        ]
        await store.commit("s1", "t1", messages)
        store.record_event(
            ev.with_seq(ev.Notice(session_id="s1", turn_id="t1", level="info", text=BAD), 1)
        )
        await store.set_state("s1", "key", {f"v{BAD}": [BAD]})
        await store.end_turn("s1", "t1", TurnOutcome.ERROR, f"provider said {BAD}")
        await store.rename_session("s1", f"renamed {BAD}")
        assert store._worker.batch_errors == 0

        context = await store.load_context("s1")
        assert context == [
            UserMessage(f"hello {FFFD}"),
            messages[1],
            ToolResult(
                "c1", call.name, ToolStatus.OK, f"result {FFFD}", details=freeze({"k": FFFD})
            ),
        ]
        (notice,) = await store.events_since("s1", 0)
        assert isinstance(notice, ev.Notice)
        assert notice.text == FFFD
        assert await store.get_state("s1", "key") == {f"v{FFFD}": [FFFD]}
        turn = await store.find_turn("s1", f"req{BAD}")
        assert turn is not None
        assert turn.reason == f"provider said {FFFD}"
        (listed,) = await store.list_sessions(cwd=f"/work/caf{BAD}")
        assert (listed.title, listed.cwd, listed.system_prompt, listed.model) == (
            f"renamed {FFFD}",
            f"/work/caf{FFFD}",
            f"You are {FFFD}.",
            f"m{FFFD}",
        )

    # What is on disk is valid UTF-8 throughout: SQLite reads every text column back.
    conn = sqlite3.connect(db)
    try:
        for table, column in (("context", "body"), ("events", "body"), ("events", "text")):
            for (value,) in conn.execute(f"SELECT {column} FROM {table}"):
                assert value is None or BAD not in value
    finally:
        conn.close()
