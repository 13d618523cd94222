"""The agent loop: turn → steps → one model request each → tool calls in listed order.

Read top to bottom, this is the turn contract of docs/contracts.md. Everything that records
state goes through the recorder's commit points (shielded, bounded), and updates `Turn` in
the same synchronous stretch, so `Recorder.finish_turn` can always tell what a
cancellation cut. Consecutive read-only calls run side by side (`call_groups`,
`run_group`); their results are still committed in listed order. The loop sees its
session only as a `TurnHost` (rawtrio.runtime.host).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.errors import ProviderError, StreamCut
from rawtrio.frozen import EMPTY, freeze, thaw
from rawtrio.groups import collapse_group
from rawtrio.hooks import HookEvent, payloads
from rawtrio.messages import AssistantMessage, ToolCall, ToolResult
from rawtrio.providers import base as pb
from rawtrio.providers.retry import Retries, RetryPolicy
from rawtrio.redaction import StreamRedactor
from rawtrio.runtime import compaction, gate
from rawtrio.runtime.turn import RunningCall, StreamState, Turn, halted, not_run, result
from rawtrio.tools.base import ToolContext, ToolOutput

if TYPE_CHECKING:
    from rawtrio.runtime.host import TurnHost


async def run_steps(host: TurnHost, turn: Turn) -> tuple[TurnOutcome, str]:
    """Run the turn's steps; return its outcome. Cancellation propagates."""
    submitted = await host.run_hooks(
        HookEvent.USER_PROMPT_SUBMIT, payloads.user_prompt_submit(turn.text)
    )
    if submitted.stopped:
        return TurnOutcome.ERROR, f"the prompt was blocked by a hook: {submitted.reason}"
    await host.recorder.commit_user_message(turn, submitted.context_text())
    max_steps = host.options.max_steps
    stop_hook_active = False
    for step in range(1, max_steps + 1):
        turn.step = step
        try:  # accounting, automatic compaction, max_tokens clamp (rawtrio.context)
            request = await compaction.prepare_request(host, turn)
        except compaction.TooLarge as exc:
            return TurnOutcome.ERROR, f"{exc}; nothing was sent"
        message, stop_reason = await stream_step(host, turn, step, request)
        calls = message.tool_calls
        if not calls:
            stop = await host.run_hooks(
                HookEvent.STOP,
                payloads.stop(
                    stop_hook_active=stop_hook_active, last_assistant_message=message.text
                ),
            )
            if not stop.blocked or step == max_steps:
                return TurnOutcome.COMPLETED, stop_reason
            # A Stop hook asked the model to go on: tell it why, as a user message.
            stop_hook_active = True
            await host.recorder.commit_note(
                turn, f"[rawtrio: a Stop hook asked you to continue]\n{stop.reason}"
            )
            continue
        if step == max_steps:
            await host.recorder.commit_results(turn, [not_run(c, max_steps) for c in calls])
            return TurnOutcome.MAX_STEPS, f"reached max_steps ({max_steps}) with tool calls pending"
        groups = call_groups(host, calls)
        for i, group in enumerate(groups):
            if len(group) == 1:
                result = await run_call(host, turn, group[0])
                await host.recorder.commit_results(turn, [result])
            else:
                await run_group(host, turn, group)
            if turn.halt_reason is not None:  # a hook said `continue: false`
                rest = [halted(c, turn.halt_reason) for g in groups[i + 1 :] for c in g]
                if rest:
                    await host.recorder.commit_results(turn, rest)
                return TurnOutcome.COMPLETED, f"a hook ended the turn: {turn.halt_reason}"
    raise AssertionError("unreachable: the loop returns on its last step")


async def stream_step(
    host: TurnHost, turn: Turn, step: int, request: pb.ModelRequest
) -> tuple[AssistantMessage, str]:
    """Stream one model response; commit it only once the stream finished (I3).

    A failed request is tried again under `rawtrio.providers.retry` as long as nothing of
    its reply was shown; each wait is announced as a notice and ends at once on a cancel
    (nothing is streaming then, nothing is torn)."""
    host.recorder.emit(
        ev.StepStarted(session_id=host.id, turn_id=turn.id, step=step, model=request.model)
    )
    retries = Retries(RetryPolicy.of(host.options.provider))
    while True:
        attempt = ReplyAttempt(host, turn, step)
        try:
            done = await attempt.stream(request)
        except ProviderError as exc:
            decision = retries.after(exc, shown=attempt.shown)
            if decision is None:
                raise  # its message now says why there is no further try
            turn.streaming = None  # nothing was shown: nothing to mark as cut
            host.recorder.emit(
                ev.Notice(
                    session_id=host.id, turn_id=turn.id, level="warning", text=decision.notice
                )
            )
            await trio.sleep(decision.wait_s)
            continue
        sent = len(host.recorder.context)  # what the request carried: the provider counted it
        await host.recorder.commit_assistant(turn, done)
        host.model.replied(done.usage, sent=sent, step=step, turn_id=turn.id)
        return done.message, done.stop_reason


