"""Compaction of the model context: what is kept, what is summarized, and the summary.

A compaction keeps the original task (the first user message), summarizes the older part
and keeps the last `keep_last_turns` turns verbatim:

    [task] [older … messages] [last N turns]   →   [task] [summary] [last N turns]

The boundaries only fall before a user or an assistant message, never inside a batch of
tool results, so a call and its results always stay together (I1). If the kept turns are
too large on their own (one turn with many steps, one oversized tool result), the boundary
moves into them, down to the last message group; tool outputs there are pruned to head and
tail as a last resort. Older tool outputs can be pruned before summarizing, which makes the
summary requests smaller.

The summary is written by the session's own model with a compaction-only prompt, no tools
and a bounded output. An older part that does not fit one summary request is summarized in
chunks, each request carrying the summary so far. The caller accepts the result only if the
summary is non-empty and strictly smaller than what it replaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rawtrio.context import estimate

# Re-exported: the settings live with the state that reads them before every request.
from rawtrio.context.compaction_state import CompactionSettings as CompactionSettings
from rawtrio.context.estimate import CHARS_PER_TOKEN
from rawtrio.errors import StreamCut
from rawtrio.messages import Message, ToolResult, UserMessage
from rawtrio.providers.base import ModelRequest, Provider, StreamDone, UsageInfo

#: The first line of every summary request (the fake model server recognises it).
COMPACTION_MARKER = "<rawtrio-compaction-request>"
#: How the summary message in the model context begins.
SUMMARY_HEADER = "[rawtrio: the earlier part of this conversation was compacted"

COMPACTION_SYSTEM = (
    "You write the working memory of a coding agent. You are given part of a conversation "
    "between a user and the agent (its tool calls and their results included). Write a "
    "summary that lets the agent continue the work without the original messages: the "
    "user's goals and constraints, decisions made, files read or changed (with paths), "
    "commands run and what they showed, errors met and how they were handled, and what is "
    "left to do. Keep exact names, paths, identifiers and numbers. Write plain text, no "
    "preamble; do not call tools."
)


@dataclass(frozen=True, slots=True)
class Plan:
    head: tuple[Message, ...]
    middle: tuple[Message, ...]
    tail: tuple[Message, ...]


def plan(messages: Sequence[Message], *, keep_last_turns: int, tail_budget: int) -> Plan:
    """Split the context into the kept head, the part to summarize and the kept tail.

    The head is the original task, unless it alone is over `tail_budget` (a huge paste):
    then it is summarized with the rest, or no later request could ever fit."""
    head_n = 1 if messages and isinstance(messages[0], UserMessage) else 0
    if head_n and estimate.message_tokens(messages[0]) > tail_budget:
        head_n = 0
    cuts = [i for i in range(head_n, len(messages)) if not isinstance(messages[i], ToolResult)]
    if not cuts:
        return Plan(tuple(messages[:head_n]), (), tuple(messages[head_n:]))
    users = [i for i in cuts if isinstance(messages[i], UserMessage)]
    if keep_last_turns <= 0:
        start = cuts[-1]
    elif len(users) >= keep_last_turns:
        start = users[-keep_last_turns]
    else:
        start = head_n
    # The kept part must leave room: move the boundary into it, never past the last group.
    sizes = [estimate.message_tokens(m) for m in messages]
    tail_size = sum(sizes[start:])
    for c in cuts:
        if c <= start:
            continue
        if tail_size <= tail_budget:
            break
        tail_size -= sum(sizes[start:c])
        start = c
    return Plan(tuple(messages[:head_n]), tuple(messages[head_n:start]), tuple(messages[start:]))


def prune(messages: Sequence[Message], keep_chars: int) -> tuple[tuple[Message, ...], int]:
    """Tool outputs longer than `keep_chars` cut to head and tail; returns how many were."""
    out: list[Message] = []
    pruned = 0
    for m in messages:
        if isinstance(m, ToolResult) and len(m.content) > keep_chars:
            out.append(
                ToolResult(
                    m.call_id,
                    m.name,
                    m.status,
                    head_tail(m.content, keep_chars, "of this tool output were pruned"),
                    started=m.started,
                    denied_by=m.denied_by,
                    details=m.details,
                )
            )
            pruned += 1
        else:
            out.append(m)
    return tuple(out), pruned


def head_tail(text: str, keep: int, what: str) -> str:
    if len(text) <= keep:
        return text
    half = max(1, keep // 2)
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[… {cut} characters {what} …]\n{text[-half:]}"


def render(msg: Message, limit: int) -> str:
    """One message as transcript text for the summarizer (at most about `limit` chars)."""
    if isinstance(msg, UserMessage):
        text = f"USER:\n{msg.text}"
    elif isinstance(msg, ToolResult):
        text = f"TOOL RESULT {msg.name} ({msg.call_id}, {msg.status.value}):\n{msg.content}"
    else:
        lines = []
        if msg.text:
            lines.append(f"ASSISTANT:\n{msg.text}")
        for c in msg.tool_calls:
            lines.append(f"ASSISTANT CALLS {c.name} ({c.id}) WITH {c.raw_arguments or '{}'}")
        text = "\n".join(lines) or "ASSISTANT: (no text)"
    return head_tail(text, limit, "of this message were left out")


def chunks(middle: Sequence[Message], budget_tokens: int) -> list[str]:
    """The part to summarize as transcript texts, each within `budget_tokens`."""
    budget = max(1_000, int(budget_tokens * CHARS_PER_TOKEN))
    out: list[str] = []
    current: list[str] = []
    size = 0
    for m in middle:
        text = render(m, budget)
        starts_group = not isinstance(m, ToolResult)
        if current and size + len(text) > budget and starts_group:
            out.append("\n\n".join(current))
            current, size = [], 0
        current.append(text)
        size += len(text) + 2
        if size > budget:  # a long results batch: cut it here rather than overflow
            out.append("\n\n".join(current))
            current, size = [], 0
    if current:
        out.append("\n\n".join(current))
    return out


def summary_prompt(chunk: str, previous: str, focus: str | None, extra: str | None) -> str:
    parts = [COMPACTION_MARKER, "Summarize the conversation below for the agent to continue."]
    if focus:
        parts.append(f"Focus the summary on: {focus}")
    if extra:
        parts.append(extra)
    if previous:
        parts.append(
            "This is a continuation. The summary of the conversation before it, to merge "
            f"into your summary:\n<summary>\n{previous}\n</summary>"
        )
    parts.append(f"<conversation>\n{chunk}\n</conversation>")
    return "\n\n".join(parts)


def summary_message(summary: str, replaced: int) -> UserMessage:
    return UserMessage(
        f"{SUMMARY_HEADER}; a summary of the {replaced} messages it replaced follows.]\n\n{summary}"
    )


@dataclass(frozen=True, slots=True)
class SummaryResult:
    text: str
    usages: tuple[UsageInfo, ...]


class SummaryFailed(Exception):
    """The summarizer gave nothing usable (empty text, or cut by its output limit)."""


async def summarize(
    provider: Provider,
    *,
    model: str,
    middle: Sequence[Message],
    chunk_tokens: int,
    max_tokens: int,
    focus: str | None = None,
    extra: str | None = None,
) -> SummaryResult:
    """Summarize `middle` with the session's model: no tools, bounded output, chunked."""
    summary = ""
    usages: list[UsageInfo] = []
    for chunk in chunks(middle, chunk_tokens):
        request = ModelRequest(
            system=COMPACTION_SYSTEM,
            messages=(UserMessage(summary_prompt(chunk, summary, focus, extra)),),
            tools=(),
            model=model,
            max_tokens=max_tokens,
        )
        done: StreamDone | None = None
        async with provider.stream(request) as stream:
            async for item in stream:
                if isinstance(item, StreamDone):
                    done = item
        if done is None:
            raise StreamCut("the summary stream ended without its final event")
        usages.append(done.usage)
        text = done.message.text.strip()
        if not text or done.message.tool_calls:
            raise SummaryFailed("the model returned an empty summary")
        summary = text
    return SummaryResult(summary, tuple(usages))
