"""rawtrio's errors, in one place.

Every exception class rawtrio defines is listed here, with what raises it and how the
front ends show it. The classes of this module are the shared vocabulary; a few live
beside the code that raises them (module named in brackets) and still derive from these.

Hierarchy (what raises it — how it is shown)::

    RawtrioError                    base of everything rawtrio raises on purpose
    ├── UsageError                  bad command-line use: argument parsing, `--resume`
    │                               without a match, a flag that contradicts another
    ├── ConfigError                 bad configuration; names file, key and expectation
    │   ├── ConfigFileError         [config/errors] a config file that cannot be read/parsed
    │   ├── UnsafeFileError         [config/safe_read] a project file, prompt, memory or
    │   │                           skill file that is not a regular file inside its
    │   │                           folder, or too large (FIFO, /proc, /dev, symlink loop)
    │   └── VariableError           [config/variables] a variable that cannot be resolved
    ├── NoCredentials               no API key for the provider (names the variable)
    ├── SessionError
    │   ├── UnknownSession          no session with that id (store, runtime)
    │   ├── SessionLocked           another process holds the writer lease (store lease)
    │   ├── SessionClosed           operation on a closed session (Session)
    │   └── TurnInProgress          submit while a turn or compaction runs (Session)
    ├── StoreError                  [store/errors] the session database failed: a write
    │   │                           that was not saved (the turn ends `error`, the
    │   │                           runtime goes on; `from_sqlite` picks the message)
    │   ├── StoreFull               the disk is full
    │   ├── StoreUnusable           a database rawtrio cannot use (newer, foreign, corrupt
    │   │                           as SQLite judges it): left untouched, a new file used
    │   └── InvalidCursor           a history cursor that no page returned
    ├── ApprovalError               [permissions/approval] answering a permission request
    │   ├── UnknownApprovalRequest  no pending request with that id
    │   └── ApprovalAlreadyResolved answered (first answer wins) or cancelled already
    ├── McpServerError              [mcp/connection] an MCP server that does not start,
    │                               answer or list its tools (the call gets an error result)
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

How each front end shows them:

- headless `-p`, `sessions`, `config`, `mcp` commands: one line `rawtrio: <message>` on
  stderr and the exit code of `exit_code_for` (2 usage/config/unknown session, 4 no
  credentials, 5 locked, 1 anything else). A turn that ended `error` (provider or store
  fault) exits 1 with its reason on stderr.
- the terminal chat: an error at start leaves the chat with that message and exit code;
  later ones (a refused submit, a failed `/model`, an approval answered elsewhere) are an
  error line in the transcript and the chat goes on; a turn's `error` is its ending line.
- the line chat (`--plain`): the same, as printed lines.
- ACP: `NoCredentials` → -32000 (auth required), `UnknownSession` → -32002 (resource not
  found), every other `RawtrioError` → -32603 with the message; a turn that ended `error`
  answers `session/prompt` with -32603 naming the reason. Retries and store faults are also
  notices (`agent_thought_chunk`).

Internal exceptions (control flow inside one layer, never shown as such):
`Interrupted` [cli] (a signal before there was a turn: exit 130/143), `RpcError`,
`ConnectionLost`, `FrameTooLarge` [acp/jsonrpc] (a JSON-RPC error reply to send, a peer
gone, a frame over the limit: dropped and answered), `IdleTimeout` [providers/http] (becomes
`StreamStalled`), `TooLarge` [context/accounting] (a request that cannot fit: the turn ends
`error`), `SummaryFailed` [context/compaction] (compaction leaves the context as it was),
`FileToolError` [tools/file_io], `SkillError`, `FrontmatterError` [skills] and
`McpImportError` [mcp/importer] (become a tool result, a skipped skill with a warning, or a
command's error line).

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
    """The exit code (docs/contracts.md) a front end ends with when `exc` stops it."""
    from rawtrio.contracts import ExitCode

    if isinstance(exc, SessionLocked):
        return ExitCode.SESSION_LOCKED
    if isinstance(exc, NoCredentials):
        return ExitCode.NO_CREDENTIALS
    if isinstance(exc, UsageError | ConfigError | UnknownSession):
        return ExitCode.USAGE
    return ExitCode.ERROR
