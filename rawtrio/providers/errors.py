"""SDK exceptions → `rawtrio.errors.ProviderError`, for all three adapters.

The adapters import their SDK lazily, so this module does not import `anthropic` or
`openai`: each adapter describes its SDK's exception classes in an `SdkErrorTypes` and
passes it in. `httpx2` is imported because both SDKs (and their raw mid-stream failures,
see STACK-NOTES) speak it.

Mapping:

- the HTTP status: 401/403 `AuthenticationFailed`, 429 `RateLimited` (with `retry-after`),
  529 `Overloaded`, 408 `RequestTimedOut`, other 5xx `ServerFailed` (`Overloaded` when the
  body says so), other 4xx `BadRequest`;
- an error inside a 200 stream has no status: the error type the service names
  (`overloaded_error`, `rate_limit_error`, `server_error`, …) decides, `ServerFailed` if
  it is unknown;
- transport failures: a timeout is `RequestTimedOut` (`StreamStalled` for the stream idle
  timeout, `rawtrio.providers.http`); a connection failure is `ConnectionFailed` before the
  response started and `StreamCut` after it.

Every message names the URL called when the adapter knows it (made safe: no user info, no
query), e.g. "openai-chat: could not reach http://localhost:11434/v1/chat/completions".
`retry_after` is parsed from `retry-after-ms` or `retry-after`; what is retried is decided in
`rawtrio.providers.retry`.

`trio.Cancelled` is a `BaseException` and never passes through here.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from rawtrio.errors import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    Overloaded,
    ProviderError,
    RateLimited,
    RequestTimedOut,
    ServerFailed,
    StreamCut,
    StreamStalled,
)
from rawtrio.providers.http import IdleTimeout


@dataclass(frozen=True, slots=True)
class SdkErrorTypes:
    """One SDK's exception classes (both SDKs share the shape)."""

    api_error: type[Exception]  # base of everything the SDK raises about a request
    status_error: type[Exception]  # has .status_code, .response, .body
    timeout_error: type[Exception]  # subclass of connection_error
    connection_error: type[Exception]

    @property
    def catchable(self) -> tuple[type[Exception], ...]:
        return (self.api_error, httpx2.TransportError)


#: Error types the services put in error bodies and stream error events.
_BY_TYPE: Mapping[str, type[ProviderError]] = {
    "overloaded_error": Overloaded,
    "overloaded": Overloaded,
    "rate_limit_error": RateLimited,
    "rate_limit_exceeded": RateLimited,
    "authentication_error": AuthenticationFailed,
    "permission_error": AuthenticationFailed,
    "invalid_api_key": AuthenticationFailed,
    "invalid_request_error": BadRequest,
    "not_found_error": BadRequest,
    "request_too_large": BadRequest,
    "invalid_prompt": BadRequest,
    "api_error": ServerFailed,
    "server_error": ServerFailed,
    "timeout_error": RequestTimedOut,
}


def translate_sdk_error(
    exc: Exception, sdk: SdkErrorTypes, provider: str, *, started: bool, url: str = ""
) -> ProviderError:
    """The rawtrio error for an exception raised by an SDK call or its stream.

    `started` says whether the response had begun streaming (a broken connection is then a
    cut stream, not a failed connection). `url` (already made safe by
    `rawtrio.providers.http.safe_url`) is named in the message.
    """
    at = f" {url}" if url else ""
    if isinstance(exc, sdk.timeout_error | httpx2.TimeoutException):
        idle = _idle_timeout(exc)
        if idle is not None:
            return StreamStalled(
                f"{provider}: no data from{at or ' the service'} for {idle.idle_s:g} s "
                "(stream_idle_timeout_s); the reply stalled",
                provider=provider,
            )
        return RequestTimedOut(
            f"{provider}: no answer from{at or ' the service'} within the request timeout "
            "(request_timeout_s)",
            provider=provider,
        )
    if isinstance(exc, sdk.connection_error | httpx2.TransportError):
        if started:
            return StreamCut(
                f"{provider}: the connection to{at or ' the service'} broke before the reply "
                f"was complete ({_cause_text(exc)})",
                provider=provider,
            )
        return ConnectionFailed(
            f"{provider}: could not reach{at or ' the service'} ({_cause_text(exc)}); "
            "check the network and the base URL",
            provider=provider,
        )
    status: int | None = getattr(exc, "status_code", None)
    if not isinstance(exc, sdk.status_error):
        status = None
    body = getattr(exc, "body", None)
    headers = exc.response.headers if isinstance(exc, sdk.status_error) else None  # type: ignore[attr-defined]
    return error_from_service(
        provider,
        status=status if status and status >= 300 else None,
        error_type=_body_field(body, "type") or _body_field(body, "code"),
        message=_body_field(body, "message") or str(exc),
        headers=headers,
        url=url,
    )


def error_from_service(
    provider: str,
    *,
    status: int | None,
    error_type: str | None,
    message: str,
    headers: Mapping[str, str] | None = None,
    url: str = "",
) -> ProviderError:
    """The rawtrio error for an error the service reported (HTTP status or stream event).

    The message states the failure only: whether rawtrio retries it, and what it says
    when it gives up, is `rawtrio.providers.retry`'s business (so a message never
    promises a retry that will not happen)."""
    by_type = _BY_TYPE.get(error_type or "")
    if status is None:
        cls = by_type or ServerFailed
    else:
        cls = _by_status(status)
        if cls is ServerFailed and by_type is Overloaded:  # e.g. a 503 saying "overloaded"
            cls = Overloaded
    if status:
        where = f" ({status} from {url})" if url else f" ({status})"
    else:
        where = f" (in the reply from {url})" if url else ""
    retry_after = parse_retry_after(headers) if headers is not None else None
    if cls is RateLimited:
        return RateLimited(
            f"{provider} rate limit reached{where}: {message}",
            retry_after=retry_after,
            status=status,
            provider=provider,
        )
    text = {
        AuthenticationFailed: "{p} refused the API key{w}: {m}; check the key and its access",
        Overloaded: "{p} is overloaded{w}: {m}",
        ServerFailed: "{p} failed{w}: {m}",
        BadRequest: "{p} rejected the request{w}: {m}",
        RequestTimedOut: "{p} timed out{w}: {m}",
    }[cls]
    return cls(
        text.format(p=provider, w=where, m=message),
        status=status,
        provider=provider,
        retry_after=retry_after,
    )


def _by_status(status: int | None) -> type[ProviderError]:
    if status in (401, 403):
        return AuthenticationFailed
    if status == 429:
        return RateLimited
    if status == 529:
        return Overloaded
    if status == 408:
        return RequestTimedOut
    if status is None or status >= 500:
        return ServerFailed
    return BadRequest


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    lower = {k.lower(): v for k, v in headers.items()}
    if (ms := lower.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _body_field(body: Any, key: str) -> str | None:
    """`key` of an error body: `{"error": {...}}` or the inner object itself."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping) and isinstance(inner.get(key), str):
            return str(inner[key])
        if isinstance(body.get(key), str):
            return str(body[key])
    return None


def _idle_timeout(exc: BaseException) -> IdleTimeout | None:
    """Our idle timeout, raised as is or wrapped by the SDK."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, IdleTimeout):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _cause_text(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return str(cause) if cause is not None and str(cause) else str(exc) or type(exc).__name__
