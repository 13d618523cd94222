"""The part every adapter shares: open an SDK stream, feed its events to an assembler,
translate failures, and close the HTTP response the moment the caller leaves.

An adapter supplies an `Assembler` — a synchronous state machine that turns one SDK event
into zero or more `StreamEvent`s and, at the end, builds the `StreamDone`. Keeping it
synchronous keeps the parsing testable without a server and leaves exactly one async
generator per stream (ours), which is closed explicitly.

Why the close is shielded: a cancelled caller leaves the `async with` with `trio.Cancelled`
in flight; an unshielded `aclose()` would be interrupted at its first checkpoint and could
leave the socket open. The shielded close has its own deadline (DESIGN §2).
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
from rawtrio.providers.base import ProviderSettings, StreamDone, StreamEvent
from rawtrio.providers.errors import SdkErrorTypes, translate_sdk_error
from rawtrio.providers.http import idle_watch


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
            yield event
    yield assembler.done()
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
