"""Usage, cost, `max_tokens` clamping and Anthropic prompt caching, over the real SDKs."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rawtrio import events as ev
from rawtrio.context.accounting import ModelPrices
from rawtrio.context.compaction import CompactionSettings
from rawtrio.contracts import TurnOutcome
from rawtrio.errors import TurnInProgress
from rawtrio.messages import ProviderKind
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from tests.conftest import provider_for, session_on
from tests.context.support import events_of, scenario, turn_text

PRICES = ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("note line with some words\n" * 40)
    return tmp_path


async def test_usage_and_cost_per_request_and_session(wire: ProviderKind, cwd: Path) -> None:
    async with session_on(
        scenario(), wire, cwd, prices=PRICES, tool_selection=("read_file",), context_window=50_000
    ) as (session, server, _):
        for i in range(2):
            ended = await session.run_turn(turn_text(i))
            assert ended.outcome is TurnOutcome.COMPLETED
        usages = await events_of(session, ev.Usage)
        assert len(usages) == 4  # two steps a turn
        running = 0.0
        for u in usages:
            assert u.context_window == 50_000
            total = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
            assert u.context_tokens == total > 0
            expected = (
                u.input_tokens * 3.0
                + u.output_tokens * 15.0
                + u.cache_read_tokens * 0.3
                + u.cache_write_tokens * 3.75
            ) / 1e6
            assert u.cost_usd == pytest.approx(expected)
            running += expected
            assert u.session_cost_usd == pytest.approx(running)
        totals = session.usage
        assert totals.input_tokens == sum(u.input_tokens for u in usages)
        assert totals.output_tokens == sum(u.output_tokens for u in usages)
        assert totals.cost_usd == pytest.approx(running)
        assert totals.context_tokens == usages[-1].context_tokens
        # The clamp: the window leaves room, so max_tokens is the configured 8192.
        assert all(
            (r.body.get("max_tokens") or r.body.get("max_output_tokens")) == 8192
            for r in server.requests
        )
        # The fake counts the whole prompt (system and tools too), like the services.
        first = usages[0]
        assert first.context_tokens > len(turn_text(0)) // 4 + 100


async def test_max_tokens_is_clamped_to_what_fits(cwd: Path) -> None:
    async with session_on(
        scenario(),
        "anthropic",
        cwd,
        tool_selection=("read_file",),
        system_prompt="short",
        context_window=6_000,
        max_output_tokens=5_500,
        compaction=CompactionSettings(auto=False),
    ) as (session, server, _):
        await session.run_turn(turn_text(0))
        sizes = [r.body["max_tokens"] for r in server.requests]
        assert all(1024 <= s < 5_500 for s in sizes)
        assert sizes[1] < sizes[0]  # the tool result took room


async def test_unknown_models_have_no_window_and_no_cost(cwd: Path) -> None:
    async with session_on(scenario(), "openai-chat", cwd) as (session, _, _):
        await session.run_turn("hello")
        (u, *_) = await events_of(session, ev.Usage)
        assert u.context_window is None
        assert u.cost_usd is None
        assert session.usage.cost_usd is None


async def test_anthropic_cache_breakpoints_on_the_stable_prefix(cwd: Path) -> None:
    system = "You are a careful test agent. " * 200  # over the 1024-token cache minimum
    async with session_on(
        scenario(), "anthropic", cwd, system_prompt=system, tool_selection=("read_file",)
    ) as (session, server, _):
        await session.run_turn(turn_text(0))
        await session.run_turn(turn_text(1))
        usages = await events_of(session, ev.Usage)
        assert usages[0].cache_write_tokens > 0
        assert usages[0].cache_read_tokens == 0
        # Every later request reads what the one before it wrote (the history is stable).
        for prev, u in itertools.pairwise(usages):
            assert u.cache_read_tokens >= prev.cache_read_tokens + prev.cache_write_tokens
        body = server.requests[-1].body
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in body  # explicit breakpoints only (at most 4)


async def test_compact_is_refused_while_a_turn_runs(cwd: Path) -> None:
    stall = {
        "rules": [{"match": "*", "replies": [{"text": "slow reply", "stall_after": 2}]}],
    }
    async with session_on(stall, "anthropic", cwd) as (session, server, _):
        turn = await session.submit("go")
        await server.wait_for(lambda s: bool(s.requests) and s.requests[-1].events_sent >= 2)
        with pytest.raises(TurnInProgress):
            await session.compact()
        session.cancel("cancelled by the user")
        assert (await session.wait_turn(turn)).outcome is TurnOutcome.CANCELLED
        ended = await session.compact()
        assert ended.outcome == "unchanged"
        assert "nothing to compact" in ended.reason


@pytest.mark.parametrize("wire", ["openai-chat", "openai-responses"])
async def test_openai_prompt_cache_hits_are_reported(wire: ProviderKind, cwd: Path) -> None:
    system = "You are a careful test agent. " * 200
    async with session_on(
        scenario(), wire, cwd, system_prompt=system, tool_selection=("read_file",)
    ) as (session, _, _):
        await session.run_turn(turn_text(0))
        await session.run_turn(turn_text(1))
        usages = await events_of(session, ev.Usage)
        assert usages[0].cache_read_tokens == 0
        assert all(u.cache_write_tokens == 0 for u in usages)
        # The stable prefix is read from the cache by every later request.
        for prev, u in itertools.pairwise(usages):
            assert u.cache_read_tokens >= prev.context_tokens - 128
            assert u.context_tokens == u.input_tokens + u.cache_read_tokens


async def test_totals_survive_a_resume_in_a_new_runtime(cwd: Path) -> None:
    db = cwd / "sessions.db"
    async with open_fake_model_server(Scenario.from_dict(scenario())) as server:
        options = SessionOptions(
            cwd=cwd,
            provider=provider_for(server, "anthropic"),
            prices=PRICES,
            tool_selection=("read_file",),
        )
        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            session = await runtime.create_session(options)
            await session.run_turn(turn_text(0))
            first = session.usage
            session_id = session.id
        assert first.cost_usd is not None
        assert first.input_tokens > 0
        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            resumed = await runtime.open_session(session_id, options)
            assert resumed.usage == first
            await resumed.run_turn(turn_text(1))
            later = resumed.usage
            usages = await events_of(resumed, ev.Usage)
        assert later.input_tokens == sum(u.input_tokens for u in usages)
        assert later.output_tokens == sum(u.output_tokens for u in usages)
        assert later.output_tokens > first.output_tokens  # (input may be all cache reads)
        assert later.cost_usd == pytest.approx(usages[-1].session_cost_usd)
