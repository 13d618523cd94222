"""Compaction with the fake model server over the real SDKs (all three wire formats)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio import events as ev
from rawtrio.context.compaction import SUMMARY_HEADER, CompactionSettings
from rawtrio.contracts import TurnOutcome
from rawtrio.errors import TurnInProgress
from rawtrio.hooks import HookEvent, HookSpec
from rawtrio.messages import ProviderKind, ToolResult, UserMessage, check_pairing, message_to_json
from rawtrio.runtime.recorder import USAGE_STATE_KEY
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.store.memory import MemoryStore
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.tools.settings import ToolSettings
from tests.conftest import LIVENESS_S, provider_for, session_on
from tests.context.support import SUMMARY, events_of, scenario, summary_requests, turn_text

SMALL = {
    "system_prompt": "You are a test agent.",
    "tool_selection": ("read_file",),
    "context_window": 4_000,
    "max_output_tokens": 500,
}


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("note line with some words\n" * 40)
    return tmp_path


async def test_a_long_session_crosses_the_threshold_and_is_compacted(
    wire: ProviderKind, cwd: Path
) -> None:
    settings = CompactionSettings(keep_last_turns=1)
    store = MemoryStore()
    async with session_on(scenario(), wire, cwd, store=store, compaction=settings, **SMALL) as (
        session,
        server,
        _,
    ):
        for i in range(7):
            ended = await session.run_turn(turn_text(i))
            assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
            assert check_pairing(session.context) == []  # I1 after every turn and compaction
        compactions = await events_of(session, ev.CompactionEnded)
        assert compactions, "the threshold was crossed"
        assert {c.outcome for c in compactions} == {"compacted"}
        assert all(c.tokens_after < c.tokens_before for c in compactions)
        starts = await events_of(session, ev.CompactionStarted)
        assert {s.reason for s in starts} == {"auto"}
        # At most one automatic compaction per turn.
        assert len({c.turn_id for c in compactions}) == len(compactions)
        # The model context: the task, the summary, the last turn.
        assert session.context[0] == UserMessage(turn_text(0))
        assert isinstance(session.context[1], UserMessage)
        assert session.context[1].text.startswith(SUMMARY_HEADER)
        assert SUMMARY in session.context[1].text
        # Summary requests: no tools, bounded output, the compaction-only system prompt.
        for r in summary_requests(server):
            assert not r.body.get("tools")
            assert r.status == 200
        # The older part did not fit one summary request: chunks, each with the summary so far.
        assert any("<summary>\n" + SUMMARY in (r.user_text or "") for r in summary_requests(server))
        assert all(r.status == 200 for r in server.requests)
        # Nothing lost (I7): the store keeps every message; the display keeps every turn.
        kept = store._sessions[session.id].context
        assert sum(1 for m in kept if m == UserMessage(turn_text(3))) == 1
        shown = await events_of(session, ev.UserMessageCommitted)
        assert [u.text for u in shown] == [turn_text(i) for i in range(7)]
        assert session.usage.input_tokens > 0
        assert session.usage.context_window == 4_000


async def test_a_single_oversized_tool_result_is_pruned(wire: ProviderKind, cwd: Path) -> None:
    (cwd / "notes.txt").write_text("".join(f"line {i:05d} " + "z" * 60 + "\n" for i in range(500)))
    tools = ToolSettings(sigterm_grace_s=0.2, output_cap=100_000)
    options = {**SMALL, "context_window": 8_000}
    async with session_on(scenario(), wire, cwd, tools=tools, **options) as (session, server, _):
        ended = await session.run_turn("read the notes")
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        (compaction,) = await events_of(session, ev.CompactionEnded)
        assert compaction.outcome == "compacted"
        assert "pruned 1 tool outputs" in compaction.reason
        result = next(m for m in session.context if isinstance(m, ToolResult))
        assert "of this tool output were pruned" in result.content
        assert result.content.startswith("line 00000") or "line 00000" in result.content[:200]
        assert not summary_requests(server)  # nothing older to summarize
        assert check_pairing(session.context) == []


async def test_a_request_that_cannot_fit_ends_the_turn_without_sending_it(
    wire: ProviderKind, cwd: Path
) -> None:
    (cwd / "notes.txt").write_text("".join(f"line {i:05d} " + "w" * 60 + "\n" for i in range(500)))
    tools = ToolSettings(sigterm_grace_s=0.2, output_cap=100_000)
    settings = CompactionSettings(prune_tool_outputs=False)
    async with session_on(scenario(), wire, cwd, tools=tools, compaction=settings, **SMALL) as (
        session,
        server,
        _,
    ):
        ended = await session.run_turn("read the notes")
        assert ended.outcome is TurnOutcome.ERROR
        assert "does not fit the model's context window of 4000" in ended.reason
        assert "nothing was sent" in ended.reason
        assert "even after compaction" in ended.reason
        assert len(server.requests) == 1  # the oversized request was never sent
        (compaction,) = await events_of(session, ev.CompactionEnded)
        assert compaction.outcome == "unchanged"
        assert check_pairing(session.context) == []


async def test_a_summary_larger_than_what_it_replaces_is_rejected(
    wire: ProviderKind, cwd: Path
) -> None:
    settings = CompactionSettings(keep_last_turns=1, auto=False)
    async with session_on(
        scenario({"echo": 2}), wire, cwd, compaction=settings, **{**SMALL, "context_window": None}
    ) as (session, server, _):
        for i in range(3):
            await session.run_turn(turn_text(i))
        before = [message_to_json(m) for m in session.context]
        ended = await session.compact()
        assert ended.outcome == "unchanged"
        assert "was not smaller" in ended.reason
        assert ended.tokens_after == ended.tokens_before
        assert [message_to_json(m) for m in session.context] == before  # byte for byte
        assert len(summary_requests(server)) == 1
        # The store too: a resume would see the same context.
        assert await session.store.load_context(session.id) == session.context


async def test_compactions_that_do_not_help_stop_being_attempted(cwd: Path) -> None:
    settings = CompactionSettings(keep_last_turns=1)
    async with session_on(
        scenario({"echo": 2}), "anthropic", cwd, compaction=settings, **SMALL
    ) as (session, server, _):
        outcomes = []
        for i in range(8):
            outcomes.append((await session.run_turn(turn_text(i))).outcome)
        attempts = await events_of(session, ev.CompactionEnded)
        assert 1 <= len(attempts) <= 2
        assert {a.outcome for a in attempts} == {"unchanged"}
        assert len(summary_requests(server)) >= len(attempts)
        # In the end the context does not fit: a clear error, not a loop.
        assert outcomes[-1] is TurnOutcome.ERROR


async def test_cancelling_a_manual_compaction_changes_nothing(
    wire: ProviderKind, cwd: Path
) -> None:
    settings = CompactionSettings(keep_last_turns=1, auto=False)
    stall = {"text": SUMMARY, "stall_after": 3}
    unbounded = {**SMALL, "context_window": None}
    async with session_on(scenario(stall), wire, cwd, compaction=settings, **unbounded) as (
        session,
        server,
        _,
    ):
        for i in range(3):
            await session.run_turn(turn_text(i))
        before = list(session.context)
        result: list[ev.CompactionEnded] = []

        async def compact() -> None:
            result.append(await session.compact("the notes"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(compact)
            await server.wait_for(lambda s: any(r.events_sent >= 3 for r in summary_requests(s)))
            with pytest.raises(TurnInProgress):
                await session.submit("not now")
            assert session.cancel("cancelled by the user")
        (ended,) = result
        assert ended.outcome == "cancelled"
        assert session.context == before
        assert await session.store.load_context(session.id) == before
        assert "Focus the summary on: the notes" in (summary_requests(server)[0].user_text or "")
        # The session goes on normally.
        after = await session.run_turn(turn_text(9))
        assert after.outcome is TurnOutcome.COMPLETED
        assert check_pairing(session.context) == []


async def test_cancelling_a_turn_during_automatic_compaction(cwd: Path) -> None:
    settings = CompactionSettings(keep_last_turns=1)
    stall = {"text": SUMMARY, "stall_after": 3}
    async with session_on(scenario(stall), "openai-chat", cwd, compaction=settings, **SMALL) as (
        session,
        server,
        _,
    ):
        turn_id = ""
        for i in range(8):
            before = list(session.context)
            turn_id = await session.submit(turn_text(i))
            async with trio.open_nursery() as nursery:

                async def cancel_on_stall() -> None:
                    await server.wait_for(lambda s: bool(summary_requests(s)))
                    await server.wait_for(lambda s: summary_requests(s)[-1].events_sent >= 3)
                    session.cancel("received SIGINT")

                nursery.start_soon(cancel_on_stall)
                ended = await session.wait_turn(turn_id)
                nursery.cancel_scope.cancel(reason="turn over")
            if summary_requests(server):
                break
        assert ended.outcome is TurnOutcome.CANCELLED
        (compaction,) = await events_of(session, ev.CompactionEnded)
        assert compaction.outcome == "cancelled"
        assert compaction.turn_id == turn_id
        # Only this turn's user message was added; nothing was replaced (I1, I7).
        assert session.context[: len(before)] == before
        assert check_pairing(session.context) == []


async def test_resume_after_compaction_yields_the_compacted_context(
    wire: ProviderKind, cwd: Path, tmp_path: Path
) -> None:
    db = tmp_path / "sessions.db"
    settings = CompactionSettings(keep_last_turns=1, auto=False)
    hook = HookSpec(HookEvent.PRE_COMPACT, ("true",))
    async with open_fake_model_server(Scenario.from_dict(scenario())) as server:
        options = SessionOptions(
            cwd=cwd,
            provider=provider_for(server, wire),
            compaction=settings,
            hooks=(hook,),
            **SMALL,  # type: ignore[arg-type]
        )
        with trio.fail_after(LIVENESS_S):
            async with SqliteStore(db) as store, open_runtime(store) as runtime:
                session = await runtime.create_session(options)
                for i in range(3):
                    await session.run_turn(turn_text(i))
                ended = await session.compact()
                assert ended.outcome == "compacted", ended.reason
                assert ended.tokens_after < ended.tokens_before
                compacted = list(session.context)
                hooks = await events_of(session, ev.HookRan)
                assert [h.event for h in hooks] == ["PreCompact"]
                session_id = session.id
            async with SqliteStore(db) as store, open_runtime(store) as runtime:
                resumed = await runtime.open_session(session_id, options)
                assert resumed.context == compacted
                assert check_pairing(resumed.context) == []
                shown = await events_of(resumed, ev.CompactionEnded)
                assert [e.outcome for e in shown] == ["compacted"]
                after = await resumed.run_turn("and now?")
                assert after.outcome is TurnOutcome.COMPLETED
                assert SUMMARY in str(server.requests[-1].body)
        conn = sqlite3.connect(db)
        replaced = conn.execute("SELECT count(*) FROM context WHERE replaced_at IS NOT NULL")
        assert replaced.fetchone()[0] > 0  # the replaced messages are kept (I7)
        conn.close()


async def test_one_long_turn_is_compacted_inside_the_turn(cwd: Path) -> None:
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}
    long_turn = {
        "rules": [
            {"match": "@compaction", "replies": [{"text": SUMMARY}]},
            # The fake picks replies by the last user text: after the compaction that is
            # the summary, and the model is done.
            {"match": "SUMMARY:", "replies": [{"text": "all read"}] * 20},
            {"match": "*", "replies": [read] * 20},
        ]
    }
    async with session_on(long_turn, "anthropic", cwd, **SMALL) as (session, server, _):
        ended = await session.run_turn("read the notes many times")
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        assert ended.final_text == "all read"
        compactions = await events_of(session, ev.CompactionEnded)
        assert [c.outcome for c in compactions] == ["compacted"]  # once per turn at most
        assert check_pairing(session.context) == []
        assert session.context[0] == UserMessage("read the notes many times")
        assert all(r.status == 200 for r in server.requests)


async def test_the_sizes_a_compaction_reports_are_measured_alike(
    wire: ProviderKind, cwd: Path
) -> None:
    """The size before is the provider's count; the size after used to be rawtrio's own
    estimate, so a provider counting fewer tokens than the estimate (another tokenizer; here
    one that reports 60) made a compaction that shrank the context look like it grew."""
    counted = {"input_tokens": 60}
    rules = scenario()["rules"]
    rules[1]["replies"] = [{**reply, "usage": counted} for reply in rules[1]["replies"]]
    settings = CompactionSettings(keep_last_turns=1, auto=False)
    async with session_on(
        {"rules": rules}, wire, cwd, compaction=settings, **{**SMALL, "context_window": None}
    ) as (session, _, _):
        for i in range(3):
            await session.run_turn(turn_text(i))
        ended = await session.compact()
        assert ended.outcome == "compacted", ended.reason
        assert ended.tokens_before < 1_000  # the provider's count (60) and the last reply
        assert 0 < ended.tokens_after < ended.tokens_before


class SlowUsageStore(MemoryStore):
    """Once `armed`, its next usage-totals write waits for `release` (a slow disk)."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.release = trio.Event()

    async def set_state(self, session_id: str, key: str, value: Any) -> None:
        if self.armed and key == USAGE_STATE_KEY:
            self.armed = False
            await self.release.wait()
        await super().set_state(session_id, key, value)


