"""The part every adapter shares: open an SDK stream, feed its events to an assembler,
translate failures, and close the HTTP response the moment the caller leaves.

An adapter supplies an `Assembler` — a synchronous state machine that turns one SDK event
into zero or more `StreamEvent`s and, at the end, builds the `StreamDone`. Keeping it
synchronous keeps the parsing testable without a server and leaves exactly one async
generator per stream (ours), which is closed explicitly.

Why the close is shielded: a cancelled caller leaves the `async with` with `trio.Cancelled`
in flight; an unshielded `aclose()` would be interrupted at its first checkpoint and could
leave the socket open. The shielded close has its own deadline (docs/architecture.md).

Text that is not Unicode: a model's stream is JSON, and a JSON escape can spell a lone
surrogate (`"\\ud800"`), which no UTF-8 writer (SQLite, a pipe, a socket) accepts. Every
event leaves here writable (`writable`): each lone surrogate in a delta, a tool call's
name or argument text, and every string of the final message is replaced with U+FFFD, so
what the user sees, the model context and the store all hold the same text. A check
before any work keeps the cost per delta to one `str.isascii()` (O(1) in CPython) for
ASCII text and one regex scan of the delta otherwise. Arguments that spell a lone
surrogate as an escape (`{"path": "\\udc80"}`) are valid JSON; `ToolCall.parse` replaces
it in the parsed value.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import httpx2
import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.errors import MalformedStream, ProviderError
from rawtrio.frozen import freeze, thaw
from rawtrio.messages import (
    AssistantMessage,
    AssistantPart,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCall,
)
from rawtrio.providers.base import (
    ProviderSettings,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallBegin,
)
from rawtrio.providers.errors import SdkErrorTypes, translate_sdk_error
from rawtrio.providers.http import idle_watch
from rawtrio.unicode_safety import find_lone_surrogate, replace_lone_surrogates, scrub_json


class SdkStream(Protocol):
    """What both SDKs' `AsyncStream` offer."""

    def __anext__(self) -> Awaitable[Any]: ...

    async def close(self) -> None: ...


class Assembler(Protocol):
    #: True once the provider's final event arrived; reading stops there.
    finished: bool

    def feed(self, event: Any) -> list[StreamEvent]:
        """Our events for one SDK event; raises ProviderError for in-stream errors."""
        ...

    def done(self) -> StreamDone:
        """The final event; raises StreamCut when the provider's final event is missing."""
        ...


_END = object()

#: How long to read past the final event for the end of the body (see `_events`).
_DRAIN_S = 1.0


@asynccontextmanager
async def open_event_stream(
    provider: str,
    sdk: SdkErrorTypes,
    start: Callable[[], Awaitable[SdkStream]],
    assembler: Assembler,
    url: str = "",
) -> AsyncIterator[AsyncIterator[StreamEvent]]:
    """Start the request, then stream our events; errors name `url` (a safe URL).

    No retries here: the SDKs' own are off (`client_options`), the agent loop retries
    through `rawtrio.providers.retry`, because only it knows what was already shown."""
    try:
        sdk_stream = await start()
    except sdk.catchable as exc:
        raise translate_sdk_error(exc, sdk, provider, started=False, url=url) from exc
    events = _events(provider, sdk, sdk_stream, assembler, url)
    try:
        yield events
    finally:
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            await events.aclose()
            await sdk_stream.close()


async def _events(
    provider: str, sdk: SdkErrorTypes, sdk_stream: SdkStream, assembler: Assembler, url: str
) -> AsyncGenerator[StreamEvent, None]:
    while not assembler.finished:
        try:
            raw = await _next(sdk_stream)
        except sdk.catchable as exc:
            raise translate_sdk_error(exc, sdk, provider, started=True, url=url) from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            source = f" from {url}" if url else ""
            raise MalformedStream(
                f"{provider}: the stream{source} carried an event that is not valid JSON ({exc})",
                provider=provider,
            ) from exc
        if raw is _END:
            break
        try:
            produced = assembler.feed(raw)
        except ProviderError:
            raise
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            # The SDKs build events without validation: a missing field shows up here.
            kind = getattr(raw, "type", type(raw).__name__)
            raise MalformedStream(
                f"{provider}: unexpected shape of a {kind!r} event ({exc!r})", provider=provider
            ) from exc
        for event in produced:
            yield writable(event)
    yield writable(assembler.done())
    # Only reached when the caller reads on after StreamDone (a plain `async for` does):
    # reading the body to its end lets the HTTP connection go back to the pool instead of
    # being closed, saving a TLS handshake on the next request.
    with trio.move_on_after(_DRAIN_S):
        try:
            while await _next(sdk_stream) is not _END:
                pass
        except sdk.catchable:
            pass  # the reply is complete; a messy ending does not matter
        except ValueError:
            pass