class ReplyAttempt:
    """One try at streaming a reply to subscribers; `shown` once anything reached them."""

    def __init__(self, host: TurnHost, turn: Turn, step: int) -> None:
        self.host = host
        self.turn = turn
        self.step = step
        self.shown = False

    async def stream(self, request: pb.ModelRequest) -> pb.StreamDone:
        host, turn, step = self.host, self.turn, self.step
        state = turn.streaming = StreamState(step)
        done: pb.StreamDone | None = None

        # A secret split across deltas is caught by holding back a possible prefix of one.
        def text(chunk: str) -> None:
            host.recorder.emit(
                ev.TextDelta(session_id=host.id, turn_id=turn.id, step=step, text=chunk)
            )

        def thinking(chunk: str) -> None:
            host.recorder.emit(
                ev.ThinkingDelta(session_id=host.id, turn_id=turn.id, step=step, text=chunk)
            )

        emit_text = StreamRedactor(host.recorder.redactor, text)
        emit_thinking = StreamRedactor(host.recorder.redactor, thinking)
        async with host.model.provider.stream(request) as stream:
            async for item in stream:
                if isinstance(item, pb.StreamDone):
                    done = item
                    continue
                self.shown = True
                if isinstance(item, pb.TextDelta):
                    state.parts.append(item.text)
                    emit_text(item.text)
                elif isinstance(item, pb.ThinkingDelta):
                    emit_thinking(item.text)
                elif isinstance(item, pb.ToolCallBegin):
                    state.announced.append(item.name)
                    host.recorder.emit(
                        ev.ToolCallAnnounced(
                            session_id=host.id,
                            turn_id=turn.id,
                            step=step,
                            call_id=item.call_id,
                            name=item.name,
                        )
                    )
        if done is None:
            raise StreamCut("the model's stream ended without its final event")
        emit_thinking.flush()
        emit_text.flush()
        return done


def call_groups(host: TurnHost, calls: Sequence[ToolCall]) -> list[list[ToolCall]]:
    """The reply's calls, in order, in the groups that run side by side: a call joins the
    group before it when it shares a reason to run beside every call already there —
    being read-only, or being a call of the same `concurrent` tool (`task`, whatever its
    agent) — and starts a group of its own otherwise; a call that may write and is not
    `concurrent` is always alone (docs/contracts.md, Concurrency inside a turn)."""
    groups: list[list[ToolCall]] = []
    shared: frozenset[str] = frozenset()  # the reasons every call of the last group has
    for call in calls:
        keys = _group_keys(host, call)
        if groups and shared & keys:
            groups[-1].append(call)
            shared &= keys
        else:
            groups.append([call])
            shared = keys
    return groups


def _group_keys(host: TurnHost, call: ToolCall) -> frozenset[str]:
    tool = host.registry.lookup(call.name)
    if tool is None:
        return frozenset()
    keys = {"read-only"} if reads_only(host, call) else set()
    if tool.concurrent:
        keys.add(f"tool:{tool.id}")
    return frozenset(keys)


def reads_only(host: TurnHost, call: ToolCall) -> bool:
    """Whether the call is read-only by its tool's declaration: `Tool.read_only_for` of
    its arguments where the tool judges per call (`task`: by its agent), else
    `Tool.read_only`. Unknown tools and arguments that are not an object are not."""
    tool = host.registry.lookup(call.name)
    if tool is None:
        return False
    if tool.read_only_for is None:
        return tool.read_only
    args = thaw(call.arguments) if call.arguments is not None else None
    return isinstance(args, dict) and tool.read_only_for(args)


async def run_group(host: TurnHost, turn: Turn, calls: Sequence[ToolCall]) -> None:
    """Run calls side by side in the turn's nursery, at most `max_parallel_tool_calls` at
    once, started in listed order; commit each result once it and every call before it
    finished. A cancellation leaves each call's state in `turn` for `finish_turn`."""
    slots = trio.Semaphore(max(1, host.options.max_parallel_tool_calls))
    done = {call.id: trio.Event() for call in calls}

    async def one(call: ToolCall) -> None:
        try:
            turn.finished[call.id] = await run_call(host, turn, call)
            done[call.id].set()
        finally:
            slots.release()

    async def start_in_order(nursery: trio.Nursery) -> None:
        for call in calls:
            await slots.acquire()
            nursery.start_soon(one, call, name=f"tool call {call.id}")

    with collapse_group():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(start_in_order, nursery, name="start tool calls")
            for call in calls:
                await done[call.id].wait()
                await host.recorder.commit_results(turn, [turn.finished[call.id]])


