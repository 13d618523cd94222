"""SDK clients shared by the sessions of one runtime: one per endpoint and credentials.

Why: a session used to build its own SDK client, and with it an `httpx` client whose
`ssl.SSLContext` loads the whole CA bundle (hundreds of small OpenSSL allocations). Closed
and rebuilt session after session, that left about 70 kB of native heap behind per session
in a long-running server (glibc arenas that `malloc_trim` cannot give back: 1,000 sessions
grew RSS by ~75 MB, stress/bench/bench_memory.py), and every session paid for the CA bundle
and a fresh TCP/TLS connection. A `ClientPool` builds one client per `ClientKey` and lends
it to every session whose settings have that key; sessions stream through it concurrently
(the SDK clients are made for that: a connection per request from one pool).

Ownership: the pool owns the clients (the runtime owns the pool and closes it last); a
session borrows a `Provider` whose `aclose()` returns the loan and never closes the client.
A client nobody borrows stays open for the next session, up to `keep_idle` of them (oldest
closed first), so switching between a few models costs nothing and many keys stay bounded.

Keys: a client is shared only by settings with the same kind, base URL, API key, timeout,
retries and default headers, so a key is only ever sent to the endpoint it was configured
for (the model id and extra body parameters travel with each request, not the client).
Keys live only in memory, in the clients and this pool's index, as before.

Threads: `provider()` may import an SDK and build a client (~1 s the first time), so the
runtime calls it in a worker thread; the index is guarded by a lock held only for dict
updates, and a client is built under its own entry's lock, outside the index lock, so the
event loop never waits for a build.
"""

from __future__ import annotations

import importlib
import itertools
import threading
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Final, Protocol

from rawtrio.messages import ProviderKind
from rawtrio.providers import check_settings, make_provider
from rawtrio.providers.base import ModelRequest, Provider, ProviderSettings, StreamEvent

__all__ = ["DEFAULT_KEEP_IDLE", "ClientKey", "ClientPool", "build_client"]

#: Clients no session borrows that a pool keeps open for the next session.
DEFAULT_KEEP_IDLE = 4

#: The SDK client class of each kind (module, class), imported when first built.
_SDK_CLIENTS: Final[dict[ProviderKind, tuple[str, str]]] = {
    "anthropic": ("anthropic", "AsyncAnthropic"),
    "openai-chat": ("openai", "AsyncOpenAI"),
    "openai-responses": ("openai", "AsyncOpenAI"),
}


class SdkClient(Protocol):
    """What the pool needs of an SDK client (`AsyncAnthropic`, `AsyncOpenAI`)."""

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ClientKey:
    """What decides which client a session may share: everything the client sends with
    every request (the endpoint, the key, the headers) and its timeouts (the request
    timeout, and the stream idle timeout its HTTP client watches)."""

    kind: ProviderKind
    base_url: str | None
    api_key: str = field(repr=False)
    request_timeout_s: float
    stream_idle_timeout_s: float
    default_headers: tuple[tuple[str, str], ...] = field(repr=False)

    @classmethod
    def of(cls, settings: ProviderSettings) -> ClientKey:
        return cls(
            kind=settings.kind,
            base_url=settings.base_url,
            api_key=settings.api_key,
            request_timeout_s=settings.request_timeout_s,
            stream_idle_timeout_s=settings.stream_idle_timeout_s,
            default_headers=tuple(sorted(settings.default_headers.items())),
        )


def build_client(settings: ProviderSettings) -> SdkClient:
    """A new SDK client for `settings` (blocking: may import the SDK)."""
    module_name, class_name = _SDK_CLIENTS[settings.kind]
    module = importlib.import_module(module_name)
    # The stream helpers import httpx2, which the SDK imports anyway: after it, never at
    # start-up (docs/benchmarks.md, rawtrio's work before the SDK import).
    from rawtrio.providers._stream import client_options

    cls = getattr(module, class_name)
    client: SdkClient = cls(**client_options(settings, module.DefaultAsyncHttpxClient))
    return client


@dataclass(eq=False)
class _Entry:
    key: ClientKey
    client: SdkClient | None = None
    borrowers: int = 0
    #: When the last borrower left (a counter, not a clock); None while borrowed.
    idle_since: int | None = None
    building: threading.Lock = field(default_factory=threading.Lock)


class ClientPool:
    """The SDK clients of one runtime; see the module docstring for the rules."""

    def __init__(self, *, keep_idle: int = DEFAULT_KEEP_IDLE) -> None:
        if keep_idle < 0:
            raise ValueError(f"keep_idle must be >= 0, not {keep_idle}")
        self._keep_idle = keep_idle
        self._entries: dict[ClientKey, _Entry] = {}
        self._lock = threading.Lock()
        self._ticks = itertools.count()
        self._closed = False

    def __len__(self) -> int:
        """The number of clients open (borrowed or idle)."""
        with self._lock:
            return sum(1 for e in self._entries.values() if e.client is not None)

    def provider(self, settings: ProviderSettings) -> Provider:
        """A provider for `settings` that borrows the pool's client for its key (built on
        first use). Blocking: call it in a worker thread. Raises what `make_provider` raises
        for bad settings, and `RuntimeError` once the pool is closed."""
        check_settings(settings)
        key = ClientKey.of(settings)
        with self._lock:
            if self._closed:
                raise RuntimeError("the runtime's provider clients are closed")
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(key)
            entry.borrowers += 1  # reserved: never evicted while it is being built
            entry.idle_since = None
        try:
            with entry.building:
                if entry.client is None:
                    entry.client = build_client(settings)
            adapter = make_provider(settings, client=entry.client)
        except BaseException:
            with self._lock:
                entry.borrowers -= 1
                if not entry.borrowers:
                    entry.idle_since = next(self._ticks)
                    if entry.client is None and self._entries.get(key) is entry:
                        del self._entries[key]
            raise
        return _Borrowed(adapter, self, entry)

    async def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.borrowers -= 1
            if entry.borrowers:
                return
            entry.idle_since = next(self._ticks)
            idle = sorted(
                (e for e in self._entries.values() if e.idle_since is not None),
                key=lambda e: e.idle_since or 0,
            )
            evicted = idle[: max(0, len(idle) - self._keep_idle)]
            for e in evicted:
                del self._entries[e.key]
        for e in evicted:
            if e.client is not None:
                await e.client.close()

    async def aclose(self) -> None:
        """Close every client; later `provider()` calls raise. The runtime calls this after
        its sessions closed (a stream still running through a client is cut)."""
        with self._lock:
            self._closed = True
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            if entry.client is not None:
                await entry.client.close()


class _Borrowed:
    """A session's provider on a pooled client: `aclose()` returns the loan (once)."""

    def __init__(self, adapter: Provider, pool: ClientPool, entry: _Entry) -> None:
        self.kind: ProviderKind = adapter.kind
        self._adapter = adapter
        self._pool = pool
        self._entry: _Entry | None = entry

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        return self._adapter.stream(request)

    async def aclose(self) -> None:
        entry, self._entry = self._entry, None
        if entry is not None:
            await self._pool._release(entry)
