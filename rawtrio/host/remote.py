"""A trio client of the attach protocol: the application (`App`) and its sessions, as a
front end sees them, served by a running host (docs/contracts.md, "The host and attaching").

`open_remote_app` turns a connection that passed the handshake (`rawtrio.cli.attach.find_host`)
into a `RemoteApp`: the same members the terminal chat uses of a local `App` (`options`,
`agent`, `notices`, `start_session`, `options_for`, `runtime`), and `RemoteSession`s with the
`Session` operations and attributes the chat uses (`rawtrio.tui.host.ChatSession`). Each is
one `_rawtrio/*` request or notification; the session's state (running turn, mode, model,
pending permission requests) follows the `_rawtrio/event` notifications, which are also fanned
out to the session's subscriptions exactly as a local session's hub does (a subscription too
slow to keep up is cut off, `lagged`, and resyncs with `events_since`).

Errors the host answers as a local run's (`-32000`, `data.kind`) are raised as that error
class (`remote_error`), so front ends catch what they catch locally. The connection going
away closes every session of it (`closed`), ends their subscriptions, and sets `gone`.

The connection's own task (the JSON-RPC peer) and the background answers (a permission
answer, a mode switch: synchronous operations locally) run in the nursery of
`open_remote_app`'s block.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket as stdsocket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from rawtrio import events as ev
from rawtrio.acp.jsonrpc import METHOD_NOT_FOUND, ConnectionLost, Peer, Ready, RpcError
from rawtrio.acp.stdio import DEFAULT_MAX_FRAME, LineTransport
from rawtrio.context.accounting import UsageTotals
from rawtrio.errors import (
    ConfigError,
    NoCredentials,
    RawtrioError,
    SessionClosed,
    SessionLocked,
    TurnInProgress,
    UnknownSession,
    UsageError,
)
from rawtrio.permissions.approval import (
    ApprovalAlreadyResolved,
    ApprovalDecision,
    UnknownApprovalRequest,
)
from rawtrio.permissions.rules import PermissionMode
from rawtrio.store.base import SessionRecord
from rawtrio.store.codec import event_from_json

if TYPE_CHECKING:
    from rawtrio.app.choice import Choice

log = logging.getLogger(__name__)

#: The error codes of the attach protocol (docs/contracts.md).
RAWTRIO_ERROR: Final = -32000
TURN_IN_PROGRESS: Final = -32002
#: `data.reason` of a -32002 answer for a session not live in the host (else a turn runs).
NOT_LIVE: Final = "not_live"
#: Events a subscription holds before it counts as lagging (as the local hub's default).
SUBSCRIPTION_BUFFER: Final = 10_000
#: Error kinds raised as their local class (the message is the host's).
_KINDS: Final[dict[str, type[RawtrioError]]] = {
    cls.__name__: cls
    for cls in (
        UsageError,
        ConfigError,
        NoCredentials,
        UnknownSession,
        SessionLocked,
        SessionClosed,
        TurnInProgress,
        ApprovalAlreadyResolved,
        UnknownApprovalRequest,
    )
}
#: The local class for an unknown kind, by the exit code the host gave.
_BY_EXIT_CODE: Final[dict[int, type[RawtrioError]]] = {
    2: UsageError,
    4: NoCredentials,
    5: SessionLocked,
}


class HostGone(RawtrioError):
    """The host went away (or the connection broke) while this front end was attached."""


def remote_error(exc: RpcError | ConnectionLost, host: str = "the host") -> RawtrioError:
    """The local error for an error answer (or a lost connection)."""
    if isinstance(exc, ConnectionLost):
        return HostGone(f"{host} went away")
    data = exc.data if isinstance(exc.data, dict) else {}
    if exc.code == TURN_IN_PROGRESS:  # `data.reason` says which (docs/acp.md)
        if data.get("reason") == NOT_LIVE:
            return SessionClosed(exc.message)
        return TurnInProgress(exc.message)
    cls: type[RawtrioError] | None = None
    if exc.code == RAWTRIO_ERROR:
        cls = _KINDS.get(str(data.get("kind")))
        code = data.get("exit_code")
        if cls is None and isinstance(code, int):
            cls = _BY_EXIT_CODE.get(code)
    if cls is None:
        return RawtrioError(f"{host} refused: {exc.message} ({exc.code})")
    # The local classes build their message from their fields; the host's message is the
    # one to show, so the constructor is skipped.
    err = cls.__new__(cls)
    Exception.__init__(err, exc.message)
    return err


@dataclass(frozen=True)
class RemoteOptions:
    """A session's options as the client sends them: the host resolves the rest."""

    cwd: Path
    env: Mapping[str, str]
    flags: Mapping[str, Any]
    explicit_cwd: bool = False

    def in_directory(self, cwd: Path) -> RemoteOptions:
        """These options for a session that works in `cwd` (`SessionOptions.in_directory`:
        the host anchors the command line's path patterns there)."""
        return dataclasses.replace(self, cwd=cwd)


