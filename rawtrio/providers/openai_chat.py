"""The OpenAI Chat Completions adapter; also serves OpenAI-compatible servers (`base_url`).

Request mapping: the system prompt is a leading `system` message; an `AssistantMessage` is
one assistant message with its text and `tool_calls` (arguments as a JSON text, `{}` when
they were malformed); each `ToolResult` is one `tool` message of its text (tool messages
take text only, so a result's images are not sent: its text describes them). Thinking is
not sent back (Chat Completions has no field for it; some compatible servers refuse it).

Streaming: tool-call deltas are keyed by `index`; the id and name come only in the first
delta of each index. Reasoning text from compatible servers (`reasoning_content` or
`reasoning` in the delta) becomes thinking. The stream is complete once a choice carried
its `finish_reason` (the SDK hides the `[DONE]` sentinel); the usage chunk that follows
is read when it comes.

Usage is reported like Anthropic's: `input_tokens` excludes the cached prompt tokens,
which are `cache_read_tokens`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionMessageParam,
    ChatCompletionMessageToolCallParam,
    ChatCompletionToolParam,
)

from rawtrio.errors import StreamCut
from rawtrio.frozen import thaw
from rawtrio.messages import (
    AssistantMessage,
    AssistantPart,
    Message,
    ProviderKind,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from rawtrio.providers._stream import client_options, open_event_stream
from rawtrio.providers.base import (
    ModelRequest,
    ProviderSettings,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallBegin,
    ToolSpec,
    UsageInfo,
)
from rawtrio.providers.errors import SdkErrorTypes
from rawtrio.providers.http import endpoint

KIND: ProviderKind = "openai-chat"

SDK_ERRORS = SdkErrorTypes(
    api_error=openai.APIError,
    status_error=openai.APIStatusError,
    timeout_error=openai.APITimeoutError,
    connection_error=openai.APIConnectionError,
)

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


# --- request -----------------------------------------------------------------------------


def to_chat_messages(
    system: str, messages: tuple[Message, ...]
) -> list[ChatCompletionMessageParam]:
    out: list[ChatCompletionMessageParam] = []
    if system:
        out.append({"role": "system", "content": system})
    for msg in messages:
        if isinstance(msg, ToolResult):
            out.append({"role": "tool", "tool_call_id": msg.call_id, "content": msg.content})
        elif isinstance(msg, AssistantMessage):
            out.append(_assistant_message(msg))
        else:
            out.append({"role": "user", "content": msg.text})
    return out


def _assistant_message(msg: AssistantMessage) -> ChatCompletionMessageParam:
    calls: list[ChatCompletionMessageToolCallParam] = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments_json()},
        }
        for c in msg.tool_calls
    ]
    text = msg.for_provider(KIND).text
    if not calls:
        return {"role": "assistant", "content": text}
    return {"role": "assistant", "content": text or None, "tool_calls": calls}


def to_chat_tools(tools: tuple[ToolSpec, ...]) -> list[ChatCompletionToolParam]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": thaw(t.input_schema),
            },
        }
        for t in tools
    ]


# --- response ----------------------------------------------------------------------------


class ChatAssembler:
    """Builds our events and the final message from chat completion chunks."""

    def __init__(self) -> None:
        self.finished = False  # reading goes on to the end, for the usage chunk
        self._complete = False  # a finish_reason arrived
        self._parts: list[AssistantPart] = []
        self._run_kind = ""  # "text" or "thinking": the run of deltas being collected
        self._run: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}  # by the provider's index
        self._message_id: str | None = None
        self._model: str | None = None
        self._stop_reason = "end_turn"
        self._usage = UsageInfo()

    def feed(self, chunk: ChatCompletionChunk) -> list[StreamEvent]:
        self._message_id = self._message_id or chunk.id or None
        self._model = self._model or chunk.model or None
        if chunk.usage is not None:
            cached = 0
            if chunk.usage.prompt_tokens_details is not None:
                cached = chunk.usage.prompt_tokens_details.cached_tokens or 0
            self._usage = UsageInfo(
                input_tokens=chunk.usage.prompt_tokens - cached,
                output_tokens=chunk.usage.completion_tokens,
                cache_read_tokens=cached,
            )
        events: list[StreamEvent] = []
        for choice in chunk.choices[:1]:
            delta = choice.delta
            extra = delta.model_extra or {}
            thinking = extra.get("reasoning_content") or extra.get("reasoning")
            if isinstance(thinking, str) and thinking:
                events.append(self._add_run("thinking", thinking))
            if delta.content:
                events.append(self._add_run("text", delta.content))
            for tc in delta.tool_calls or ():
                events.extend(self._tool_delta(tc))
            if choice.finish_reason is not None:
                self._complete = True
                self._stop_reason = _STOP_REASONS.get(choice.finish_reason, choice.finish_reason)
        return events

    def _add_run(self, kind: str, text: str) -> StreamEvent:
        if kind != self._run_kind:
            self._flush_run()
            self._run_kind = kind
        self._run.append(text)
        return TextDelta(text) if kind == "text" else ThinkingDelta(text)

    def _flush_run(self) -> None:
        text = "".join(self._run)
        if text:
            part = TextPart(text) if self._run_kind == "text" else ThinkingPart(text, None, KIND)
            self._parts.append(part)
        self._run = []

    def _tool_delta(self, tc: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        call = self._calls.get(tc.index)
        if call is None:
            name = tc.function.name if tc.function is not None else None
            if not tc.id or not name:
                raise ValueError(f"tool call {tc.index} began without an id and a name")
            call = {"ordinal": len(self._calls), "id": tc.id, "name": name, "args": []}
            self._calls[tc.index] = call
            events.append(ToolCallBegin(call["ordinal"], tc.id, name))
        args = tc.function.arguments if tc.function is not None else None
        if args:
            call["args"].append(args)
            events.append(ToolCallArgsDelta(call["ordinal"], call["id"], args))
        return events

    def done(self) -> StreamDone:
        if not self._complete:
            raise StreamCut(
                f"{KIND}: the stream ended before a finish_reason; the reply is incomplete",
                provider=KIND,
            )
        self._flush_run()
        calls = [
            ToolCall.parse(c["id"], c["name"], "".join(c["args"])) for c in self._calls.values()
        ]
        message = AssistantMessage((*self._parts, *calls), KIND, self._model, self._message_id)
        return StreamDone(message, self._stop_reason, self._usage)


# --- provider ----------------------------------------------------------------------------


class OpenAIChatProvider:
    """One `AsyncOpenAI` client speaking Chat Completions."""

    kind: ProviderKind = KIND

    def __init__(
        self, settings: ProviderSettings, client: openai.AsyncOpenAI | None = None
    ) -> None:
        self.settings = settings
        #: A lent client (a `ClientPool`'s) stays open when this provider closes.
        self._owns_client = client is None
        if client is None:
            client = openai.AsyncOpenAI(**client_options(settings, openai.DefaultAsyncHttpxClient))
        self._client = client
        #: Named in errors (no query, no user info).
        self.url = endpoint(self._client.base_url, "chat/completions")

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        # OpenAI's reasoning models refuse `max_tokens`; many compatible servers only know it.
        # (`base_url` may come from OPENAI_BASE_URL, so ask the client where it points.)
        official = self._client.base_url.host == "api.openai.com"
        limit_key = "max_completion_tokens" if official else "max_tokens"
        extra = {limit_key: request.max_tokens, **self.settings.extra, **thaw(request.extra)}

        async def start() -> openai.AsyncStream[ChatCompletionChunk]:
            return await self._client.chat.completions.create(
                model=request.model,
                messages=to_chat_messages(request.system, request.messages),
                tools=to_chat_tools(request.tools) or openai.omit,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=extra,
            )

        return open_event_stream(KIND, SDK_ERRORS, start, ChatAssembler(), self.url)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()
