"""The pure parts of context management: estimates, accounting, planning, pruning."""

from __future__ import annotations

import dataclasses
import random

import pytest

from rawtrio.context import estimate
from rawtrio.context.accounting import Accountant, ModelPrices, TooLarge, UsageTotals
from rawtrio.context.compaction import chunks, plan, prune, summary_prompt
from rawtrio.context.models import limits_for
from rawtrio.contracts import ToolStatus
from rawtrio.messages import (
    AssistantMessage,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    UserMessage,
    check_pairing,
)
from rawtrio.providers.base import ModelRequest, UsageInfo


def _call(i: int) -> ToolCall:
    return ToolCall.parse(f"call_{i}", "read_file", '{"path": "a.py"}')


def random_transcript(rng: random.Random, turns: int) -> list[Message]:
    """A valid transcript: turns of user → (assistant with calls → results)* → assistant."""
    out: list[Message] = []
    n = 0
    for t in range(turns):
        out.append(UserMessage(f"turn {t} " + "x" * rng.randrange(10, 400)))
        for _ in range(rng.randrange(0, 4)):
            calls = [_call(n + k) for k in range(rng.randrange(1, 4))]
            n += len(calls)
            out.append(AssistantMessage((TextPart("working"), *calls)))
            out.extend(
                ToolResult(c.id, c.name, ToolStatus.OK, "y" * rng.randrange(0, 3000)) for c in calls
            )
        if rng.random() < 0.8:  # a turn may end mid-way (the current turn)
            out.append(AssistantMessage((TextPart("done " * rng.randrange(1, 50)),)))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_plan_never_splits_a_call_from_its_results(seed: int) -> None:
    rng = random.Random(seed)
    messages = random_transcript(rng, rng.randrange(1, 12))
    assert check_pairing(messages) == []
    p_budget = rng.randrange(0, 4000)
    p = plan(messages, keep_last_turns=rng.randrange(0, 4), tail_budget=p_budget)
    assert (*p.head, *p.middle, *p.tail) == tuple(messages)
    assert p.tail, "the last message group is always kept"
    assert not isinstance(p.tail[0], ToolResult)
    # What remains after replacing the middle with one user message is still valid (I1).
    assert check_pairing([*p.head, UserMessage("summary"), *p.tail]) == []
    huge_head = estimate.message_tokens(messages[0]) > p_budget
    assert p.head == (() if huge_head else tuple(messages[:1]))


def test_plan_keeps_the_task_and_the_last_turns() -> None:
    rng = random.Random(7)
    messages = random_transcript(rng, 6)
    users = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    p = plan(messages, keep_last_turns=2, tail_budget=10**9)
    assert p.head == (messages[0],)
    assert p.tail == tuple(messages[users[-2] :])
    # A small budget moves the boundary into the kept turns, never past the last group.
    small = plan(messages, keep_last_turns=2, tail_budget=1)
    assert len(small.tail) < len(p.tail)
    last_group = max(i for i, m in enumerate(messages) if not isinstance(m, ToolResult))
    assert small.tail == tuple(messages[last_group:])


def test_a_huge_first_message_is_summarized_rather_than_kept() -> None:
    messages: list[Message] = [
        UserMessage("paste " * 5000),
        AssistantMessage((TextPart("ok"),)),
        UserMessage("next"),
    ]
    p = plan(messages, keep_last_turns=1, tail_budget=1000)
    assert p.head == ()
    assert p.middle == tuple(messages[:2])
    assert p.tail == (messages[2],)


def test_prune_keeps_head_and_tail_of_long_outputs() -> None:
    long = ToolResult("c1", "bash", ToolStatus.OK, "H" * 5000 + "T" * 5000)
    short = ToolResult("c2", "bash", ToolStatus.OK, "fine")
    pruned, n = prune([long, short], 1000)
    assert n == 1
    out = pruned[0]
    assert isinstance(out, ToolResult)
    assert out.content.startswith("H" * 500)
    assert out.content.endswith("T" * 500)
    assert "9000 characters of this tool output were pruned" in out.content
    assert (out.call_id, out.status) == ("c1", ToolStatus.OK)
    assert pruned[1] is short