@dataclass(frozen=True)
class RemoteSetup:
    options: RemoteOptions
    agent: str
    notices: tuple[str, ...] = ()


@dataclass
class RemotePolicy:
    """What the chat reads of a session's `PermissionPolicy`."""

    mode: PermissionMode


class RemoteSubscription:
    """A session's live events, as `Session.subscribe()` gives them (cut off when full)."""

    def __init__(self, session: RemoteSession, buffer: int) -> None:
        self._session = session
        self._send, self._recv = trio.open_memory_channel[ev.Event](buffer)
        self.lagged = False

    def put(self, event: ev.Event) -> None:
        try:
            self._send.send_nowait(event)
        except trio.WouldBlock:
            self.lagged = True
            self.end()
        except trio.ClosedResourceError:
            pass

    def end(self) -> None:
        self._send.close()
        self._session.subscriptions.discard(self)

    def __enter__(self) -> RemoteSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()
        self._recv.close()

    def __aiter__(self) -> RemoteSubscription:
        return self

    async def __anext__(self) -> ev.Event:
        try:
            return await self._recv.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None


@dataclass
class RemoteSession:
    """A session live in the host, as this connection follows it."""

    client: RemoteClient
    id: str
    cwd: Path
    options: RemoteOptions
    model_name: str
    model_names: tuple[str, ...]
    policy: RemotePolicy
    usage: UsageTotals
    record: SessionRecord
    running_turn: str | None = None
    closed: bool = False
    compacting: bool = False
    subscriptions: set[RemoteSubscription] = field(default_factory=set)
    #: Permission requests asked and not answered yet (request id → call id).
    pending: dict[str, str] = field(default_factory=dict)
    _ended: dict[str, ev.TurnEnded] = field(default_factory=dict)
    _changed: trio.Event = field(default_factory=trio.Event)

    # --- what the host tells -----------------------------------------------------------

    def apply(self, event: ev.Event) -> None:
        if isinstance(event, ev.TurnEnded):
            if event.turn_id is not None:
                self._ended[event.turn_id] = event
                while len(self._ended) > 64:
                    self._ended.pop(next(iter(self._ended)))
            if self.running_turn == event.turn_id:
                self.running_turn = None
            self.pending.clear()
            self.client.refresh_usage(self)
        elif event.turn_id is not None and event.turn_id not in self._ended:
            self.running_turn = event.turn_id
        if isinstance(event, ev.PermissionRequested):
            self.pending[event.request_id] = event.call_id
        elif isinstance(event, ev.PermissionAnswered):
            self.pending.pop(event.request_id, None)
        elif isinstance(event, ev.ModeChanged):
            self.policy.mode = PermissionMode(event.mode)
        elif isinstance(event, ev.ModelChanged):
            self.model_name = event.model
        elif isinstance(event, ev.CompactionStarted) and event.turn_id is None:
            self.compacting = True
        elif isinstance(event, ev.CompactionEnded) and event.turn_id is None:
            self.compacting = False
            self.client.refresh_usage(self)
        for sub in list(self.subscriptions):
            sub.put(event)
        self._signal()

    def _signal(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def gone(self) -> None:
        self.closed = True
        self.running_turn = None
        for sub in list(self.subscriptions):
            sub.end()
        self._signal()

    async def refresh(self) -> None:
        """Read the session's totals (`usage`) from the host."""
        info = await self.client.call("_rawtrio/session/info", {"sessionId": self.id})
        self.usage = _usage(info.get("usage") if isinstance(info, dict) else None)

    # --- Session's operations ----------------------------------------------------------

    def subscribe(self, buffer: int = SUBSCRIPTION_BUFFER) -> RemoteSubscription:
        sub = RemoteSubscription(self, buffer)
        if self.closed:
            sub.end()
        else:
            self.subscriptions.add(sub)
        return sub

    async def events_since(self, seq: int) -> list[ev.Event]:
        answer = await self.client.call(
            "_rawtrio/session/events", {"sessionId": self.id, "since": seq}
        )
        return [e for e in map(_decode, _list(answer, "events")) if e is not None]

    async def submit(self, text: str) -> str:
        if self.closed:
            raise SessionClosed(f"session {self.id} is closed")
        answer = await self.client.call(
            "_rawtrio/session/submit", {"sessionId": self.id, "text": text}
        )
        turn_id = str(_field(answer, "turnId"))
        if turn_id not in self._ended:
            self.running_turn = turn_id
        return turn_id

    def cancel(self, reason: str = "cancelled by the user") -> bool:
        """Cancel the running turn (or compaction), wherever it was started; whether
        there was one (as far as the host's events have told)."""
        if self.closed or (self.running_turn is None and not self.compacting):
            return False
        self.client.notify("_rawtrio/session/cancel", {"sessionId": self.id, "reason": reason})
        return True

    async def wait_turn(self, turn_id: str) -> ev.TurnEnded:
        while turn_id not in self._ended:
            if self.closed:
                raise self.client.gone_error()
            await self._changed.wait()
        return self._ended[turn_id]

    def answer_permission(self, request_id: str, decision: ApprovalDecision) -> None:
        """Answer a pending permission request; the first answer from any front end wins
        (an answer that lost shows as the winner's `permission_answered`)."""
        if request_id not in self.pending:
            raise UnknownApprovalRequest(request_id)
        self.pending.pop(request_id)
        params = {
            "sessionId": self.id,
            "requestId": request_id,
            "decision": {
                "kind": decision.kind.value,
                "scope": decision.scope.value,
                "message": decision.message,
                "answered_by": decision.answered_by,
            },
        }
        self.client.call_soon("_rawtrio/session/answer_permission", params)

    def set_mode(self, mode: PermissionMode | str) -> None:
        """Switch the permission mode; `mode_changed` tells every front end."""
        value = PermissionMode(mode).value
        self.client.call_soon("_rawtrio/session/set_mode", {"sessionId": self.id, "mode": value})

    async def set_model(self, name: str) -> None:
        answer = await self.client.call(
            "_rawtrio/session/set_model", {"sessionId": self.id, "model": name}
        )
        self.model_name = str(_field(answer, "model"))

    async def compact(self, focus: str | None = None) -> ev.CompactionEnded:
        self.compacting = True
        try:
            answer = await self.client.call(
                "_rawtrio/session/compact", {"sessionId": self.id, "focus": focus}
            )
        finally:
            self.compacting = False
        ended = _decode(answer if isinstance(answer, dict) else {})
        if not isinstance(ended, ev.CompactionEnded):
            raise RawtrioError("the host's answer to _rawtrio/session/compact is not its ending")
        return ended

    async def close(self, reason: str = "session closed") -> None:
        """Leave the session: the host goes on with a running turn, and closes the session
        once no front end is left and it is idle (docs/contracts.md)."""
        if self.closed:
            return
        try:
            await self.client.call("_rawtrio/session/close", {"sessionId": self.id})
        except HostGone:
            pass
        finally:
            self.client.sessions.pop(self.id, None)
            self.gone()


class RemoteClient:
    """One connection to the host: the JSON-RPC peer's dispatcher (the host's
    notifications), the requests, and the sessions it follows."""

    def __init__(self, nursery: trio.Nursery, pid: int | None) -> None:
        self.nursery = nursery
        self.pid = pid
        self.peer: Peer | None = None
        self.sessions: dict[str, RemoteSession] = {}
        #: Set when the connection ended.
        self.gone = trio.Event()

    @property
    def host(self) -> str:
        return f"the host (pid {self.pid})" if self.pid else "the host"

    def gone_error(self) -> HostGone:
        return HostGone(f"{self.host} went away")

    # --- Dispatcher --------------------------------------------------------------------

    async def handle_request(self, peer: Peer, method: str, params: Any, ready: Ready) -> Any:
        # Permission requests come to this client as events: it is a watcher, not an
        # ACP client, and answers them with `_rawtrio/session/answer_permission`.
        raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")

    async def handle_notification(self, peer: Peer, method: str, params: Any) -> None:
        if method != "_rawtrio/event" or not isinstance(params, dict):
            return
        session = self.sessions.get(str(params.get("sessionId")))
        data = params.get("event")
        if session is None or not isinstance(data, dict):
            return
        event = _decode(data)
        if event is not None:
            session.apply(event)

    def cancel_request(self, peer: Peer, method: str, request_id: Any) -> bool:
        return False

    # --- calling the host --------------------------------------------------------------

    async def call(self, method: str, params: Mapping[str, Any]) -> Any:
        peer = self.peer
        if peer is None or peer.closed.is_set():
            raise self.gone_error()
        try:
            return await peer.request(method, dict(params))
        except (RpcError, ConnectionLost) as exc:
            raise remote_error(exc, self.host) from None

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        if self.peer is not None:
            self.peer.notify(method, dict(params))

    def call_soon(self, method: str, params: Mapping[str, Any]) -> None:
        """A request whose answer nobody waits for (its effect shows as events); a
        refusal is logged."""

        async def send() -> None:
            try:
                await self.call(method, params)
            except RawtrioError as exc:
                log.info("%s: %s", method, exc)

        self.nursery.start_soon(send)

    def refresh_usage(self, session: RemoteSession) -> None:
        """Fetch the session's totals after a turn or a compaction (for `/cost`)."""

        async def refresh() -> None:
            try:
                await session.refresh()
            except RawtrioError as exc:
                log.info("session %s: no totals: %s", session.id, exc)

        self.nursery.start_soon(refresh)

    async def run(self) -> None:
        """Serve the connection (`peer`); when it ends, so do the sessions."""
        peer = self.peer
        assert peer is not None
        try:
            await peer.run()
        finally:
            self.gone.set()
            for session in list(self.sessions.values()):
                session.gone()


class RemoteRuntime:
    """The runtime operations the chat uses, over the connection."""

    def __init__(self, client: RemoteClient) -> None:
        self.client = client

    async def start(
        self,
        options: RemoteOptions,
        *,
        resume: str | None = None,
        continue_: bool = False,
        fork: bool = False,
    ) -> tuple[RemoteSession, dict[str, Any]]:
        """`_rawtrio/session/start`: open (or join) a session; it and the host's answer."""
        answer = await self.client.call(
            "_rawtrio/session/start",
            {
                "cwd": str(options.cwd),
                "env": dict(options.env),
                "flags": dict(options.flags),
                "choice": {
                    "continue": continue_,
                    "resume": resume,
                    "fork": fork,
                    "explicit_cwd": options.explicit_cwd,
                },
                "headless": False,
                "approves": True,
            },
        )
        sid = str(_field(answer, "sessionId"))
        # Events already on their way land in a session that exists before the info call.
        session = RemoteSession(
            client=self.client,
            id=sid,
            cwd=options.cwd,
            options=options,
            model_name=str(answer.get("model") or ""),
            model_names=(),
            policy=RemotePolicy(PermissionMode.DEFAULT),
            usage=UsageTotals(),
            record=_record({"id": sid, "cwd": str(options.cwd)}),
            running_turn=answer.get("running") if isinstance(answer.get("running"), str) else None,
        )
        self.client.sessions[sid] = session
        info = await self.client.call("_rawtrio/session/info", {"sessionId": sid})
        session.cwd = Path(str(info.get("cwd") or options.cwd))
        session.options = dataclasses.replace(options, cwd=session.cwd)
        session.model_name = str(info.get("model") or session.model_name)
        session.model_names = tuple(str(m) for m in info.get("models") or ())
        session.policy.mode = PermissionMode(str(info.get("mode") or "default"))
        session.usage = _usage(info.get("usage"))
        if session.running_turn is None and isinstance(info.get("running"), str):
            session.running_turn = info["running"]
        session.record = await self.get_session(sid)
        return session, answer

    async def create_session(self, options: RemoteOptions) -> RemoteSession:
        return (await self.start(options))[0]

    async def open_session(self, session_id: str, options: RemoteOptions) -> RemoteSession:
        return (await self.start(options, resume=session_id))[0]

    async def fork_session(
        self, source_id: str, *, before_turn: str | None = None, title: str | None = None
    ) -> str:
        params = {"sessionId": source_id, "beforeTurn": before_turn, "title": title}
        answer = await self.client.call("_rawtrio/sessions/fork", params)
        return str(_field(answer, "sessionId"))

    async def get_session(self, session_id: str) -> SessionRecord:
        return _record(await self.client.call("_rawtrio/sessions/get", {"sessionId": session_id}))

    async def list_sessions(self, *, cwd: str | None = None) -> list[SessionRecord]:
        answer = await self.client.call("_rawtrio/sessions/list", {"cwd": cwd})
        return [_record(r) for r in _list(answer, "sessions")]

    async def delete_session(self, session_id: str) -> None:
        await self.client.call("_rawtrio/sessions/delete", {"sessionId": session_id})


class RemoteApp:
    """`App`'s interface (docs/contracts.md, "The application: open_app") for a front end
    attached to a host."""

    def __init__(self, client: RemoteClient, options: RemoteOptions) -> None:
        self.client = client
        self.runtime = RemoteRuntime(client)
        self.options = options
        self.agent = str(options.flags.get("agent") or "…")
        self.notices: tuple[str, ...] = ()

    async def options_for(self, *, agent: str) -> RemoteSetup:
        """The options for agent `name`: the host resolves (and checks) them when the
        session starts."""
        flags = {**self.options.flags, "agent": agent}
        return RemoteSetup(dataclasses.replace(self.options, flags=flags), agent)

    async def start_session(self, choice: Choice) -> RemoteSession:
        """The session `--continue` / `--resume ID` / `--fork` name, or a new one; the
        agent and notices are the host's answer's."""
        session, answer = await self.runtime.start(
            self.options, resume=choice.resume, continue_=choice.continue_, fork=choice.fork
        )
        self.agent = str(answer.get("agent") or self.agent)
        self.notices = tuple(str(n) for n in answer.get("notices") or ())
        return session


@asynccontextmanager
async def open_remote_app(
    fd: int,
    options: RemoteOptions,
    *,
    pid: int | None,
    max_frame: int = DEFAULT_MAX_FRAME,
) -> AsyncIterator[RemoteApp]:
    """Serve the connected socket `fd` (the handshake done; it is duplicated, the caller
    closes its own) for the block; leaving it leaves every session and closes the
    connection."""
    dup = stdsocket.socket(fileno=os.dup(fd))
    dup.setblocking(False)
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(dup))
    async with trio.open_nursery() as nursery:
        client = RemoteClient(nursery, pid)
        await nursery.start(_serve, client, stream, max_frame)
        app = RemoteApp(client, options)
        try:
            yield app
        finally:
            with trio.move_on_after(5) as cleanup:
                cleanup.shield = True
                for session in list(client.sessions.values()):
                    await session.close("leaving")
            if client.peer is not None:
                client.peer.close("the front end left")
            nursery.cancel_scope.cancel(reason="the front end left the host")


