"""One retry policy for model requests: what is retried, how long to wait, what is said.

The SDKs' own retries are off (`_stream.client_options`); the agent loop's `stream_step`
retries a failed request through a `Retries` per step, because only the loop knows whether
any of the reply was already shown.

**What is retried** — failures that say nothing about the request itself: HTTP 408, 409,
429, 5xx and 529; a connection reset or closed before the reply started; an `overloaded_error`,
`api_error` (any server-side error type) or rate limit reported *inside* a 200 stream; a
stream that was cut or stalled (`stream_idle_timeout_s`). Never retried: 400/401/403/404
and other refusals, a malformed event (a protocol bug repeats), a connection that could not
be made at all (refused, unknown host, TLS: a wrong base URL or a server that is down should
be said at once, not after a minute of waits), and — whatever the cause —
a reply of which something was already shown (text, thinking or a tool call's start): a
terminal, headless stdout or an editor cannot take back what they printed, so the step
ends with an error and the display history marks the partial reply as interrupted. A
committed message (and so a committed tool call) is never re-requested: retries happen
inside one step, before its reply is committed.

**How long** — exponential backoff with jitter: before retry n (1-based), a wait drawn
uniformly from [b/2, b] with b = min(`base_s` × 2^(n-1), `cap_s`); a `retry-after-ms` or
`retry-after` from the service replaces it (honoured exactly, even past `cap_s`). At most
`max_retries` retries, and no wait that would end more than `retry_budget_s` after the
first failure. Every wait is a plain `trio.sleep` in the turn's scope: a cancel ends it at
once.

**What is said** — before each wait a notice, e.g. "retrying in 4 s: 529 overloaded, retry
1 of 6". When rawtrio gives up, the error keeps the service's message and adds why there is
no further try ("gave up after 6 retries"); it never promises a retry.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import trio

from rawtrio.errors import (
    ConnectionFailed,
    MalformedStream,
    Overloaded,
    ProviderError,
    RateLimited,
    RequestTimedOut,
    ServerFailed,
    StreamCut,
    StreamStalled,
)
from rawtrio.providers.base import ProviderSettings

#: HTTP statuses worth another try (besides every 5xx).
RETRY_STATUSES = frozenset({408, 409, 429, 529})

_RETRIED_KINDS: tuple[type[ProviderError], ...] = (
    Overloaded,
    RateLimited,
    ServerFailed,
    RequestTimedOut,
    ConnectionFailed,
    StreamCut,
)


def retryable(exc: ProviderError) -> bool:
    """Whether another identical request may succeed where this one failed."""
    import httpx2  # loaded with the SDK by now; never at start-up (docs/benchmarks.md)

    if isinstance(exc, MalformedStream) or _caused_by(exc, httpx2.ConnectError):
        return False
    if exc.status is not None:
        return exc.status in RETRY_STATUSES or exc.status >= 500
    return isinstance(exc, _RETRIED_KINDS)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 6
    budget_s: float = 300.0
    base_s: float = 1.0
    cap_s: float = 30.0

    @classmethod
    def of(cls, settings: ProviderSettings) -> RetryPolicy:
        return cls(max_retries=settings.max_retries, budget_s=settings.retry_budget_s)


@dataclass(frozen=True, slots=True)
class Retry:
    """Try again after `wait_s`; `notice` is what the user is told meanwhile."""

    wait_s: float
    notice: str


@dataclass
class Retries:
    """The retry state of one request (one step): how many so far, since when."""

    policy: RetryPolicy
    done: int = 0
    first_failure_at: float | None = None
    _random: random.Random = field(default_factory=random.Random)

    def after(self, exc: ProviderError, *, shown: bool) -> Retry | None:
        """A `Retry`, or None: then `exc` ends the step, its message saying why it was not
        retried (a refusal such as a 401 is left as it is)."""
        now = trio.current_time()
        if self.first_failure_at is None:
            self.first_failure_at = now
        if not retryable(exc):
            return None
        asked = exc.retry_after
        if asked is not None:
            wait = asked
        else:
            ceiling = min(self.policy.base_s * 2**self.done, self.policy.cap_s)
            wait = self._random.uniform(ceiling / 2, ceiling)
        why_not = self._why_not(shown, wait, asked is not None, now - self.first_failure_at)
        if why_not is not None:
            exc.args = (f"{exc}; {why_not}", *exc.args[1:])
            return None
        self.done += 1
        return Retry(
            wait,
            f"retrying in {seconds(wait)}: {describe(exc)}, "
            f"retry {self.done} of {self.policy.max_retries}",
        )

    def _why_not(self, shown: bool, wait: float, asked: bool, elapsed: float) -> str | None:
        if shown:
            return "not retried: part of the reply was already shown"
        if self.policy.max_retries == 0:
            return "not retried (max_retries = 0)"
        tried = _n(self.done, "retry", "retries")
        if self.done >= self.policy.max_retries:
            return f"gave up after {tried}"
        if wait > self.policy.budget_s - elapsed:
            what = f"the service asked to wait {seconds(wait)}" if asked else "the next wait"
            return (
                f"gave up after {tried}: {what}, which would pass the retry budget "
                f"(retry_budget_s = {self.policy.budget_s:g})"
            )
        return None


def describe(exc: ProviderError) -> str:
    """A few words for a notice: "529 overloaded", "stream stalled", "connection failed"."""
    kind = {
        StreamStalled: "stream stalled",
        Overloaded: "overloaded",
        RateLimited: "rate limited",
        RequestTimedOut: "timed out",
        ConnectionFailed: "connection failed",
        StreamCut: "stream cut",
        ServerFailed: "server error",
    }.get(type(exc), "failed")
    if exc.status is not None:
        return f"{exc.status} {kind}"
    return (
        kind
        if isinstance(exc, StreamCut | ConnectionFailed | RequestTimedOut)
        else (f"{kind} (in the stream)")
    )


def seconds(s: float) -> str:
    """A wait for people: "4 s", "1.5 s", "250 ms"."""
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 10:
        return f"{s:.1f}".removesuffix(".0") + " s"
    return f"{s:.0f} s"


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"
