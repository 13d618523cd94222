"""Store behaviour both implementations share (the `SessionStore` contract)."""

from __future__ import annotations

import json

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.errors import UnknownSession
from rawtrio.messages import AssistantMessage, ToolResult, UserMessage, check_pairing
from rawtrio.store.base import SessionStore
from rawtrio.store.errors import InvalidCursor
from rawtrio.store.memory import MemoryStore
from rawtrio.store.sqlite import SqliteStore
from rawtrio.store.titles import title_from_prompt
from tests.store.conftest import new_session
from tests.store.transcript import write_turn

# Both stores satisfy the Protocol (checked by mypy).
_conforming: tuple[type[SessionStore], ...] = (SqliteStore, MemoryStore)


async def settled(store: SessionStore, sid: str) -> None:
    """Wait until queued display events are stored (a read runs after queued writes)."""
    await store.last_seq(sid)


async def test_unknown_session_is_a_clear_error(store: SessionStore) -> None:
    with pytest.raises(UnknownSession, match="no session with id 'nope'"):
        await store.get_session("nope")
    with pytest.raises(UnknownSession):
        await store.load_context("nope")
    with pytest.raises(UnknownSession):
        await store.history("nope")


async def test_committed_turn_reads_back_as_written(store: SessionStore) -> None:
    await new_session(store)
    seq = await write_turn(store, "s1", "t1", "fix the tests please", 0)
    context = await store.load_context("s1")
    assert [m.role for m in context] == ["user", "assistant", "tool", "tool", "assistant"]
    assert check_pairing(context) == []
    assert isinstance(context[2], ToolResult)
    assert context[2].details == {"exit": 0}
    assert await store.last_seq("s1") == seq
    record = await store.get_session("s1")
    assert record.message_count == 5
    assert record.title == "fix the tests please"


async def test_first_prompt_titles_an_untitled_session_only(store: SessionStore) -> None:
    await new_session(store, "a")
    await new_session(store, "b", title="kept")
    for sid in ("a", "b"):
        await store.begin_turn(sid, "t", None)
        await store.commit(sid, "t", [UserMessage("  refactor the\nparser")])
    assert (await store.get_session("a")).title == "refactor the"
    assert (await store.get_session("b")).title == "kept"


def test_titles_are_short_and_cut_at_a_word() -> None:
    title = title_from_prompt("please " * 30)
    assert len(title) <= 60
    assert title.endswith("please…")
    assert title_from_prompt("\n\n  ") == "untitled"


async def test_list_filters_by_cwd_newest_first(store: SessionStore) -> None:
    await new_session(store, "a", cwd="/x")
    await new_session(store, "b", cwd="/y")
    await new_session(store, "c", cwd="/x")
    await store.begin_turn("a", "t", None)
    await store.commit("a", "t", [UserMessage("hi")])
    assert [r.id for r in await store.list_sessions(cwd="/x")] == ["a", "c"]
    assert {r.id for r in await store.list_sessions()} == {"a", "b", "c"}
    assert (await store.list_sessions(cwd="/x"))[0].message_count == 1


async def test_rename_and_delete(store: SessionStore) -> None:
    await new_session(store)
    await store.rename_session("s1", "new name")
    assert (await store.get_session("s1")).title == "new name"
    await store.delete_session("s1")
    with pytest.raises(UnknownSession):
        await store.get_session("s1")
    with pytest.raises(UnknownSession):
        await store.delete_session("s1")


async def test_a_retried_request_id_finds_its_turn(store: SessionStore) -> None:
    await new_session(store)
    await store.begin_turn("s1", "t1", "req-1")
    found = await store.find_turn("s1", "req-1")
    assert found is not None
    assert found.id == "t1"
    assert await store.find_turn("s1", "req-2") is None
    await store.end_turn("s1", "t1", TurnOutcome.COMPLETED, "done")
    found = await store.find_turn("s1", "req-1")
    assert found is not None
    assert found.outcome is TurnOutcome.COMPLETED
    with pytest.raises(RuntimeError, match="already has an outcome"):
        await store.end_turn("s1", "t1", TurnOutcome.ERROR, "again")


