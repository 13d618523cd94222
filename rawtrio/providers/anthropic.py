"""The Anthropic Messages adapter (`anthropic.AsyncAnthropic`, raw streaming events).

Request mapping (neutral transcript → Messages API):

- the system prompt is the top-level `system`, one text block;
- prompt caching: the prefix is stable between requests (docs/contracts.md), so three cache
  breakpoints (`cache_control`, ephemeral) mark it: the last tool definition, the system
  block and the last block of the last message (everything in a request is committed). The
  next request reads the cache up to the previous request's last message; a change of tool
  definitions changes the key once. `"cache_control": null` in the settings' or request's
  `extra` turns the breakpoints off;
- an `AssistantMessage` becomes one assistant message whose blocks keep the model's order:
  text, `thinking` with its signature, `redacted_thinking` (an `OpaquePart`), `tool_use`
  (parsed arguments, `{}` when they were malformed). Thinking without an Anthropic
  signature (from another provider) cannot be sent back and is dropped;
- consecutive `ToolResult`s become ONE user message of `tool_result` blocks in call order
  (`is_error` for every status but ok); a `UserMessage` right after them joins that same
  user message after the results, as the API requires nothing in between. A result's
  content is its text as a string; a result with images has a list instead: the text block,
  then one base64 `image` block per image;

Imported lazily by `rawtrio.providers.make_provider` (the SDK takes ~1 s to import).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, cast

import anthropic
from anthropic.types import (
    Base64ImageSourceParam,
    CacheControlEphemeralParam,
    ContentBlockParam,
    ImageBlockParam,
    MessageParam,
    RawMessageStreamEvent,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
)

from rawtrio.errors import StreamCut
from rawtrio.frozen import freeze, thaw
from rawtrio.messages import (
    MODEL_IMAGE_TYPES,
    AssistantMessage,
    AssistantPart,
    Message,
    OpaquePart,
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

KIND: ProviderKind = "anthropic"

SDK_ERRORS = SdkErrorTypes(
    api_error=anthropic.APIError,
    status_error=anthropic.APIStatusError,
    timeout_error=anthropic.APITimeoutError,
    connection_error=anthropic.APIConnectionError,
)

_ImageType = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]

_STOP_REASONS = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}


# --- request -----------------------------------------------------------------------------


def to_anthropic_messages(messages: tuple[Message, ...] | list[Message]) -> list[MessageParam]:
    """The Messages API `messages` for a neutral transcript."""
    out: list[MessageParam] = []
    for msg in messages:
        if isinstance(msg, AssistantMessage):
            blocks = _assistant_blocks(msg.for_provider(KIND))
            if blocks:
                out.append({"role": "assistant", "content": blocks})
            continue
        block: ContentBlockParam
        if isinstance(msg, ToolResult):
            block = _tool_result_block(msg)
        else:
            if not msg.text.strip() and out and out[-1]["role"] == "user":
                continue  # a blank text block would be refused; the message has content
            block = {"type": "text", "text": msg.text}
        _append_user_block(out, block)
    return out


def _tool_result_block(msg: ToolResult) -> ToolResultBlockParam:
    block: ToolResultBlockParam = {
        "type": "tool_result",
        "tool_use_id": msg.call_id,
        "is_error": msg.is_error,
    }
    images = [i for i in msg.images if i.media_type in MODEL_IMAGE_TYPES]
    if not images:
        # The plain string form, exactly as before images existed: the cached prefix of a
        # session with text-only results stays the same.
        if msg.content:
            block["content"] = msg.content
        return block
    content: list[TextBlockParam | ImageBlockParam] = []
    if msg.content.strip():  # the API refuses blank text blocks
        content.append({"type": "text", "text": msg.content})
    for image in images:
        media_type = cast(_ImageType, image.media_type)
        source: Base64ImageSourceParam = {
            "type": "base64",
            "media_type": media_type,
            "data": image.data,
        }
        content.append({"type": "image", "source": source})
    block["content"] = content
    return block


def _append_user_block(out: list[MessageParam], block: ContentBlockParam) -> None:
    """Add a block to the trailing user message, or start one (the API wants them merged)."""
    if out and out[-1]["role"] == "user":
        content = out[-1]["content"]
        assert isinstance(content, list)
        content.append(block)
    else:
        out.append({"role": "user", "content": [block]})


def _assistant_blocks(msg: AssistantMessage) -> list[ContentBlockParam]:
    blocks: list[ContentBlockParam] = []
    for part in msg.parts:
        if isinstance(part, TextPart):
            if part.text.strip():  # the API refuses blank text blocks
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ThinkingPart):
            if part.signature is not None and part.provider == KIND:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature}
                )
        elif isinstance(part, OpaquePart):
            blocks.append(thaw(part.data))
        else:
            args = thaw(part.arguments) if part.arguments is not None else {}
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": args})
    return blocks


_EPHEMERAL: CacheControlEphemeralParam = {"type": "ephemeral"}
#: Blocks that may carry a cache breakpoint (thinking blocks may not).
_CACHEABLE = ("text", "tool_result", "tool_use", "image", "document")


def add_cache_breakpoints(
    system: list[TextBlockParam], tools: list[ToolParam], messages: list[MessageParam]
) -> None:
    """Mark the stable prefix: last tool, the system block, the last message's last block."""
    if tools:
        tools[-1]["cache_control"] = _EPHEMERAL
    if system:
        system[-1]["cache_control"] = _EPHEMERAL
    if messages:
        content = messages[-1]["content"]
        if isinstance(content, list):
            for block in reversed(content):
                b = cast(dict[str, Any], block)
                if b.get("type") in _CACHEABLE:
                    b["cache_control"] = _EPHEMERAL
                    break


