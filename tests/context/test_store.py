"""`replace_context` in both stores: the compacted context is loaded, nothing is deleted,
forks and crash recovery see the context as it was at their cut."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rawtrio import events as ev
from rawtrio.messages import AssistantMessage, TextPart, UserMessage, check_pairing
from rawtrio.store.base import SessionStore
from rawtrio.store.memory import MemoryStore
from rawtrio.store.sqlite import SqliteStore
from tests.store.conftest import new_session
from tests.store.transcript import write_turn


@pytest.fixture(params=["sqlite", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    async with SqliteStore(tmp_path / "sessions.db") as s:
        yield s


async def test_replace_context_keeps_everything_and_forks_see_their_cut(
    store: SessionStore,
) -> None:
    await new_session(store)
    seq = await write_turn(store, "s1", "t1", "first task", 0)
    seq = await write_turn(store, "s1", "t2", "second", seq)
    old = await store.load_context("s1")
    assert len(old) == 10
    compacted = [old[0], UserMessage("[rawtrio: summary] did two turns"), *old[5:]]
    await store.replace_context("s1", None, compacted)
    assert await store.load_context("s1") == compacted
    store.record_event(
        ev.CompactionEnded(
            session_id="s1",
            seq=seq + 1,
            outcome="compacted",
            tokens_before=900,
            tokens_after=300,
            reason="summarized 4 messages",
        )
    )
    # Later commits append to the compacted context.
    reply = AssistantMessage((TextPart("more"),))
    await store.begin_turn("s1", "t3", None)
    await store.commit("s1", "t3", [UserMessage("third"), reply])
    assert await store.load_context("s1") == [*compacted, UserMessage("third"), reply]
    # Nothing lost: the history shows the compaction; the record counts every message.
    assert (await store.get_session("s1")).message_count == 10 + len(compacted) + 2
    shown = [e.type for e in await store.events_since("s1", 0)]
    assert "compaction_ended" in shown
    # Crash recovery looks at the current context only.
    report = await store.open_for_write("s1")
    assert report.results == ()
    # A fork of the whole session gets the compacted context; a fork cut before the
    # compaction gets the context as it was then.
    whole = await store.fork_session("s1", session_id="f1")
    assert await store.load_context(whole.id) == await store.load_context("s1")
    early = await store.fork_session("s1", session_id="f2", up_to=5)
    assert await store.load_context(early.id) == old[:5]
    assert check_pairing(await store.load_context(early.id)) == []
    exported = await store.export_session("s1", "json")
    assert "did two turns" in exported