async def run_call(host: TurnHost, turn: Turn, call: ToolCall) -> ToolResult:
    """Run one call, or explain why it did not run. Always returns its one result."""
    tool = host.registry.lookup(call.name)
    if tool is None:
        names = ", ".join(s.name for s in host.registry.specs())
        return result(call, ToolStatus.UNKNOWN_TOOL, f"unknown tool {call.name!r}; tools: {names}")
    problem = host.registry.validate(tool, call.arguments)
    if problem is not None:
        return result(call, ToolStatus.INVALID_ARGUMENTS, problem)
    args = thaw(call.arguments)
    refusal, hook_context = await gate.admit(host, turn, call, tool, args)
    if refusal is not None:
        return refusal
    ctx = ToolContext(
        session_id=host.id,
        call_id=call.id,
        cwd=host.cwd,
        settings=host.options.tools,
        emit_output=LiveOutput(host, turn.id, call.id, host.options.tools.output_cap),
        env=host.options.env,
        jobs=host.jobs,
        plan=host.plan,
        subagents=host.subagents,
    )
    if host.checkpoints is not None:  # what the call may change (rawtrio.checkpoints)
        read_only = reads_only(host, call)  # as judged for grouping
        await host.checkpoints.before_call(turn.id, tool.id, args, read_only=read_only)
    # Durably marks the call as starting, then a checkpoint: a cancellation that landed
    # before this point stops the call from starting (I4).
    await host.recorder.mark_started(turn, call)
    turn.running[call.id] = RunningCall(call, ctx)
    host.recorder.emit(
        ev.ToolCallStarted(
            session_id=host.id,
            turn_id=turn.id,
            call_id=call.id,
            name=call.name,
            tool_id=tool.id,
            arguments=call.arguments if call.arguments is not None else EMPTY,
        )
    )
    try:
        output = await tool.handler(ctx, args)
    except Exception as exc:  # a handler bug becomes a result the model can read
        output = ToolOutput.error(f"tool {tool.id} failed: {type(exc).__name__}: {exc}")
    changes: dict[str, Any] = {}  # the files a scanned call changed (docs/contracts.md)
    if host.checkpoints is not None:  # a cut call is compared at the turn's end
        changes = await host.checkpoints.after_call()
    # If the after-hooks are cancelled, the call's real output still becomes its result.
    ctx.report_cancelled(
        f"{output.content}\n[the call finished; its after-hooks were cancelled]",
        **(thaw(output.details) or {}),
    )
    images = output.images  # the handler's; hooks add text only
    output = await gate.after(host, turn, call, tool, output, hook_context)
    if tool.id == "read_file" and output.status is ToolStatus.OK:
        output = await with_nested_memory(host, args, output)
    return ToolResult(
        call.id,
        call.name,
        output.status,
        output.content,
        started=True,
        details=freeze({**(thaw(output.details) or {}), **changes}) if changes else output.details,
        images=images,
    )


async def with_nested_memory(host: TurnHost, args: Any, output: ToolOutput) -> ToolOutput:
    """`read_file`'s result with the project memory of the folders it read in, the first
    time each file is met in the session (Claude Code's nested CLAUDE.md)."""
    offer = host.options.nested_memory
    if offer is None or not isinstance(args, dict):
        return output
    requests = args.get("files") if "files" in args else [args]
    paths = [Path(str(r["path"])) for r in requests or () if isinstance(r, dict) and "path" in r]

    def find() -> list[str]:
        return [n for p in paths if (n := offer(host.id, p)) is not None]

    notes = await trio.to_thread.run_sync(find, abandon_on_cancel=True)
    if not notes:
        return output
    return ToolOutput(output.status, "\n\n".join([output.content, *notes]), output.details)


class LiveOutput:
    """Streams a call's live output to subscribers, up to a bound per call.

    The result the model reads is capped by the tool (head and tail); live output is for
    people watching, so past `LIVE_OUTPUT_FACTOR` times the cap it stops with one note
    instead of pushing, say, 100 MB of a runaway command through every subscriber.
    """

    LIVE_OUTPUT_FACTOR = 4

    def __init__(self, host: TurnHost, turn_id: str, call_id: str, cap: int) -> None:
        self._host = host
        self._turn_id = turn_id
        self._call_id = call_id
        self._left = cap * self.LIVE_OUTPUT_FACTOR

    def __call__(self, text: str) -> None:
        if self._left <= 0:
            return
        if len(text) >= self._left:
            text = (
                text[: self._left] + "\n[live output stops here; the result keeps head and tail]\n"
            )
        self._left -= len(text)
        self._host.recorder.emit(
            ev.ToolOutputDelta(
                session_id=self._host.id, turn_id=self._turn_id, call_id=self._call_id, text=text
            )
        )
