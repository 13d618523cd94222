"""One MCP server as a session uses it: started on demand, restarted after a crash.

A `McpConnection` owns at most one running server at a time. `ensure_ready` starts it
in the session's MCP nursery (`nursery.start(self._run)`): the task opens the transport
(stdio child process or streamable HTTP), enters the SDK's `ClientSession`, runs
`initialize` and lists the tools within `startup_timeout_s`, and then keeps the
connection open until `stop()` or until the server goes away.

- A server that exits on its own (a crash) is reported through `notify`, with its exit
  status and the tail of its log; requests in flight fail at once (the transport closes
  the session's stream), and the next use starts it again after a backoff that doubles
  with each failure in a row (`restart_backoff_s`, at most `MAX_BACKOFF_S`).
- A server that does not answer `initialize` in time, or fails to start, is reported the
  same way and counts as a failure.
- A call that times out is followed by a ping in the background; a server that does not
  answer it either is considered hung, reported, and stopped (restarted on next use).

Exception-group policy: everything the SDK's task groups raise is collapsed
(`rawtrio.groups.collapse_group`); before the server is ready a failure propagates to
the `ensure_ready` caller as `McpServerError`; after that the connection task catches
every `Exception` and records it as the server's failure, so the session's nursery never
sees one.
"""

from __future__ import annotations

import enum
import logging
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from rawtrio import __version__
from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.errors import RawtrioError
from rawtrio.groups import collapse_group
from rawtrio.mcp.log import ServerLog
from rawtrio.processes import CALL_ENV_VAR, ProcessSpec, child_environment

if TYPE_CHECKING:
    import mcp_types as types
    from mcp import ClientSession

    from rawtrio.config.schema import McpServerConfig, ValueRef
    from rawtrio.mcp.stdio import StdioTransport

log = logging.getLogger(__name__)

MAX_BACKOFF_S: Final = 30.0
#: A ping after a timed-out call gets the call's timeout, at least 1 s and at most this.
PING_TIMEOUT_S: Final = 5.0
#: How long a failed call waits for the server task to notice the exit (for its status).
_EXIT_NOTICE_S: Final = 1.0
#: Beyond twice the grace period, what closing a connection may take before it is cut.
_CLOSE_SLACK_S: Final = 1.0
#: One stdio message (a JSON-RPC line) may be at most this long.
MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024

Notify = Callable[[str, str], None]
ResolveEnv = Callable[[Mapping[str, "ValueRef"]], Awaitable[dict[str, str]]]


class McpServerError(RawtrioError):
    """A server could not be started or reached; the message is for the model and the user."""

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"MCP server {server!r} {reason}")