async def test_a_prompt_sent_once_compaction_ended_is_published_is_taken(
    wire: ProviderKind, cwd: Path
) -> None:
    """A front end told `compaction_ended` may submit at once (the dashboard sends its
    queued prompts then). The session used to stay "compacting" until the usage totals were
    written, so on a slow disk that prompt was refused as busy."""
    store = SlowUsageStore()
    settings = CompactionSettings(keep_last_turns=1, auto=False)
    async with session_on(
        scenario(),
        wire,
        cwd,
        store=store,
        compaction=settings,
        **{**SMALL, "context_window": None},
    ) as (session, _, _):
        for i in range(3):
            await session.run_turn(turn_text(i))
        store.armed = True
        async with trio.open_nursery() as nursery:
            told: ev.CompactionEnded | None = None
            with session.subscribe() as events:
                nursery.start_soon(session.compact)
                async for event in events:
                    if isinstance(event, ev.CompactionEnded):
                        told = event
                        break
            assert told is not None
            assert told.outcome == "compacted", told.reason
            ended = await session.run_turn("and now?")  # the usage write still waits
            assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
            store.release.set()


async def test_an_automatic_compaction_is_judged_in_the_measure_of_the_next_request(
    wire: ProviderKind, cwd: Path
) -> None:
    """A provider counting far more than rawtrio's estimate (here 20,000 tokens for a
    request estimated at a few thousand): the compaction's reported size after is in the
    provider's measure, over the threshold, but the next requests are measured by the
    estimate, under it. The compaction helped; it must not be marked futile (that held off
    the next automatic compaction until the context had grown by a fifth of the window)."""
    rules = scenario()["rules"]
    counted = {"input_tokens": 20_000}
    big = {"match": "turn 3:", "replies": [{**r, "usage": counted} for r in rules[1]["replies"]]}
    rules.insert(1, big)
    async with session_on({"rules": rules}, wire, cwd, **SMALL) as (session, _, _):
        for i in range(4):
            ended = await session.run_turn(turn_text(i))
            assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        compactions = await events_of(session, ev.CompactionEnded)
        assert [c.outcome for c in compactions][-1:] == ["compacted"]
        assert compactions[-1].tokens_after > 0.8 * 3_500  # reported in the provider's measure
        assert (session.compactions.futile, session.compactions.no_help_at) == (0, None)