def to_anthropic_tools(tools: tuple[ToolSpec, ...]) -> list[ToolParam]:
    return [
        {"name": t.name, "description": t.description, "input_schema": thaw(t.input_schema)}
        for t in tools
    ]


# --- response ----------------------------------------------------------------------------


class AnthropicAssembler:
    """Builds our events and the final message from raw Messages stream events."""

    def __init__(self) -> None:
        self.finished = False
        self._parts: dict[int, AssistantPart] = {}  # by content block index
        self._open: dict[int, dict[str, Any]] = {}  # blocks still streaming
        self._tool_count = 0
        self._message_id: str | None = None
        self._model: str | None = None
        self._stop_reason = "end_turn"
        self._usage: dict[str, int] = {}

    def feed(self, event: RawMessageStreamEvent) -> list[StreamEvent]:
        if event.type == "message_start":
            self._message_id = event.message.id
            self._model = event.message.model
            self._take_usage(event.message.usage)
        elif event.type == "content_block_start":
            return self._start_block(event.index, event.content_block)
        elif event.type == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif event.type == "content_block_stop":
            self._stop_block(event.index)
        elif event.type == "message_delta":
            reason = event.delta.stop_reason
            if reason is not None:
                self._stop_reason = _STOP_REASONS.get(reason, reason)
            self._take_usage(event.usage)
        elif event.type == "message_stop":
            self.finished = True
        return []

    def _start_block(self, index: int, block: Any) -> list[StreamEvent]:
        state: dict[str, Any] = {"type": block.type, "text": [], "signature": ""}
        self._open[index] = state
        if block.type == "text":
            state["text"].append(block.text)
            return [TextDelta(block.text)] if block.text else []
        if block.type == "thinking":
            state["text"].append(block.thinking)
            state["signature"] = block.signature or ""
            return [ThinkingDelta(block.thinking)] if block.thinking else []
        if block.type == "redacted_thinking":
            state["data"] = block.data
        elif block.type == "tool_use":
            state.update(id=block.id, name=block.name, ordinal=self._tool_count)
            state["initial"] = json.dumps(block.input) if block.input else ""
            self._tool_count += 1
            return [ToolCallBegin(state["ordinal"], block.id, block.name)]
        return []  # server tool blocks and the like: not ours to replay

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        state = self._open[index]
        if delta.type == "text_delta":
            state["text"].append(delta.text)
            return [TextDelta(delta.text)]
        if delta.type == "thinking_delta":
            state["text"].append(delta.thinking)
            return [ThinkingDelta(delta.thinking)]
        if delta.type == "signature_delta":
            state["signature"] += delta.signature
        elif delta.type == "input_json_delta" and delta.partial_json:
            state["text"].append(delta.partial_json)
            return [ToolCallArgsDelta(state["ordinal"], state["id"], delta.partial_json)]
        return []

    def _stop_block(self, index: int) -> None:
        state = self._open.pop(index)
        text = "".join(state["text"])
        kind = state["type"]
        if kind == "text" and text:
            self._parts[index] = TextPart(text)
        elif kind == "thinking":
            self._parts[index] = ThinkingPart(text, state["signature"] or None, KIND)
        elif kind == "redacted_thinking":
            data = {"type": "redacted_thinking", "data": state["data"]}
            self._parts[index] = OpaquePart(KIND, freeze(data))
        elif kind == "tool_use":
            self._parts[index] = ToolCall.parse(
                state["id"], state["name"], text or state["initial"]
            )

    def _take_usage(self, usage: Any) -> None:
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = getattr(usage, key, None)
            if value is not None:
                self._usage[key] = value

    def done(self) -> StreamDone:
        if not self.finished:
            raise StreamCut(
                f"{KIND}: the stream ended before message_stop; the reply is incomplete",
                provider=KIND,
            )
        parts = tuple(self._parts[i] for i in sorted(self._parts))
        message = AssistantMessage(parts, KIND, self._model, self._message_id)
        usage = UsageInfo(
            input_tokens=self._usage.get("input_tokens", 0),
            output_tokens=self._usage.get("output_tokens", 0),
            cache_read_tokens=self._usage.get("cache_read_input_tokens", 0),
            cache_write_tokens=self._usage.get("cache_creation_input_tokens", 0),
        )
        return StreamDone(message, self._stop_reason, usage)