async def test_state_values_round_trip(store: SessionStore) -> None:
    await new_session(store)
    assert await store.get_state("s1", "todos") is None
    await store.set_state("s1", "todos", [{"text": "a", "done": False}])
    assert await store.get_state("s1", "todos") == [{"text": "a", "done": False}]


@pytest.mark.parametrize("newest_first", [True, False])
async def test_history_pages_cover_every_event_once(
    store: SessionStore, newest_first: bool
) -> None:
    await new_session(store)
    seq = 0
    for i in range(3):
        seq = await write_turn(store, "s1", f"t{i}", f"prompt {i}", seq)
    await settled(store, "s1")
    seen: list[int] = []
    cursor: str | None = None
    while True:
        page = await store.history("s1", cursor=cursor, limit=4, newest_first=newest_first)
        assert len(page.events) <= 4
        seen += [e.seq for e in page.events]
        cursor = page.next_cursor
        if cursor is None:
            break
    expected = list(range(1, seq + 1))
    assert seen == (expected[::-1] if newest_first else expected)


async def test_history_events_decode_to_what_was_recorded(store: SessionStore) -> None:
    await new_session(store)
    await write_turn(store, "s1", "t1", "go", 0)
    events = await store.events_since("s1", 0)
    finished = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert finished[0].status is ToolStatus.OK
    ended = events[-1]
    assert isinstance(ended, ev.TurnEnded)
    assert ended.outcome is TurnOutcome.COMPLETED
    calls = next(e for e in events if isinstance(e, ev.AssistantMessageCommitted)).tool_calls
    assert calls[0][2] == {"command": "echo one"}
    assert [e.seq for e in await store.events_since("s1", len(events) - 2)] == [
        len(events) - 1,
        len(events),
    ]


async def test_a_foreign_cursor_is_refused(store: SessionStore) -> None:
    await new_session(store)
    with pytest.raises(InvalidCursor):
        await store.history("s1", cursor="not-a-cursor")
    await write_turn(store, "s1", "t1", "go", 0)
    page = await store.history("s1", limit=2, newest_first=True)
    assert page.next_cursor is not None
    with pytest.raises(InvalidCursor):
        await store.history("s1", cursor=page.next_cursor, newest_first=False)


async def test_fork_copies_a_prefix_and_keeps_batches_whole(store: SessionStore) -> None:
    await new_session(store, title="origin")
    seq = await write_turn(store, "s1", "t1", "first", 0)
    await write_turn(store, "s1", "t2", "second", seq)
    await settled(store, "s1")
    # Cut after the first batch's assistant message: its two results come along.
    fork = await store.fork_session("s1", session_id="f1", up_to=2)
    context = await store.load_context("f1")
    assert [m.role for m in context] == ["user", "assistant", "tool", "tool"]
    assert check_pairing(context) == []
    assert fork.title == "origin (fork)"
    assert fork.message_count == 4
    history = await store.events_since("f1", 0)
    assert all(e.session_id == "f1" for e in history)
    assert not any(isinstance(e, ev.UserMessageCommitted) and e.text == "second" for e in history)
    assert isinstance(history[-1], ev.Notice)
    assert "forked from session s1" in history[-1].text
    assert len(await store.load_context("s1")) == 10  # the source is unchanged
    whole = await store.fork_session("s1", session_id="f2", title="copy")
    assert len(await store.load_context("f2")) == 10
    assert whole.title == "copy"


async def test_fork_of_a_running_batch_gets_honest_results(store: SessionStore) -> None:
    await new_session(store)
    await write_turn(store, "s1", "t1", "go", 0, finish=False)
    await store.fork_session("s1", session_id="f1")
    context = await store.load_context("f1")
    assert check_pairing(context) == []
    statuses = [m.status for m in context if isinstance(m, ToolResult)]
    assert statuses == [ToolStatus.OUTCOME_UNKNOWN, ToolStatus.CANCELLED]