async def _serve(
    client: RemoteClient,
    stream: trio.SocketStream,
    max_frame: int,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    transport = LineTransport(stream, stream, max_frame=max_frame)
    client.peer = Peer(transport, client, name="host")
    task_status.started()
    await client.run()


def _decode(data: Any) -> ev.Event | None:
    if not isinstance(data, dict):
        return None
    try:
        return event_from_json(data)
    except (TypeError, ValueError) as exc:
        log.warning("an event from the host does not decode: %s", exc)
        return None


def _field(answer: Any, name: str) -> Any:
    if not isinstance(answer, dict) or name not in answer:
        raise RawtrioError(f"the host's answer has no {name}")
    return answer[name]


def _list(answer: Any, name: str) -> list[Any]:
    value = answer.get(name) if isinstance(answer, dict) else None
    return value if isinstance(value, list) else []


def _record(data: Any) -> SessionRecord:
    d = data if isinstance(data, dict) else {}

    def num(key: str) -> float:
        v = d.get(key)
        return float(v) if isinstance(v, int | float) else 0.0

    count = d.get("message_count")
    return SessionRecord(
        id=str(d.get("id") or ""),
        title=str(d.get("title") or ""),
        cwd=str(d.get("cwd") or ""),
        system_prompt="",
        provider=str(d.get("provider") or ""),
        model=str(d.get("model") or ""),
        created_at=num("created_at"),
        updated_at=num("updated_at"),
        message_count=count if isinstance(count, int) else 0,
    )


def _usage(data: Any) -> UsageTotals:
    d = data if isinstance(data, dict) else {}

    def count(key: str) -> int:
        v = d.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    cost, window = d.get("cost_usd"), d.get("context_window")
    return UsageTotals(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_tokens=count("cache_read_tokens"),
        cache_write_tokens=count("cache_write_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        context_tokens=count("context_tokens"),
        context_window=window if isinstance(window, int) else None,
    )


__all__ = [
    "HostGone",
    "RemoteApp",
    "RemoteOptions",
    "RemoteSession",
    "open_remote_app",
    "remote_error",
]
