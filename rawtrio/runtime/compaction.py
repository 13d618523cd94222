"""Compaction and accounting as a turn runs them, against its `TurnHost`.

What belongs where: `rawtrio.context.compaction` is what a compaction keeps and how the
summary is written (pure, no session); `rawtrio.context.compaction_state` is when the next
automatic one is due, from what earlier ones did; `rawtrio.context.accounting` sizes
requests. This module is the runtime side: it reads the live context, emits the events,
runs the hooks and commits the replacement through the recorder.

- `prepare_request` — before every step: the size of the next request; an automatic
  compaction when it passes the threshold (at most once per turn, and not again while
  compactions do not help); `max_tokens` clamped to what fits; a request that still does
  not fit ends the turn with a clear error instead of being sent.
- `run_compaction` — one compaction (manual or automatic): `compaction_started`, the
  PreCompact hooks, the summary requests, then one durable replacement of the model
  context, and `compaction_ended` with the sizes before and after. Nothing changes unless
  the result is valid and strictly smaller; a cancellation before the replacement is
  committed changes nothing.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Literal

import trio

from rawtrio import events as ev
from rawtrio.context import estimate
from rawtrio.context.accounting import TooLarge
from rawtrio.errors import ProviderError
from rawtrio.hooks import HookEvent, payloads
from rawtrio.messages import Message, check_pairing
from rawtrio.providers.base import ModelRequest

if TYPE_CHECKING:
    from rawtrio.runtime.host import TurnHost
    from rawtrio.runtime.turn import Turn

log = logging.getLogger(__name__)
Trigger = Literal["manual", "auto"]

#: The share of the prompt budget the verbatim-kept turns may take after a compaction.
TAIL_SHARE = 0.3
#: The compaction system prompt and instructions of a summary request, generously.
SUMMARY_PROMPT_TOKENS = 500


async def prepare_request(host: TurnHost, turn: Turn) -> ModelRequest:
    """The next request, compacted first if needed; raises `TooLarge` if it cannot fit."""
    request = host.model.build_request()
    acct = host.model.accountant
    size = acct.request_tokens(request)
    output = min(request.max_tokens, host.model.output_limit)
    usable = acct.usable(output)
    settings = host.options.compaction
    state = host.compactions
    if state.auto_due(settings, turn_id=turn.id, size=size, usable=usable):
        assert usable is not None  # auto_due says so
        state.auto_turn = turn.id
        ended = await run_compaction(host, "auto", None, turn.id)
        request = host.model.build_request()
        after = acct.request_tokens(request)
        # Judged by the size the next requests are measured with, as `compacted` judges it
        # (the event's `tokens_after` is in the provider's measure, for people).
        state.auto_ended(settings, ended, size=size, after=after, usable=usable)
        size = after
    try:
        max_tokens = acct.max_tokens(size, output)
    except TooLarge as exc:
        if state.auto_turn == turn.id:
            why = "even after compaction"
        elif not settings.auto:
            why = "and automatic compaction is off (/compact compacts it)"
        else:
            why = "and earlier compactions did not help (/compact tries again)"
        raise TooLarge(f"{exc}, {why}") from None
    return dataclasses.replace(request, max_tokens=max_tokens)


async def run_compaction(
    host: TurnHost, trigger: Trigger, focus: str | None, turn_id: str | None
) -> ev.CompactionEnded:
    # What a compaction keeps and the summary requests: loaded by the first compaction
    # (`prepare_request` runs before every request, most of which never compact).
    from rawtrio.context.compaction import SummaryFailed

    request = host.model.build_request()
    before = host.model.accountant.request_tokens(request)
    host.recorder.emit(
        ev.CompactionStarted(
            session_id=host.id, turn_id=turn_id, reason=trigger, tokens_before=before
        )
    )

    def ended(outcome: str, after: int, reason: str) -> ev.CompactionEnded:
        event = host.recorder.emit(
            ev.CompactionEnded(
                session_id=host.id,
                turn_id=turn_id,
                outcome=outcome,
                tokens_before=before,
                tokens_after=after,
                reason=reason,
            )
        )
        host.compactions.last = event
        return event

    try:
        hooks = await host.run_hooks(
            HookEvent.PRE_COMPACT, payloads.pre_compact(trigger, focus or "")
        )
        new, why = await _compacted(host, request, focus, hooks.context_text())
        if new is None:
            return ended("unchanged", before, why)
        # A cancellation that landed during the summary stops here: nothing changed.
        await trio.lowlevel.checkpoint()
        await host.recorder.replace_context(turn_id, new)
        host.model.context_replaced()
        acct = host.model.accountant
        # What the next request will be taken to weigh (no provider count is left for it).
        after = acct.request_tokens(host.model.build_request())
        usable = acct.usable(min(request.max_tokens, host.model.output_limit))
        host.compactions.compacted(host.options.compaction, after=after, usable=usable)
        # Reported in the measure of `before` (the provider's count when there is one): the
        # estimated sizes' ratio, since the estimate and the provider's tokenizer differ.
        estimated = acct.estimate_tokens(request, request.messages)
        return ended("compacted", round(before * after / estimated) if estimated else after, why)
    except trio.Cancelled:
        ended("cancelled", before, "the compaction was cancelled; the context is unchanged")
        raise
    except (ProviderError, SummaryFailed) as exc:
        return ended("error", before, f"the summary request failed: {exc}")
    except Exception as exc:  # a bug or a store failure: reported, the context unchanged
        log.exception("compaction of session %s failed", host.id)
        return ended("error", before, f"internal error: {type(exc).__name__}: {exc}")


async def _compacted(
    host: TurnHost, request: ModelRequest, focus: str | None, extra: str | None
) -> tuple[list[Message] | None, str]:
    """The compacted context, or None and why the context stays as it is."""
    from rawtrio.context.compaction import plan, prune, summarize, summary_message

    settings = host.options.compaction
    acct = host.model.accountant
    old = list(host.recorder.context)
    usable = acct.usable(min(request.max_tokens, host.model.output_limit))
    fixed = acct.fixed_tokens(request)
    # The kept turns get at most TAIL_SHARE of what the prompt may hold, leaving the turn
    # that triggered an automatic compaction room to go on (it gets one per turn).
    tail_budget = int((usable - fixed) * TAIL_SHARE) if usable is not None else 2**62
    p = plan(old, keep_last_turns=settings.keep_last_turns, tail_budget=max(tail_budget, 0))
    tail, tail_pruned = p.tail, 0
    if settings.prune_tool_outputs and estimate.messages_tokens(tail) > tail_budget:
        tail, tail_pruned = prune(tail, settings.prune_keep_chars)
    if not p.middle and not tail_pruned:
        return None, "nothing to compact: only the task and the last turns are in the context"
    done = []
    summary: tuple[Message, ...] = ()
    if p.middle:
        middle = p.middle
        if settings.prune_tool_outputs:
            middle, _ = prune(middle, settings.prune_keep_chars)
        # Each summary request must fit: its chunk, the summary so far, its own output.
        window = acct.window or 200_000
        out = min(settings.summary_max_tokens, window // 4)
        chunk_tokens = max(500, int((window - 2 * out - SUMMARY_PROMPT_TOKENS) * 0.9))
        result = await summarize(
            host.model.provider,
            model=request.model,
            middle=middle,
            chunk_tokens=chunk_tokens,
            max_tokens=out,
            focus=focus,
            extra=extra,
        )
        for usage in result.usages:
            host.model.record_usage(usage, step=0, turn_id=host.running_turn)
        message = summary_message(result.text, len(p.middle))
        replaced = estimate.messages_tokens(p.middle)
        made = estimate.message_tokens(message)
        if made >= replaced:
            return None, (
                f"the summary (about {made} tokens) was not smaller than the "
                f"{len(p.middle)} messages it would replace (about {replaced} tokens)"
            )
        summary = (message,)
        done.append(f"summarized {len(p.middle)} messages")
    if tail_pruned:
        done.append(f"pruned {tail_pruned} tool outputs to head and tail")
    new = [*p.head, *summary, *tail]
    problems = check_pairing(new)
    if problems:  # plan() never splits a batch; refuse rather than send a broken context
        return None, f"the compacted context would be invalid: {problems[0]}"
    if acct.estimate_tokens(request, new) >= acct.estimate_tokens(request, old):
        return None, "the compacted context would not be smaller"
    return new, "; ".join(done)


__all__ = ["TooLarge", "prepare_request", "run_compaction"]
