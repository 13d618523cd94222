"""The HTTP side every adapter shares: the stream idle timeout, and URLs safe to show.

**Idle timeout.** `request_timeout_s` bounds connecting, sending and the wait for the
response to start; once a reply streams, a gap of `stream_idle_timeout_s` without a single
byte is a stall. It is counted in bytes, not in SDK events: the Anthropic SDK swallows the
service's `ping` events, which are exactly what keeps a slow but healthy reply alive. The
watch is an httpx response hook that wraps the body stream, so it holds for every
transport the client uses (proxies included) and needs nothing from the SDK. A stall
raises `IdleTimeout`, an `httpx2.ReadTimeout`, which both SDKs and
`rawtrio.providers.errors` already treat as a transport failure; it becomes `StreamStalled`.

**URLs in errors.** An error names the endpoint it called so a wrong base URL is obvious
("could not reach http://localhost:11434/v1/chat/completions"). `safe_url` keeps scheme,
host, port and path only: user info and the query (where some gateways put keys) never
reach a message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import httpx2
import trio


class IdleTimeout(httpx2.ReadTimeout):
    """No byte of a streaming response arrived for `idle_s` seconds."""

    def __init__(self, idle_s: float, request: httpx2.Request) -> None:
        super().__init__(f"no data for {idle_s:g} s", request=request)
        self.idle_s = idle_s


class _WatchedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, idle_s: float, request: httpx2.Request):
        self._inner = inner
        self._idle_s = idle_s
        self._request = request

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _WatchedChunks(self._inner.__aiter__(), self._idle_s, self._request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _WatchedChunks:
    def __init__(self, chunks: AsyncIterator[bytes], idle_s: float, request: httpx2.Request):
        self._chunks = chunks
        self._idle_s = idle_s
        self._request = request

    def __aiter__(self) -> _WatchedChunks:
        return self

    async def __anext__(self) -> bytes:
        with trio.move_on_after(self._idle_s):
            return await self._chunks.__anext__()
        raise IdleTimeout(self._idle_s, self._request)


def idle_watch(idle_s: float) -> Callable[[httpx2.Response], Coroutine[Any, Any, None]]:
    """An httpx `response` event hook that puts the idle timeout on the response body."""

    async def watch(response: httpx2.Response) -> None:
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _WatchedBody(response.stream, idle_s, response.request)

    return watch


def safe_url(url: httpx2.URL | str) -> str:
    """`url` without user info, query or fragment: fit for an error message."""
    u = httpx2.URL(str(url))
    port = f":{u.port}" if u.port is not None else ""
    return f"{u.scheme}://{u.host}{port}{u.path}"


def endpoint(base_url: httpx2.URL, path: str) -> str:
    """The safe URL of `path` under an SDK client's `base_url` (as the SDK joins them)."""
    return safe_url(base_url).rstrip("/") + "/" + path
