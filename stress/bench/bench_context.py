"""Context accounting: its cost per step, and how far the estimate is from the count.

1. **Accounting overhead per step (200-message context).** A transcript of 200 messages
   (user turns, assistant messages with tool calls, tool results of 0–3 kB) and the tool
   schemas of the built-in registry. Per step the runtime asks the size of the next
   request (`Accountant.request_tokens`: the provider's count of the previous request plus
   an estimate of the messages added since), the usable window and the clamped
   `max_tokens` — that is what `prepare_request` adds before each model request. Timed
   over `LOOPS` steps, each adding one message (the reply or a tool result) to the context;
   median over runs. For comparison, the same without a reported count (the whole request
   estimated, as after a compaction) and the cost of planning a compaction of it.
2. **Estimate error against the fake server's counts.** The same 200-message context is
   sent through each real SDK to the fake model server, which counts the prompt as the
   services report it (system, tools, messages); the figure is the pure estimate's error
   relative to that count, `(estimate - reported) / reported`. Positive = conservative.

`runs` is the number of repetitions of measurement 1.
"""

from __future__ import annotations

import random
import time
from typing import Final

import trio

from rawtrio.context.accounting import Accountant
from rawtrio.context.compaction import plan
from rawtrio.contracts import ToolStatus
from rawtrio.messages import (
    AssistantMessage,
    Message,
    ProviderKind,
    TextPart,
    ToolCall,
    ToolResult,
    UserMessage,
)
from rawtrio.providers import base as pb
from rawtrio.providers import make_provider
from rawtrio.runtime.prompt import BASE_PROMPT
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.tools.builtin import builtin_registry
from stress.bench.common import Figure, Options, median

DEFAULT_RUNS: Final = 20
SMOKE_RUNS: Final = 2
MESSAGES: Final = 200
LOOPS: Final = 200
WIRES: Final[tuple[ProviderKind, ...]] = ("anthropic", "openai-chat", "openai-responses")


def transcript(n: int, seed: int = 1) -> list[Message]:
    """A valid transcript of about `n` messages (calls always followed by their results)."""
    rng = random.Random(seed)
    out: list[Message] = []
    calls = 0
    while len(out) < n - 1:
        out.append(
            UserMessage(f"please look at module {len(out)} " + "words " * rng.randrange(5, 80))
        )
        for _ in range(rng.randrange(1, 4)):
            call = ToolCall.parse(f"call_{calls}", "read_file", f'{{"path": "src/m{calls}.py"}}')
            calls += 1
            out.append(AssistantMessage((TextPart("Reading it."), call)))
            body = "".join(
                f"{i:4d}  def f{i}(x): return x * {i}\n" for i in range(rng.randrange(0, 90))
            )
            out.append(ToolResult(call.id, call.name, ToolStatus.OK, body))
        out.append(AssistantMessage((TextPart("Done: " + "explanation " * rng.randrange(3, 60)),)))
    return out[:n] if not isinstance(out[n - 1], AssistantMessage) else out[: n - 1]


def _request(messages: tuple[Message, ...]) -> pb.ModelRequest:
    registry = builtin_registry()
    return pb.ModelRequest(
        system=BASE_PROMPT,
        messages=messages,
        tools=tuple(registry.specs()),
        model="test-model",
        max_tokens=8192,
    )


def per_step_us(messages: list[Message], *, reported: bool, loops: int = LOOPS) -> float:
    base = _request(tuple(messages))
    acct = Accountant(window=200_000)
    acct.request_tokens(base)
    grown = list(messages)
    extra = [AssistantMessage((TextPart("step reply " * 20),))] * loops
    started = time.perf_counter()
    for i in range(loops):
        if reported:
            acct.reported(pb.UsageInfo(input_tokens=50_000), len(grown))
        else:
            acct.reset()
        grown.append(extra[i])
        request = pb.ModelRequest(base.system, tuple(grown), base.tools, base.model, 8192)
        size = acct.request_tokens(request)
        usable = acct.usable(request.max_tokens) or 0
        _ = size > 0.8 * usable
        acct.max_tokens(min(size, 150_000), request.max_tokens)
    return (time.perf_counter() - started) / loops * 1e6


async def estimate_errors(messages: list[Message]) -> dict[ProviderKind, float]:
    errors: dict[ProviderKind, float] = {}
    scenario = Scenario.from_dict({"rules": [{"match": "*", "replies": [{"text": "ok"}]}]})
    async with open_fake_model_server(scenario) as server:
        for wire in WIRES:
            base = server.base_url if wire == "anthropic" else server.openai_base_url
            provider = make_provider(
                pb.ProviderSettings(kind=wire, model="test-model", api_key="k", base_url=base)
            )
            request = _request(tuple(messages))
            done: pb.StreamDone | None = None
            try:
                async with provider.stream(request) as events:
                    async for item in events:
                        if isinstance(item, pb.StreamDone):
                            done = item
            finally:
                await provider.aclose()
            if done is None:
                raise RuntimeError(f"{wire}: no reply from the fake server")
            reported = done.usage.total_input_tokens
            estimated = Accountant(window=None).estimate_tokens(request, messages)
            errors[wire] = (estimated - reported) / reported * 100
    return errors


async def run(options: Options) -> list[Figure]:
    runs = options.runs
    messages = transcript(options.size(MESSAGES, 20))
    loops = options.size(LOOPS, 20)
    with_count = median([per_step_us(messages, reported=True, loops=loops) for _ in range(runs)])
    without = median(
        [per_step_us(messages, reported=False, loops=loops) for _ in range(max(1, runs // 4))]
    )
    started = time.perf_counter()
    for _ in range(20):
        plan(messages, keep_last_turns=2, tail_budget=20_000)
    plan_us = (time.perf_counter() - started) / 20 * 1e6
    await trio.lowlevel.checkpoint()
    errors = await estimate_errors(messages)
    note = f"{len(messages)} messages, {loops} steps, median of {runs} runs"
    figures = [
        Figure.against(
            "accounting per step (reported count + added)", with_count, "us", None, note
        ),
        Figure.against("accounting per step (whole estimate)", without, "us", None, note),
        Figure.against("compaction planning, 200 messages", plan_us, "us", None),
    ]
    figures += [
        Figure.against(f"estimate error vs fake count, {wire}", err, "%", None, "positive = over")
        for wire, err in errors.items()
    ]
    return figures
