"""rawtrio's errors, in one place.

Hierarchy::

    RawtrioError                    base of everything rawtrio raises on purpose
    ├── UsageError                  bad command-line use (exit 2)
    ├── ConfigError                 bad configuration (exit 2); names file, key and expectation
    ├── NoCredentials               no API key for the provider (exit 4)
    ├── SessionError
    │   ├── UnknownSession          no session with that id
    │   ├── SessionLocked           another process holds the writer lease (exit 5)
    │   ├── SessionClosed           operation on a closed session
    │   └── TurnInProgress          submit while a turn is running
    └── ProviderError               the model side failed; ends the step with outcome `error`
        ├── AuthenticationFailed    401/403: the key is wrong or lacks access
        ├── RateLimited             429; `retry_after` seconds when the service said so
        ├── Overloaded              529 / "overloaded_error"
        ├── ServerFailed            5xx
        ├── BadRequest              400/404/422: the service refused the request
        ├── RequestTimedOut         no answer within the request timeout
        │   └── StreamStalled       no byte for `stream_idle_timeout_s` in a started reply
        ├── ConnectionFailed        could not connect / connection reset before any byte
        ├── StreamCut               the stream ended or broke before its final event
        └── MalformedStream         the stream carried something that is not the protocol

Errors carry structured fields and a message that says what to do next where there is
something to do. Cancellation is never an error: `trio.Cancelled` always propagates.
"""

from __future__ import annotations


class RawtrioError(Exception):
    """Base of rawtrio's errors."""


class UsageError(RawtrioError):
    pass


class ConfigError(RawtrioError):
    pass


class NoCredentials(RawtrioError):
    def __init__(self, provider: str, env_var: str) -> None:
        self.provider = provider
        self.env_var = env_var
        hint = (
            f" (for a local OpenAI-compatible server any non-empty value works, "
            f"e.g. {env_var}=local with --base-url)"
            if provider.startswith("openai")
            else ""
        )
        super().__init__(
            f"no API key for {provider}: set {env_var} in the environment, or point the "
            f"model's api_key at a variable in the config (rawtrio config init){hint}"
        )


class SessionError(RawtrioError):
    pass


class UnknownSession(SessionError):
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"no session with id {session_id!r} (list them: rawtrio sessions list)")


class SessionLocked(SessionError):
    def __init__(self, session_id: str, pid: int | None) -> None:
        self.session_id = session_id
        self.pid = pid
        who = f" (pid {pid})" if pid else ""
        super().__init__(f"session {session_id} is open in another process{who}")


class SessionClosed(SessionError):
    pass


class TurnInProgress(SessionError):
    pass


class ProviderError(RawtrioError):
    """The model side failed. `status` is the HTTP status when there was one;
    `retry_after` the seconds the service asked to wait (`retry-after[-ms]`), if it did."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.provider = provider
        self.retry_after = retry_after
        super().__init__(message)


class AuthenticationFailed(ProviderError):
    pass


class RateLimited(ProviderError):
    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = 429,
        provider: str = "",
    ) -> None:
        super().__init__(message, status=status, provider=provider, retry_after=retry_after)


class Overloaded(ProviderError):
    pass


class ServerFailed(ProviderError):
    pass


class BadRequest(ProviderError):
    pass


class RequestTimedOut(ProviderError):
    pass


class StreamStalled(RequestTimedOut):
    pass


class ConnectionFailed(ProviderError):
    pass


class StreamCut(ProviderError):
    pass


class MalformedStream(ProviderError):
    pass


def exit_code_for(exc: RawtrioError) -> int:
    """The exit code (DESIGN.md §3a) a front end ends with when `exc` stops it."""
    from rawtrio.contracts import ExitCode

    if isinstance(exc, SessionLocked):
        return ExitCode.SESSION_LOCKED
    if isinstance(exc, NoCredentials):
        return ExitCode.NO_CREDENTIALS
    if isinstance(exc, UsageError | ConfigError | UnknownSession):
        return ExitCode.USAGE
    return ExitCode.ERROR