def test_chunks_stay_within_budget_and_keep_order() -> None:
    messages = random_transcript(random.Random(3), 10)
    parts = chunks(messages, 1_000)
    assert len(parts) > 1
    budget_chars = int(1_000 * estimate.CHARS_PER_TOKEN)
    assert all(len(c) <= budget_chars + 2 * budget_chars for c in parts)
    joined = "\n\n".join(parts)
    assert joined.index("turn 0") < joined.index("turn 9")
    prompt = summary_prompt(parts[1], "earlier summary", "the parser", None)
    assert "earlier summary" in prompt
    assert "Focus the summary on: the parser" in prompt


def _request(messages: tuple[Message, ...]) -> ModelRequest:
    return ModelRequest(system="sys " * 100, messages=messages, tools=(), model="m", max_tokens=500)


def test_accountant_uses_the_reported_count_plus_an_estimate_of_what_was_added() -> None:
    acct = Accountant(window=10_000)
    first = (UserMessage("hello"),)
    assert acct.request_tokens(_request(first)) == acct.estimate_tokens(_request(first), first)
    acct.reported(UsageInfo(input_tokens=700, cache_read_tokens=300), sent_messages=1)
    added = (AssistantMessage((TextPart("reply " * 40),)), UserMessage("more"))
    size = acct.request_tokens(_request(first + added))
    assert size == 1000 + estimate.messages_tokens(added)
    # A replaced context (compaction) or another model drops the count.
    acct.reset()
    assert acct.request_tokens(_request(first + added)) < 1000
    acct.reported(UsageInfo(input_tokens=900), sent_messages=3)
    other = ModelRequest(system="sys", messages=first + added, tools=(), model="n", max_tokens=1)
    assert acct.request_tokens(other) < 900


def test_max_tokens_is_clamped_and_too_large_is_refused() -> None:
    acct = Accountant(window=10_000)
    assert acct.max_tokens(2_000, 8_192) == 8_000
    assert acct.max_tokens(100, 4_000) == 4_000
    with pytest.raises(TooLarge, match="context window of 10000"):
        acct.max_tokens(9_500, 8_192)
    assert Accountant(window=None).max_tokens(10**9, 123) == 123


def test_limits_and_prices() -> None:
    assert limits_for(
        "claude-sonnet-4-5-20250929", context_window=None, max_output_tokens=8192
    ) == (limits_for("claude-sonnet-4", context_window=None, max_output_tokens=8192))
    known = limits_for("gpt-4o-2024-08-06", context_window=None, max_output_tokens=100_000)
    assert (known.context_window, known.max_output_tokens) == (128_000, 16_384)
    configured = limits_for("gpt-4o", context_window=50_000, max_output_tokens=100_000)
    assert (configured.context_window, configured.max_output_tokens) == (50_000, 100_000)
    assert (
        limits_for("my-local-model", context_window=None, max_output_tokens=10).context_window
        is None
    )
    prices = ModelPrices(input=3, output=15, cache_read=0.3, cache_write=3.75)
    usage = UsageInfo(1_000_000, 100_000, 2_000_000, 0)
    assert prices.cost(usage) == pytest.approx(3 + 1.5 + 0.6)
    totals = UsageTotals().add(usage, prices.cost(usage)).add(UsageInfo(1, 1), 0.5)
    assert totals.input_tokens == 1_000_001
    assert totals.cost_usd == pytest.approx(5.6)
    assert totals.context_tokens == 1
    assert UsageTotals().add(usage, None).cost_usd is None


def test_an_image_in_a_tool_result_counts_in_the_estimate() -> None:
    plain = ToolResult("c1", "mcp__s__picture", ToolStatus.OK, "[image 1: image/png, 67 bytes]")
    with_image = dataclasses.replace(plain, images=(ImagePart("image/png", "iVBORw0KGgo="),))
    extra = estimate.message_tokens(with_image) - estimate.message_tokens(plain)
    assert extra == estimate.IMAGE_TOKENS