class ServerState(enum.StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    CLOSED = "closed"


@dataclass(frozen=True)
class ConnectionSettings:
    """What every server of a session shares."""

    session_id: str
    cwd: Path
    grace_s: float
    strip_env: tuple[str, ...] = ()
    #: The environment a stdio server starts from (before `strip_env`) and `{env = "NAME"}`
    #: values are read from when `resolve` is None; None: this process's (`os.environ`).
    env: Mapping[str, str] | None = None
    #: Resolves `env` / `headers` values (variables, environment); literal-only when None.
    resolve: ResolveEnv | None = None
    #: (level, text) for the user: crashes, hangs, restarts.
    notify: Notify = field(default=lambda level, text: None)
    max_message_bytes: int = MAX_MESSAGE_BYTES


async def resolve_literal(
    refs: Mapping[str, ValueRef], env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Values without a variable resolver: literals and `{env = ...}` (read from `env`,
    default this process's environment) only."""
    environ = os.environ if env is None else env
    out: dict[str, str] = {}
    for key, ref in refs.items():
        if ref.value is not None:
            out[key] = ref.value
        elif ref.env is not None and ref.env in environ:
            out[key] = environ[ref.env]
        else:
            what = f"variable {ref.var!r}" if ref.var else f"environment variable {ref.env!r}"
            raise McpServerError("?", f"needs {what} for {key!r}, which is not available")
    return out


class McpConnection:
    def __init__(self, name: str, config: McpServerConfig, settings: ConnectionSettings) -> None:
        self.name = name
        self.config = config
        self.settings = settings
        self.log = ServerLog()
        self.state = ServerState.STOPPED
        #: Why the server last failed (None while it has not).
        self.error: str | None = None
        self.tools: list[types.Tool] | None = None
        #: What the server said it is (`initialize`), once it ran.
        self.server_info: types.Implementation | None = None
        self.starts = 0
        self.failures_in_a_row = 0
        self._retry_at = 0.0
        self._session: ClientSession | None = None
        self._starting: _Start | None = None
        self._run_scope = trio.CancelScope()
        self._stop = trio.Event()
        self._done = trio.Event()
        self._done.set()
        self._pid: int | None = None
        #: The stdio transport of the current (or last) run: its exit status.
        self._transport: StdioTransport | None = None

    @property
    def transport(self) -> str:
        return "stdio" if self.config.command is not None else "http"

    @property
    def pid(self) -> int | None:
        """The server process while one runs (stdio only)."""
        return self._pid

    # --- starting -----------------------------------------------------------------------

    async def ensure_ready(self, nursery: trio.Nursery) -> ClientSession:
        """The live client session, starting the server first if needed (after the backoff
        of a previous failure). McpServerError when it cannot be started.

        The start runs as a task of `nursery` (the session's), not of the caller: a caller
        cancelled while the server starts returns at once, and the start goes on for the
        next call (a turn never waits for a server to stop, I4)."""
        if self.state is ServerState.READY and self._session is not None:
            return self._session
        if self.state is ServerState.CLOSED:
            raise McpServerError(self.name, "is not available: the session is closing")
        start = self._starting
        if start is None:
            start = self._starting = _Start()
            nursery.start_soon(self._start, start, nursery, name=f"start MCP server {self.name}")
        await start.done.wait()
        if start.error is not None:
            raise start.error
        if self._session is None:
            raise McpServerError(self.name, self.error or "stopped right after it started")
        return self._session

    async def _start(self, start: _Start, nursery: trio.Nursery) -> None:
        try:
            wait = self._retry_at - trio.current_time()
            if wait > 0:
                await trio.sleep(wait)
            await self._done.wait()  # a previous run has fully stopped
            if self.state is ServerState.CLOSED:
                raise McpServerError(self.name, "is not available: the session is closing")
            self._stop = trio.Event()
            with collapse_group():
                await nursery.start(self._run)
        except McpServerError as exc:
            if self.state is not ServerState.CLOSED:
                self._failed(exc.reason)
            start.error = exc
        finally:
            self._starting = None
            start.done.set()

    async def _run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.state = ServerState.STARTING
        self.starts += 1
        self._done = trio.Event()
        started = False
        try:
            with collapse_group(), trio.CancelScope() as self._run_scope:
                async with self._open_transport() as (read, write, closed):
                    from mcp import ClientSession

                    session = ClientSession(
                        read,
                        write,
                        client_info=_client_info(),
                        logging_callback=self._on_log,
                    )
                    async with session:
                        tools = await self._handshake(session)
                        self._session, self.tools = session, tools
                        self.server_info = session.server_info
                        self.state, self.error = ServerState.READY, None
                        started = True
                        task_status.started()
                        await _either(self._stop, closed)
                        self._session = None
                        if not self._stop.is_set():
                            self._crashed()
            if not started:  # `stop()` cancelled the start
                raise McpServerError(self.name, "was stopped while it was starting")
        except McpServerError:
            if started:
                raise AssertionError("McpServerError after start") from None
            raise
        except OSError as exc:
            if started:
                self._failed(f"failed: {exc}")
            else:
                raise McpServerError(self.name, f"could not be started: {exc}") from None
        except Exception as exc:
            if not started:
                raise McpServerError(self.name, f"could not be started: {_describe(exc)}") from None
            log.warning("MCP server %s failed", self.name, exc_info=True)
            self._failed(f"failed: {_describe(exc)}")
        finally:
            self._session = None
            self._pid = None
            if self.state in (ServerState.READY, ServerState.STARTING):
                self.state = ServerState.STOPPED
            self._done.set()

    async def _handshake(self, session: ClientSession) -> list[types.Tool]:
        timeout = self.config.startup_timeout_s
        try:
            with trio.fail_after(timeout):
                await session.initialize()
                return await _list_tools(session)
        except trio.TooSlowError:
            raise McpServerError(
                self.name, f"did not answer initialize within {timeout:g} s (startup_timeout_s)"
            ) from None
        except Exception as exc:
            raise McpServerError(
                self.name, f"failed during initialize: {_describe(exc)}{self._log_tail()}"
            ) from None

    def _open_transport(
        self,
    ) -> AbstractAsyncContextManager[tuple[Any, Any, trio.Event]]:
        if self.config.command is not None:
            return self._open_stdio()
        return self._open_http()

    @asynccontextmanager
    async def _open_stdio(self) -> AsyncIterator[tuple[Any, Any, trio.Event]]:
        from rawtrio.mcp.stdio import StdioSpec, open_stdio_transport

        cfg, s = self.config, self.settings
        assert cfg.command is not None
        marker = f"mcp-{uuid.uuid4().hex}"
        env = child_environment(
            s.env, session_id=s.session_id, strip=s.strip_env, call_marker=marker
        )
        env.update(await self._resolve(cfg.env))
        env[CALL_ENV_VAR] = marker
        argv = [await self._expand(a, f"command[{i}]") for i, a in enumerate(cfg.command)]
        cwd = _server_cwd(await self._expand(cfg.cwd, "cwd") if cfg.cwd else None, s.cwd)
        process = ProcessSpec(
            argv=tuple(argv),
            cwd=cwd,
            env=env,
            marker=marker,
            grace_s=s.grace_s,
            stdin="pipe",
            stderr="pipe",
        )
        spec = StdioSpec(process=process, max_message_bytes=s.max_message_bytes)
        async with open_stdio_transport(spec, self.log) as (read, write, transport):
            self._pid = transport.pid
            self._transport = transport
            yield read, write, transport.closed

    @asynccontextmanager
    async def _open_http(self) -> AsyncIterator[tuple[Any, Any, trio.Event]]:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert self.config.url is not None
        url = await self._expand(self.config.url, "url")
        headers = await self._resolve(self.config.headers)
        timeout = httpx2.Timeout(self.config.startup_timeout_s, read=self.config.call_timeout_s)
        client = create_mcp_http_client(headers=headers, timeout=timeout)
        async with client, streamable_http_client(url, http_client=client) as (r, w):
            yield r, w, trio.Event()  # HTTP failures surface per request

    async def _expand(self, text: str, where: str) -> str:
        """`text` with `${VAR}` / `${VAR:-default}` expanded from the session's environment
        (rawtrio.mcp.expand); the values put in are registered as secrets."""
        from rawtrio.mcp.expand import ExpansionError, expand

        environ = os.environ if self.settings.env is None else self.settings.env
        try:
            out, used = expand(text, environ, where=where)
        except ExpansionError as exc:
            raise McpServerError(self.name, f"could not be configured: {exc}") from None
        if used and self.settings.resolve is not None:
            from rawtrio.config.schema import ValueRef

            await self.settings.resolve(
                {f"{where}#{i}": ValueRef(value=v) for i, v in enumerate(used)}
            )
        return out

    async def _resolve(self, refs: Mapping[str, ValueRef]) -> dict[str, str]:
        if not refs:
            return {}
        from rawtrio.config.schema import ValueRef

        # A literal with `${VAR}` in it ("Bearer ${TOKEN}") is expanded first; what
        # `resolve` returns is registered as a secret, the expanded text included.
        refs = {
            k: ValueRef(value=await self._expand(r.value, k)) if r.value is not None else r
            for k, r in refs.items()
        }
        try:
            if self.settings.resolve is not None:
                return await self.settings.resolve(refs)
            return await resolve_literal(refs, self.settings.env)
        except McpServerError as exc:
            raise McpServerError(self.name, exc.reason) from None
        except RawtrioError as exc:  # a VariableError names the variable
            raise McpServerError(self.name, f"could not be configured: {exc}") from None

    # --- failures -----------------------------------------------------------------------

    def _crashed(self) -> None:
        transport = self._transport
        status = transport.exit_text() if transport is not None else "connection closed"
        self._failed(f"exited unexpectedly ({status})")

    def _failed(self, reason: str) -> None:
        self.state = ServerState.FAILED
        self.error = reason
        self.failures_in_a_row += 1
        backoff = min(
            MAX_BACKOFF_S, self.config.restart_backoff_s * 2 ** (self.failures_in_a_row - 1)
        )
        self._retry_at = trio.current_time() + backoff
        self.settings.notify(
            "warning",
            f"MCP server {self.name!r} {reason}; it is restarted on next use "
            f"(after {backoff:g} s){self._log_tail()}",
        )

    def _log_tail(self, n: int = 5) -> str:
        tail = self.log.tail(n)
        return f"\nlast lines of its log:\n{tail}" if tail else ""

    def restart_note(self) -> str:
        return f"; it is restarted on next use{self._log_tail(3)}"

    async def wait_stopped(self) -> None:
        """Give the connection task a moment to notice the server went away."""
        with trio.move_on_after(_EXIT_NOTICE_S):
            await self._done.wait()

    def broken(self, reason: str) -> None:
        """The connection failed under a call (e.g. an HTTP server went away): report it
        and stop it, so the next use starts a fresh connection."""
        if self.state is ServerState.READY:
            self._failed(reason)
            self._stop.set()

    def succeeded(self) -> None:
        """A call went through: the next failure starts the backoff from the beginning."""
        self.failures_in_a_row = 0

    async def check_alive(self, session: ClientSession) -> None:
        """After a timed-out call: a server that does not answer a ping is stopped."""
        timeout = min(PING_TIMEOUT_S, max(1.0, self.config.call_timeout_s))
        with trio.move_on_after(timeout) as scope:
            try:
                await session.send_ping()
            except Exception as exc:
                log.info("MCP server %s: ping failed: %s", self.name, exc)
        if scope.cancelled_caught and self._session is session:
            self._failed(f"does not answer (no reply to a ping within {timeout:g} s)")
            self._stop.set()

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.log.add(f"log:{params.level}", str(params.data))

    # --- stopping -----------------------------------------------------------------------

    async def stop(self, *, final: bool = False) -> None:
        """Stop the server (if it runs) and wait until it is gone; `final` refuses later
        starts. A stdio server gets the transport's shutdown (close stdin, grace, SIGTERM,
        grace, SIGKILL: shielded, it always completes); a connection that takes longer
        than that to close (an HTTP session's DELETE to a dead server) is cancelled."""
        if final:
            if self.state is ServerState.STARTING:
                self._run_scope.cancel(reason="the session is closing")
            self.state = ServerState.CLOSED
        self._stop.set()
        with trio.move_on_after(CLEANUP_DEADLINE_S):
            with trio.move_on_after(2 * self.settings.grace_s + _CLOSE_SLACK_S):
                await self._done.wait()
            self._run_scope.cancel(reason="the MCP server did not close in time")
            await self._done.wait()


def _server_cwd(configured: str | None, session_cwd: Path) -> Path:
    if not configured:
        return session_cwd
    path = Path(configured).expanduser()
    return path if path.is_absolute() else session_cwd / path


class _Start:
    """One start of the server, awaited by every caller that needs it meanwhile."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.error: McpServerError | None = None


async def _either(a: trio.Event, b: trio.Event) -> None:
    async with trio.open_nursery() as nursery:

        async def wait(event: trio.Event) -> None:
            await event.wait()
            nursery.cancel_scope.cancel(reason="an event fired")

        nursery.start_soon(wait, a)
        nursery.start_soon(wait, b)


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    import mcp_types as types

    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever is not followed forever
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _client_info() -> types.Implementation:
    import mcp_types as types

    return types.Implementation(name="rawtrio", version=__version__)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