async def test_export_json_and_markdown(store: SessionStore) -> None:
    await new_session(store)
    await write_turn(store, "s1", "t1", "explain `x`", 0)
    store.record_event(
        ev.StreamInterrupted(session_id="s1", seq=99, step=3, partial_text="half a", reason="esc")
    )
    data = json.loads(await store.export_session("s1", "json"))
    assert data["format"] == "rawtrio-session"
    assert data["session"]["id"] == "s1"
    assert len(data["context"]) == 5
    assert data["history"][0]["type"] == "user_message"
    md = await store.export_session("s1", "markdown")
    assert md.startswith("# explain `x`")
    assert "**Tool call** `bash` (`c1t1`)" in md
    assert "out c1t1" in md
    assert "## Assistant (interrupted)" in md
    assert "half a" in md
    assert "Turn ended: completed" in md


async def test_search_finds_words_across_sessions(store: SessionStore) -> None:
    await new_session(store, "a", cwd="/x")
    await new_session(store, "b", cwd="/y")
    await write_turn(store, "a", "t1", "the flaky parser test", 0)
    await write_turn(store, "b", "t2", "a parser for TOML", 0)
    await settled(store, "a")
    await settled(store, "b")
    hits = await store.search("parser")
    assert {h.session_id for h in hits} == {"a", "b"}
    assert {h.session_id for h in await store.search("parser toml")} == {"b"}
    assert {h.session_id for h in await store.search("parser", cwd="/x")} == {"a"}
    assert await store.search('"(* AND') == []
    hit = (await store.search("flaky"))[0]
    assert hit.event_type == "user_message"
    assert "flaky" in hit.snippet


async def test_expiry_removes_only_idle_unheld_sessions(store: SessionStore) -> None:
    await new_session(store, "old")
    await new_session(store, "mine")
    await store.close_session("old")
    await trio.sleep(0.05)
    await store.get_session("old")  # reading does not renew
    assert await store.expire_sessions(0) == []
    removed = await store.expire_sessions(0.01 / 86400)
    assert removed == ["old"]  # "mine" is held by this writer
    assert [r.id for r in await store.list_sessions()] == ["mine"]


async def test_reopening_repairs_a_turn_a_crash_cut(store: SessionStore) -> None:
    await new_session(store)
    await write_turn(store, "s1", "t1", "go", 0, finish=False)
    await store.close_session("s1")
    report = await store.open_for_write("s1")
    assert report.interrupted_turns == ("t1",)
    assert [r.status for r in report.results] == [
        ToolStatus.OUTCOME_UNKNOWN,
        ToolStatus.CANCELLED,
    ]
    assert report.results[1].started is False
    note = report.note()
    assert note is not None
    assert "interrupted" in note
    context = await store.load_context("s1")
    assert check_pairing(context) == []
    found = await store.find_turn("s1", "req-t1")
    assert found is not None
    assert found.outcome is TurnOutcome.INTERRUPTED
    ended = [e for e in await store.events_since("s1", 0) if isinstance(e, ev.TurnEnded)]
    assert [e.outcome for e in ended] == [TurnOutcome.INTERRUPTED]
    # A second open repairs nothing.
    await store.close_session("s1")
    assert not (await store.open_for_write("s1")).repaired
    assert len(await store.load_context("s1")) == len(context)


async def test_reopening_after_a_clean_end_changes_nothing(store: SessionStore) -> None:
    await new_session(store)
    await write_turn(store, "s1", "t1", "go", 0)
    await store.close_session("s1")
    report = await store.open_for_write("s1")
    assert not report.repaired
    assert report.note() is None
    assert isinstance((await store.load_context("s1"))[-1], AssistantMessage)
