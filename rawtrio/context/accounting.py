"""Accounting: how big the next request is, what fits, and what the session has used.

The size of the next request is known from the provider's own count for the previous
request (`UsageInfo.total_input_tokens`: system prompt, tool schemas and the messages it
carried) plus a conservative estimate of the messages added since (the reply, tool
results, the next user message). Only those few messages are estimated each step, so the
cost per step does not grow with the conversation. Without a previous count (first
request, after a compaction or a model switch), the whole request is estimated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rawtrio.context import estimate
from rawtrio.messages import Message
from rawtrio.providers.base import ModelRequest, UsageInfo

#: Never ask for fewer output tokens than this (or `max_output_tokens`, if smaller): a
#: request with less room than that is refused as too large instead.
MIN_OUTPUT_TOKENS = 1024


@dataclass(frozen=True, slots=True)
class ModelPrices:
    """Prices per million tokens (the currency the configuration uses; shown as USD)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, usage: UsageInfo) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / 1_000_000


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Running totals of a session (or a turn): what front ends show as `/cost`."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: None when the model has no configured prices.
    cost_usd: float | None = None
    #: The prompt size of the latest request (or the estimate after a compaction).
    context_tokens: int = 0
    context_window: int | None = None

    def add(self, usage: UsageInfo, cost: float | None) -> UsageTotals:
        total = None if cost is None else (self.cost_usd or 0.0) + cost
        return UsageTotals(
            self.input_tokens + usage.input_tokens,
            self.output_tokens + usage.output_tokens,
            self.cache_read_tokens + usage.cache_read_tokens,
            self.cache_write_tokens + usage.cache_write_tokens,
            total,
            usage.total_input_tokens,
            self.context_window,
        )


def usage_to_json(totals: UsageTotals) -> dict[str, Any]:
    """The totals as kept in the session's state (the window is today's, not stored)."""
    return {
        "input_tokens": totals.input_tokens,
        "output_tokens": totals.output_tokens,
        "cache_read_tokens": totals.cache_read_tokens,
        "cache_write_tokens": totals.cache_write_tokens,
        "cost_usd": totals.cost_usd,
        "context_tokens": totals.context_tokens,
    }


def usage_from_json(saved: object, current: UsageTotals) -> UsageTotals:
    """Totals saved by an earlier run of the session; `current` when none (or unreadable)."""
    if not isinstance(saved, dict):
        return current
    ints = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    if not all(isinstance(saved.get(k), int) for k in (*ints, "context_tokens")):
        return current
    cost = saved.get("cost_usd")
    return UsageTotals(
        input_tokens=saved["input_tokens"],
        output_tokens=saved["output_tokens"],
        cache_read_tokens=saved["cache_read_tokens"],
        cache_write_tokens=saved["cache_write_tokens"],
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        context_tokens=saved["context_tokens"],
        context_window=current.context_window,
    )


class TooLarge(Exception):
    """The next request does not fit the model's window; `str()` says by how much."""


class Accountant:
    """Tracks the size of the next request of one session.

    `request_tokens(request)` before each request; `reported(usage, sent)` when the
    provider's count of that request arrives. A different model or tool list (the cache
    key changes, and so may the tokenizer) or a replaced context drops the count.
    """

    def __init__(self, window: int | None = None) -> None:
        self.window = window
        self._key: tuple[str, int, int] | None = None  # model, system, id(tools)
        self._fixed = 0
        #: (provider's count of the last request, how many messages it carried).
        self._reported: tuple[int, int] | None = None

    def reset(self) -> None:
        """Forget the provider's count (the model context was replaced)."""
        self._reported = None

    def _configure(self, request: ModelRequest) -> None:
        key = (request.model, hash(request.system), id(request.tools))
        if key != self._key:
            self._key = key
            self._fixed = estimate.text_tokens(request.system) + estimate.tools_tokens(
                request.tools
            )
            self._reported = None

    def reported(self, usage: UsageInfo, sent_messages: int) -> None:
        """The provider counted the last measured request, carrying `sent_messages`."""
        total = usage.total_input_tokens
        if total > 0:
            self._reported = (total, sent_messages)

    def request_tokens(self, request: ModelRequest) -> int:
        """The size of `request`: the provider's last count + an estimate of the rest."""
        self._configure(request)
        messages = request.messages
        if self._reported is not None and self._reported[1] <= len(messages):
            count, n = self._reported
            return count + estimate.messages_tokens(messages[n:])
        return self._fixed + estimate.messages_tokens(messages)

    def estimate_tokens(self, request: ModelRequest, messages: Sequence[Message]) -> int:
        """A pure estimate of `request` carrying `messages` instead (no reported count)."""
        self._configure(request)
        return self._fixed + estimate.messages_tokens(messages)

    def fixed_tokens(self, request: ModelRequest) -> int:
        """The estimated size of the system prompt and tool schemas."""
        self._configure(request)
        return self._fixed

    def usable(self, max_output_tokens: int) -> int | None:
        """The prompt budget: the window less the output reserved for the reply (at most
        half the window is reserved, for models whose output limit is close to it)."""
        if self.window is None:
            return None
        return max(self.window - max_output_tokens, self.window // 2)

    def max_tokens(self, prompt_tokens: int, max_output_tokens: int) -> int:
        """`max_output_tokens` clamped so prompt + output fit; `TooLarge` if they can't."""
        if self.window is None:
            return max_output_tokens
        room = self.window - prompt_tokens
        floor = min(max_output_tokens, MIN_OUTPUT_TOKENS)
        if room < floor:
            raise TooLarge(
                f"the next request is about {prompt_tokens} tokens; with at least {floor} "
                f"for the reply it does not fit the model's context window of {self.window} "
                "tokens"
            )
        return min(max_output_tokens, room)


def describe(totals: UsageTotals) -> str:
    """The `/cost` text: tokens by kind, cost (or why it is unknown), context use."""
    cost = (
        f"${totals.cost_usd:.4f}"
        if totals.cost_usd is not None
        else "unknown (no prices configured for this model)"
    )
    window = (
        f"{totals.context_tokens} of {totals.context_window} tokens "
        f"({100 * totals.context_tokens / totals.context_window:.0f}%)"
        if totals.context_window
        else f"{totals.context_tokens} tokens (window unknown)"
    )
    return (
        f"tokens: {totals.input_tokens} input, {totals.output_tokens} output, "
        f"{totals.cache_read_tokens} cache read, {totals.cache_write_tokens} cache write\n"
        f"cost: {cost}\ncontext: {window}"
    )