def writable(event: StreamEvent) -> StreamEvent:
    """`event` with every lone surrogate in its text replaced by U+FFFD (the same object
    when it has none, which is nearly always: see the module docstring)."""
    # The hot path, one ASCII delta: exact type checks are cheaper than isinstance.
    if (type(event) is TextDelta or type(event) is ThinkingDelta) and event.text.isascii():
        return event
    return _writable(event)


def _writable(event: StreamEvent) -> StreamEvent:
    if isinstance(event, TextDelta | ThinkingDelta):
        text = replace_lone_surrogates(event.text)
        return event if text is event.text else type(event)(text)
    if isinstance(event, ToolCallArgsDelta):
        if event.delta.isascii() and event.call_id.isascii():
            return event
        delta = replace_lone_surrogates(event.delta)
        return ToolCallArgsDelta(event.index, replace_lone_surrogates(event.call_id), delta)
    if isinstance(event, ToolCallBegin):
        if event.name.isascii() and event.call_id.isascii():
            return event
        call_id, name = replace_lone_surrogates(event.call_id), replace_lone_surrogates(event.name)
        return ToolCallBegin(event.index, call_id, name)
    message = _writable_message(event.message)
    stop_reason = replace_lone_surrogates(event.stop_reason)
    if message is event.message and stop_reason is event.stop_reason:
        return event
    return StreamDone(message, stop_reason, event.usage)


def _writable_message(msg: AssistantMessage) -> AssistantMessage:
    parts = tuple(_writable_part(p) for p in msg.parts)
    model = _opt(msg.model)
    message_id = _opt(msg.provider_message_id)
    if (
        model is msg.model
        and message_id is msg.provider_message_id
        and all(new is old for new, old in zip(parts, msg.parts, strict=True))
    ):
        return msg
    return AssistantMessage(parts, msg.provider, model, message_id)


def _writable_part(part: AssistantPart) -> AssistantPart:
    r = replace_lone_surrogates
    if isinstance(part, TextPart):
        text = r(part.text)
        return part if text is part.text else TextPart(text)
    if isinstance(part, ThinkingPart):
        text, signature = r(part.text), _opt(part.signature)
        if text is part.text and signature is part.signature:
            return part
        # A signature signs the text as the model wrote it: with the text changed it signs
        # nothing, and the part is kept as unsigned thinking (shown, not sent back).
        return ThinkingPart(text, None, part.provider)
    if isinstance(part, OpaquePart):
        data = thaw(part.data)
        if find_lone_surrogate(data, "") is None:
            return part
        return OpaquePart(part.provider, freeze(scrub_json(data)))
    # A tool call: `ToolCall.parse` already replaced lone surrogates in the parsed value;
    # the text it was parsed from is replaced here and parsed again.
    id_, name, raw = r(part.id), r(part.name), r(part.raw_arguments)
    item_id = _opt(part.provider_item_id)
    if (id_, name, raw, item_id) == (part.id, part.name, part.raw_arguments, part.provider_item_id):
        return part
    return ToolCall.parse(id_, name, raw, item_id)


def _opt(text: str | None) -> str | None:
    return None if text is None else replace_lone_surrogates(text)


async def _next(sdk_stream: SdkStream) -> Any:
    try:
        return await sdk_stream.__anext__()
    except StopAsyncIteration:
        return _END


def client_options(
    settings: ProviderSettings, http_client: Callable[..., httpx2.AsyncClient]
) -> dict[str, Any]:
    """The SDK client arguments every adapter passes (both SDKs take the same names).

    `http_client` is the SDK's `DefaultAsyncHttpxClient` (its limits and redirects), given
    the stream idle timeout. The SDK's own retries are off: one retry policy, ours."""
    hooks = {"response": [idle_watch(settings.stream_idle_timeout_s)]}
    return {
        "api_key": settings.api_key,
        "base_url": settings.base_url,
        "timeout": settings.request_timeout_s,
        "max_retries": 0,
        "default_headers": dict(settings.default_headers) or None,
        "http_client": http_client(timeout=settings.request_timeout_s, event_hooks=hooks),
    }