# --- provider ----------------------------------------------------------------------------


class AnthropicProvider:
    """One `AsyncAnthropic` client; `stream()` is one Messages request."""

    kind: ProviderKind = KIND

    def __init__(
        self, settings: ProviderSettings, client: anthropic.AsyncAnthropic | None = None
    ) -> None:
        self.settings = settings
        #: A lent client (a `ClientPool`'s) stays open when this provider closes.
        self._owns_client = client is None
        if client is None:
            client = anthropic.AsyncAnthropic(
                **client_options(settings, anthropic.DefaultAsyncHttpxClient)
            )
        self._client = client
        #: Named in errors (no query, no user info).
        self.url = endpoint(self._client.base_url, "v1/messages")

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        extra = {**self.settings.extra, **thaw(request.extra)}
        caching = not ("cache_control" in extra and extra.pop("cache_control") is None)
        system: list[TextBlockParam] = (
            [{"type": "text", "text": request.system}] if request.system else []
        )
        messages = to_anthropic_messages(request.messages)
        tools = to_anthropic_tools(request.tools)
        if caching:
            add_cache_breakpoints(system, tools, messages)

        async def start() -> anthropic.AsyncStream[RawMessageStreamEvent]:
            return await self._client.messages.create(
                model=request.model,
                max_tokens=request.max_tokens,
                system=system or anthropic.omit,
                messages=messages,
                tools=tools or anthropic.omit,
                stream=True,
                extra_body=extra or None,
            )

        return open_event_stream(KIND, SDK_ERRORS, start, AnthropicAssembler(), self.url)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()
