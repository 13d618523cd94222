"""The OpenAI Responses adapter, stateless: `store=False`, reasoning carried by us.

Request mapping (neutral transcript → `input` items): a `UserMessage` is a user message
item; an `AssistantMessage` becomes its items in order — an assistant message item per
text part, its `reasoning` items sent back verbatim (kept as `OpaquePart`s, with their
`encrypted_content`, which `include=["reasoning.encrypted_content"]` asks for), a
`function_call` per tool call (`call_id`, `name`, arguments, `id` = the item id); each
`ToolResult` is a `function_call_output` whose `output` is the text, or, for a result with
images, a list: an `input_text` item, then an `input_image` data URL per image. The system
prompt is `instructions`.

A reasoning item becomes two parts: a `ThinkingPart` with its summary (what the user sees)
and the `OpaquePart` that goes back to the service. The final message is built from
`response.completed` (or `response.incomplete`, a reply cut by the output limit).

Usage is reported like Anthropic's: `input_tokens` excludes the cached input tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, cast

import openai
from openai.types.responses import (
    FunctionToolParam,
    ResponseFunctionCallOutputItemListParam,
    ResponseFunctionToolCallParam,
    ResponseInputItemParam,
    ResponseStreamEvent,
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
from rawtrio.providers.errors import SdkErrorTypes, error_from_service
from rawtrio.providers.http import endpoint
from rawtrio.providers.openai_chat import SDK_ERRORS as _OPENAI_ERRORS

KIND: ProviderKind = "openai-responses"

SDK_ERRORS: SdkErrorTypes = _OPENAI_ERRORS

_INCOMPLETE_REASONS = {"max_output_tokens": "max_tokens"}


# --- request -----------------------------------------------------------------------------


def to_responses_input(messages: tuple[Message, ...]) -> list[ResponseInputItemParam]:
    items: list[ResponseInputItemParam] = []
    for msg in messages:
        if isinstance(msg, ToolResult):
            items.append(
                {"type": "function_call_output", "call_id": msg.call_id, "output": _output(msg)}
            )
        elif isinstance(msg, AssistantMessage):
            items.extend(_assistant_items(msg.for_provider(KIND)))
        else:
            items.append(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": msg.text}],
                }
            )
    return items


def _output(msg: ToolResult) -> str | ResponseFunctionCallOutputItemListParam:
    """The text alone (as before images existed, so cached prefixes stay the same), or the
    text and the images."""
    images = [i for i in msg.images if i.media_type in MODEL_IMAGE_TYPES]
    if not images:
        return msg.content
    output: ResponseFunctionCallOutputItemListParam = [{"type": "input_text", "text": msg.content}]
    for image in images:
        url = f"data:{image.media_type};base64,{image.data}"
        output.append({"type": "input_image", "image_url": url})
    return output


def _assistant_items(msg: AssistantMessage) -> list[ResponseInputItemParam]:
    items: list[ResponseInputItemParam] = []
    for part in msg.parts:
        if isinstance(part, TextPart):
            # No item id: with store=False the service does not look assistant messages up.
            content = [{"type": "output_text", "text": part.text, "annotations": []}]
            item = {"type": "message", "role": "assistant", "content": content}
            items.append(cast(ResponseInputItemParam, item))
        elif isinstance(part, OpaquePart):
            items.append(cast(ResponseInputItemParam, thaw(part.data)))
        elif isinstance(part, ToolCall):
            call: ResponseFunctionToolCallParam = {
                "type": "function_call",
                "call_id": part.id,
                "name": part.name,
                "arguments": part.arguments_json(),
            }
            if part.provider_item_id is not None:
                call["id"] = part.provider_item_id
            items.append(call)
        # ThinkingPart: its reasoning item (the OpaquePart) is what goes back.
    return items


def to_responses_tools(tools: tuple[ToolSpec, ...]) -> list[FunctionToolParam]:
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": thaw(t.input_schema),
            "strict": False,
        }
        for t in tools
    ]


# --- response ----------------------------------------------------------------------------


class ResponsesAssembler:
    """Builds our events and the final message from Responses stream events."""

    def __init__(self, url: str = "") -> None:
        #: Named in the errors the stream reports.
        self.url = url
        self.finished = False
        self._calls: dict[str, tuple[int, str]] = {}  # item id -> (ordinal, call id)
        self._done_items: dict[int, Any] = {}  # output_index -> completed item
        self._final: Any = None  # the Response of response.completed / .incomplete

    def feed(self, event: ResponseStreamEvent) -> list[StreamEvent]:
        if event.type in ("response.output_text.delta", "response.refusal.delta"):
            return [TextDelta(event.delta)] if event.delta else []
        if event.type in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [ThinkingDelta(event.delta)] if event.delta else []
        if event.type == "response.output_item.added" and event.item.type == "function_call":
            ordinal = len(self._calls)
            self._calls[event.item.id or ""] = (ordinal, event.item.call_id)
            return [ToolCallBegin(ordinal, event.item.call_id, event.item.name)]
        if event.type == "response.function_call_arguments.delta":
            ordinal, call_id = self._calls[event.item_id]
            return [ToolCallArgsDelta(ordinal, call_id, event.delta)] if event.delta else []
        if event.type == "response.output_item.done":
            self._done_items[event.output_index] = event.item
        elif event.type in ("response.completed", "response.incomplete"):
            self._final = event.response
            self.finished = True
        elif event.type == "response.failed":
            error = event.response.error
            raise error_from_service(
                KIND,
                status=None,
                error_type=error.code if error else None,
                message=error.message if error else "the response failed",
                url=self.url,
            )
        elif event.type == "error":
            raise error_from_service(
                KIND, status=None, error_type=event.code, message=event.message, url=self.url
            )
        return []

    def done(self) -> StreamDone:
        if self._final is None:
            raise StreamCut(
                f"{KIND}: the stream ended before response.completed; the reply is incomplete",
                provider=KIND,
            )
        response = self._final
        output = list(response.output) or [self._done_items[i] for i in sorted(self._done_items)]
        parts: list[AssistantPart] = []
        for item in output:
            parts.extend(_item_parts(item))
        if response.status == "incomplete":
            details = response.incomplete_details
            reason = (details.reason if details else None) or "incomplete"
            stop_reason = _INCOMPLETE_REASONS.get(reason, reason)
        else:
            stop_reason = "tool_use" if any(isinstance(p, ToolCall) for p in parts) else "end_turn"
        message = AssistantMessage(tuple(parts), KIND, response.model, response.id)
        return StreamDone(message, stop_reason, _usage(response.usage))


def _item_parts(item: Any) -> list[AssistantPart]:
    if item.type == "message":
        texts = [
            getattr(c, "text", None) or getattr(c, "refusal", None) or "" for c in item.content
        ]
        text = "".join(texts)
        return [TextPart(text)] if text else []
    if item.type == "reasoning":
        summary = "\n\n".join(s.text for s in item.summary or ())
        opaque = OpaquePart(KIND, freeze(item.to_dict()))
        return [ThinkingPart(summary, None, KIND), opaque] if summary else [opaque]
    if item.type == "function_call":
        return [ToolCall.parse(item.call_id, item.name, item.arguments, item.id)]
    return []  # hosted tools and the like: not ours to replay


def _usage(usage: Any) -> UsageInfo:
    if usage is None:
        return UsageInfo()
    details = getattr(usage, "input_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return UsageInfo(
        input_tokens=usage.input_tokens - cached,
        output_tokens=usage.output_tokens,
        cache_read_tokens=cached,
    )


# --- provider ----------------------------------------------------------------------------


class OpenAIResponsesProvider:
    """One `AsyncOpenAI` client speaking the Responses API."""

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
        self.url = endpoint(self._client.base_url, "responses")

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        extra = {**self.settings.extra, **thaw(request.extra)}

        async def start() -> openai.AsyncStream[ResponseStreamEvent]:
            return await self._client.responses.create(
                model=request.model,
                instructions=request.system or openai.omit,
                input=to_responses_input(request.messages),
                tools=to_responses_tools(request.tools) or openai.omit,
                max_output_tokens=request.max_tokens,
                stream=True,
                store=False,
                include=["reasoning.encrypted_content"],
                extra_body=extra or None,
            )

        return open_event_stream(KIND, SDK_ERRORS, start, ResponsesAssembler(self.url), self.url)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()
