"""The ACP agent methods, served to any number of connections by one `AcpAgent`.

One `AcpAgent` per process owns the live ACP sessions (`LiveSession`, one per session
id, shared by every connection attached to it) inside its nursery, which lives inside
the runtime's. Each connection gets an `AcpConnection` (the JSON-RPC dispatcher): it
knows what the client said in `initialize` and which sessions it is attached to; when
it ends, it only detaches — sessions and their turns go on (docs/acp.md).

Cancellation (ACP "prompt-turn" §cancellation): `session/cancel`, `session/close`, a
`$/cancel_request` for the prompt, or a new `session/prompt` while one runs all cancel
the running turn through `Session.cancel`; the pending `session/prompt` is answered once,
after the turn's final updates were queued, with `{"stopReason": "cancelled"}` — never an
error, never `end_turn`. The answer is keyed by turn id, so it can never be delivered to
a later prompt.

In a host (`rawtrio serve`, `close_unattended=True`) a live session that no connection is
attached to any more is closed once it is idle (its running turn, if any, goes on and is
recorded first); `rawtrio acp --ws` keeps them live until it exits. Methods named
`_rawtrio/...` other than `_rawtrio/compact` are the host's (`rawtrio.acp.extensions`).

A host's connection on its Unix socket (`AcpConnection.client_context`, never one over
WebSocket) may carry `_meta.rawtrio = {"env", "flags"}` on `session/new`, `session/load`
and `session/resume` — an attached `rawtrio acp` relays its editor with them: the session
is then resolved with that environment and those flags instead of the host's
(`Extensions.client_options`).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio import __version__
from rawtrio.acp import params as p
from rawtrio.acp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    Peer,
    Ready,
    Reply,
    RequestId,
    RpcError,
)
from rawtrio.acp.live import (
    DEFAULT_PERMISSION_TIMEOUT_S,
    Attachment,
    LiveSession,
    PromptState,
    stop_reason,
)
from rawtrio.acp.modes import MODES, config_options, mode_state, model_names
from rawtrio.contracts import TurnOutcome
from rawtrio.errors import (
    ConfigError,
    NoCredentials,
    RawtrioError,
    SessionLocked,
    UnknownSession,
    UsageError,
)
from rawtrio.permissions.rules import PermissionMode
from rawtrio.runtime import Runtime, Session, SessionOptions

log = logging.getLogger(__name__)

PROTOCOL_VERSION: Final = 1
#: ACP's extension-method prefix for rawtrio's own methods.
EXTENSION_PREFIX: Final = "_rawtrio/"
AUTH_REQUIRED: Final = -32000
LIST_PAGE: Final = 50
_IDLE_POLL_S: Final = 0.05

#: Builds a session's options for a client's `cwd` and `mcpServers`.
OptionsFactory = Callable[[Path, list[Any]], Awaitable[SessionOptions]]

COMMANDS: Final = (
    {
        "name": "title",
        "description": "Rename this session",
        "input": {"hint": "the new title"},
    },
    {
        "name": "compact",
        "description": "Summarise older parts of the conversation to free context",
        "input": {"hint": "what to keep in focus (optional)"},
    },
)


@dataclass
class ClientInfo:
    fs_read: bool = False
    fs_write: bool = False
    terminal: bool = False
    name: str = "client"


class AcpAgent:
    def __init__(
        self,
        runtime: Runtime,
        nursery: trio.Nursery,
        options_for: OptionsFactory,
        *,
        permission_timeout_s: float = DEFAULT_PERMISSION_TIMEOUT_S,
        close_unattended: bool = False,
    ) -> None:
        self.runtime = runtime
        self._nursery = nursery
        self._options_for = options_for
        self.permission_timeout_s = permission_timeout_s
        self.close_unattended = close_unattended
        self.sessions: dict[str, LiveSession] = {}
        self._opening: dict[str, trio.Lock] = {}
        #: Sessions being closed because no connection is left: set once closed.
        self.closing: dict[str, trio.Event] = {}
        #: The host serving this agent (`rawtrio serve`) and the `_rawtrio/*` methods it
        #: adds (`rawtrio.acp.extensions`); None outside a host.
        self.host: object | None = None
        self.extensions: Extensions | None = None

    def connection(self, name: str = "client") -> AcpConnection:
        return AcpConnection(self, name)

    async def options(
        self, cwd: Path, mcp_servers: list[Any], client: object | None = None
    ) -> SessionOptions:
        """A session's options for the client's `cwd` and MCP servers: from this agent's
        factory, or with an attached client's context (`Extensions.client_context`)."""
        try:
            if client is not None and self.extensions is not None:
                return await self.extensions.client_options(client, cwd, mcp_servers)
            return await self._options_for(cwd, mcp_servers)
        except NoCredentials as exc:
            raise RpcError(AUTH_REQUIRED, str(exc)) from None
        except (ConfigError, UsageError) as exc:
            raise RpcError(INTERNAL_ERROR, f"configuration error: {exc}") from None

    async def _live(self, session: Session) -> LiveSession:
        """The live session for `session`, made and started when it has none yet."""
        live = self.sessions.get(session.id)
        if live is not None and live.session is session:
            return live
        live = LiveSession(session, permission_timeout_s=self.permission_timeout_s)
        if self.close_unattended:
            live.on_unattended = self._unattended
        self.sessions[session.id] = live
        await self._nursery.start(self._run_live, live)
        return live

    adopt = _live

    async def closes_done(self) -> None:
        """Wait until no session is being closed for want of a connection."""
        while self.closing:
            await next(iter(self.closing.values())).wait()

    def _unattended(self, live: LiveSession) -> None:
        if live.id not in self.closing and self.sessions.get(live.id) is live:
            self._nursery.start_soon(self._close_when_idle, live)

    async def _close_when_idle(self, live: LiveSession) -> None:
        """Close a session no connection is attached to, once its turn (if any) ended."""
        try:
            while (running := live.session.running_turn) is not None:
                if not live.unattended:
                    return
                with contextlib.suppress(KeyError):  # ended and forgotten meanwhile
                    await live.session.wait_turn(running)
                # The session clears its running turn just after the turn's ending.
                await trio.sleep(_IDLE_POLL_S)
            if not live.unattended or live.session.closed or live.id in self.closing:
                return
            done = self.closing[live.id] = trio.Event()
            if self.sessions.get(live.id) is live:
                del self.sessions[live.id]
            try:
                await live.session.close("no client left")
                await live.pump_done.wait()
            finally:
                del self.closing[live.id]
                done.set()
        except Exception:  # the store failed while closing: the session is gone either way
            log.exception("session %s: closing it failed", live.id)

    async def _run_live(
        self, live: LiveSession, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await live.run(task_status=task_status)
        finally:
            if self.sessions.get(live.id) is live:
                del self.sessions[live.id]

    async def create(self, options: SessionOptions) -> LiveSession:
        return await self._live(await self.runtime.create_session(options))

    async def open(
        self, session_id: str, cwd: Path, mcp_servers: list[Any], client: object | None = None
    ) -> LiveSession:
        """The live session with this id, opened from the store if needed (with `client`'s
        context, if any: see `options`); a live one is joined as it is."""
        lock = self._opening.setdefault(session_id, trio.Lock())
        try:
            async with lock:
                return await self._open_locked(session_id, cwd, mcp_servers, client)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._opening.pop(session_id, None)  # bounded: only ids being opened

    async def _open_locked(
        self, session_id: str, cwd: Path, mcp_servers: list[Any], client: object | None
    ) -> LiveSession:
        closing = self.closing.get(session_id)
        if closing is not None:
            await closing.wait()
        live = self.sessions.get(session_id)
        if live is not None and not live.session.closed:
            return live
        try:
            await self.runtime.get_session(session_id)
        except UnknownSession:
            raise unknown_session(session_id) from None
        options = await self.options(cwd, mcp_servers, client)
        try:
            session = await self.runtime.open_session(session_id, options)
        except SessionLocked as exc:
            raise RpcError(INTERNAL_ERROR, str(exc)) from None
        return await self._live(session)

    def get(self, session_id: str) -> LiveSession:
        live = self.sessions.get(session_id)
        if live is None or live.session.closed:
            raise unknown_session(session_id)
        return live


def unknown_session(session_id: str) -> RpcError:
    """Not live here (no such session, or closed): `data.reason` as the host's own -32002
    answers give it (`rawtrio.acp.extensions.NOT_LIVE`, docs/acp.md)."""
    return RpcError(
        RESOURCE_NOT_FOUND,
        f"unknown session {session_id!r}: create one with session/new, or attach to a "
        "stored one with session/load or session/resume",
        {"reason": "not_live"},
    )


def _iso(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat().replace("+00:00", "Z")


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _offset(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if text.startswith("o:") and int(text[2:]) >= 0:
            return int(text[2:])
    except (ValueError, UnicodeDecodeError):
        pass
    raise p.invalid(f"cursor {cursor!r} is not one this agent gave out")


class AcpConnection:
    """The dispatcher of one connection (`rawtrio.acp.jsonrpc.Dispatcher`)."""

    def __init__(self, agent: AcpAgent, name: str) -> None:
        self.agent = agent
        self.name = name
        self.client = ClientInfo()
        self.initialized = False
        #: Whether `_meta.rawtrio` of this connection's session requests is taken: set by
        #: the host for peers on its Unix socket only (same uid, `SO_PEERCRED`).
        self.accepts_client_context = False
        self.sessions: set[str] = set()
        self._prompts: dict[RequestId, PromptState] = {}

    def caps(self, peer: Peer) -> Attachment:
        c = self.client
        return Attachment(peer, c.fs_read, c.fs_write, c.terminal)

    def detach_all(self, peer: Peer) -> None:
        """The connection ended: leave its sessions (they and their turns go on)."""
        for sid in self.sessions:
            live = self.agent.sessions.get(sid)
            if live is not None:
                live.detach(peer)
        self.sessions.clear()

    # --- Dispatcher -------------------------------------------------------------------

    async def handle_notification(self, peer: Peer, method: str, params: Any) -> None:
        ext = self.agent.extensions
        if method.startswith(EXTENSION_PREFIX) and ext is not None:
            await ext.notification(self, peer, method, params)
        elif method == "session/cancel":
            sid = p.required_string(params or {}, "sessionId")
            live = self.agent.sessions.get(sid)
            if live is None:
                raise unknown_session(sid)
            live.cancel("cancelled by the client (session/cancel)")
        elif not method.startswith("$/"):
            log.info("%s: ignoring unknown notification %s", self.name, method)

    def cancel_request(self, peer: Peer, method: str, request_id: RequestId) -> bool:
        state = self._prompts.get(request_id)
        if state is None or state.done.is_set():
            return False
        state.cancel_requested = True
        for live in self.agent.sessions.values():
            if live.prompt is state:
                live.session.cancel("cancelled by the client ($/cancel_request)")
        return True

    async def handle_request(self, peer: Peer, method: str, params: Any, ready: Ready) -> Any:
        handler = _METHODS.get(method)
        ext = self.agent.extensions
        if handler is None and ext is not None:
            handler = ext.requests.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
        if method != "initialize" and not self.initialized:
            raise RpcError(INVALID_REQUEST, f"{method}: call initialize first")
        return await handler(self, peer, params, ready)

    # --- methods ----------------------------------------------------------------------

    async def initialize(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        p.integer(params, "protocolVersion")
        caps = p.obj(params, "clientCapabilities")
        fs = p.obj(caps, "fs")
        info = p.obj(params, "clientInfo")
        self.client = ClientInfo(
            fs_read=fs.get("readTextFile") is True,
            fs_write=fs.get("writeTextFile") is True,
            terminal=caps.get("terminal") is True,
            name=str(info.get("name", "client")),
        )
        self.initialized = True
        ext = self.agent.extensions
        meta = ext.handshake() if ext is not None else None
        return {
            **({"_meta": {"rawtrio": meta}} if meta is not None else {}),
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": True, "sse": False},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
            },
            "authMethods": [],
            "agentInfo": {"name": "rawtrio", "title": "rawtrio", "version": __version__},
        }

    def client_context(self, params: Mapping[str, Any]) -> object | None:
        """The context an attached `rawtrio acp` added to a session request
        (`_meta.rawtrio`), checked (-32602 naming what is wrong); None when there is none
        or this connection may not send one."""
        ext = self.agent.extensions
        if ext is None or not self.accepts_client_context:
            return None
        meta = params.get("_meta")
        ours = meta.get("rawtrio") if isinstance(meta, Mapping) else None
        return None if ours is None else ext.client_context(ours)

    def _attached(self, peer: Peer, live: LiveSession) -> None:
        self.sessions.add(live.id)

    async def new_session(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        cwd = p.absolute_dir(params)
        servers = p.array(params, "mcpServers")
        client = self.client_context(params)
        ready()
        live = await self.agent.create(await self.agent.options(cwd, servers, client))
        live.attach(peer, self.caps(peer))
        self._attached(peer, live)
        result = {
            "sessionId": live.id,
            "modes": mode_state(live.session),
            "configOptions": config_options(live.session),
        }

        def after() -> None:
            live_commands(live, peer)

        return Reply(result, after)

    async def load_session(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        sid = p.required_string(params, "sessionId")
        cwd = p.absolute_dir(params)
        servers = p.array(params, "mcpServers")
        client = self.client_context(params)
        ready()
        live = await self.agent.open(sid, cwd, servers, client)
        events = await self.agent.runtime.session_events(sid)
        await live.attach_with_replay(peer, events, self.caps(peer))
        self._attached(peer, live)
        return Reply(
            {"modes": mode_state(live.session), "configOptions": config_options(live.session)},
            lambda: live_commands(live, peer),
        )

    async def resume_session(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        sid = p.required_string(params, "sessionId")
        cwd = p.absolute_dir(params)
        servers = p.array(params, "mcpServers")
        client = self.client_context(params)
        ready()
        live = await self.agent.open(sid, cwd, servers, client)
        live.attach(peer, self.caps(peer))
        self._attached(peer, live)
        return Reply(
            {"modes": mode_state(live.session), "configOptions": config_options(live.session)},
            lambda: live_commands(live, peer),
        )

    async def list_sessions(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        cwd = p.string(params, "cwd", required=False)
        cursor = p.string(params, "cursor", required=False)
        if cwd is not None and not Path(cwd).is_absolute():
            raise p.invalid(f"cwd must be an absolute path, got {cwd!r}")
        start = _offset(cursor) if cursor else 0
        ready()
        records = await self.agent.runtime.list_sessions(cwd=cwd)
        page = records[start : start + LIST_PAGE]
        out: dict[str, Any] = {
            "sessions": [
                {
                    "sessionId": r.id,
                    "cwd": r.cwd,
                    "title": r.title or None,
                    "updatedAt": _iso(r.updated_at),
                }
                for r in page
            ]
        }
        if start + LIST_PAGE < len(records):
            out["nextCursor"] = _cursor(start + LIST_PAGE)
        return out

    async def delete_session(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        sid = p.required_string(params, "sessionId")
        ready()
        live = self.agent.sessions.get(sid)
        if live is not None:
            live.cancel("session deleted")
        try:
            await self.agent.runtime.delete_session(sid)
        except UnknownSession:
            raise unknown_session(sid) from None
        return {}

    async def close_session(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        sid = p.required_string(params, "sessionId")
        live = self.agent.get(sid)
        live.cancel("session closed by the client")
        ready()
        await live.session.close("session closed by the client")
        await live.pump_done.wait()
        self.sessions.discard(sid)
        return {}

    async def set_mode(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        sid = p.required_string(params, "sessionId")
        mode = p.required_string(params, "modeId")
        live = self.agent.get(sid)
        self._apply_mode(live, mode)
        return {}

    def _apply_mode(self, live: LiveSession, mode: str) -> None:
        try:
            value = PermissionMode(mode)
        except ValueError:
            known = ", ".join(m.value for m, _, _ in MODES)
            raise p.invalid(f"modeId: unknown mode {mode!r} (one of {known})") from None
        live.session.set_mode(value)  # emits mode_changed: every connection is told

    async def set_config_option(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        sid = p.required_string(params, "sessionId")
        config_id = p.required_string(params, "configId")
        value = p.required_string(params, "value")
        live = self.agent.get(sid)
        if config_id == "mode":
            self._apply_mode(live, value)
        elif config_id == "model":
            ready()
            await self._apply_model(live, value)
        else:
            raise p.invalid(f"configId: unknown option {config_id!r} (mode or model)")
        return {"configOptions": config_options(live.session)}

    async def set_model(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        """The older `session/set_model` (before config options), kept for old clients."""
        sid = p.required_string(params, "sessionId")
        model = p.required_string(params, "modelId")
        live = self.agent.get(sid)
        ready()
        await self._apply_model(live, model)
        return {}

    async def _apply_model(self, live: LiveSession, name: str) -> None:
        names = model_names(live.session)
        if name not in names:
            raise p.invalid(f"unknown model {name!r} (one of {', '.join(names)})")
        if name == live.session.model_name:
            return
        try:
            await live.session.set_model(name)  # emits model_changed: every connection is told
        except RawtrioError as exc:
            raise RpcError(INTERNAL_ERROR, f"could not switch to {name}: {exc}") from None

    async def compact(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        """`_rawtrio/compact` (an extension method): compact the model context now, like
        the `/compact [focus]` command; `session/cancel` cancels it (nothing changes)."""
        sid = p.required_string(params, "sessionId")
        focus = p.string(params, "focus", required=False)
        live = self.agent.get(sid)
        ready()
        try:
            ended = await live.session.compact(focus)
        except RawtrioError as exc:
            raise RpcError(INTERNAL_ERROR, f"could not compact: {exc}") from None
        return {
            "outcome": ended.outcome,
            "tokensBefore": ended.tokens_before,
            "tokensAfter": ended.tokens_after,
            "reason": ended.reason,
        }

    async def prompt(self, peer: Peer, params: Mapping[str, Any], ready: Ready) -> Any:
        sid = p.required_string(params, "sessionId")
        text = p.prompt_text(params)
        live = self.agent.get(sid)
        if id(peer) not in live.attached:
            live.attach(peer, self.caps(peer))
            self._attached(peer, live)
        state = PromptState(peer)
        previous, live.prompt = live.prompt, state
        rid = ready.request_id
        self._prompts[rid] = state
        ready()
        try:
            if previous is not None and not previous.done.is_set():
                previous.cancel_requested = True
            # A new prompt while a turn runs cancels it (ACP), whoever started it (its
            # prompter may be gone); the earlier prompt, if still there, answers first.
            while (running := live.session.running_turn) is not None:
                live.session.cancel("cancelled by a new prompt")
                await live.wait_ended(running)
            if previous is not None:
                await previous.done.wait()
            if state.cancel_requested:
                return {"stopReason": "cancelled"}
            command = await self._command(live, text, state)
            if command is not None:
                return command
            try:
                turn_id = await live.session.submit(text)
            except RawtrioError as exc:
                raise RpcError(INTERNAL_ERROR, f"could not start the turn: {exc}") from None
            state.turn_id = turn_id
            live.origin(turn_id, peer)
            if state.cancel_requested:
                live.session.cancel("cancelled by the client (session/cancel)")
            ended = await live.wait_ended(turn_id)
            await self._title_update(live)
            reason = stop_reason(ended, state.cancel_requested)
            if reason == "end_turn" and ended.outcome is TurnOutcome.ERROR:
                raise RpcError(INTERNAL_ERROR, f"the turn failed: {ended.reason}")
            return {"stopReason": reason}
        finally:
            state.done.set()
            if live.prompt is state:
                live.prompt = None
            self._prompts.pop(rid, None)

    async def _command(
        self, live: LiveSession, text: str, state: PromptState
    ) -> dict[str, Any] | None:
        """Slash commands handled here (advertised in `available_commands_update`)."""
        word = text.split(maxsplit=1)[0] if text.strip() else ""
        if word == "/compact":
            focus = text[len("/compact") :].strip() or None
            try:
                ended = await live.session.compact(focus)
            except RawtrioError as exc:
                raise RpcError(INTERNAL_ERROR, f"could not compact: {exc}") from None
            if state.cancel_requested or ended.outcome == "cancelled":
                return {"stopReason": "cancelled"}
            if ended.outcome == "error":
                raise RpcError(INTERNAL_ERROR, f"compaction failed: {ended.reason}")
            return {"stopReason": "end_turn"}
        if word != "/title":
            return None
        title = text[len("/title") :].strip()
        if not title:
            raise p.invalid("/title needs the new title")
        await self.agent.runtime.rename_session(live.id, title)
        await self._title_update(live)
        return {"stopReason": "end_turn"}

    async def _title_update(self, live: LiveSession) -> None:
        try:
            record = await self.agent.runtime.get_session(live.id)
        except RawtrioError:
            return
        if record.title and record.title != live.title:
            live.title = record.title
            live.broadcast(
                {
                    "sessionUpdate": "session_info_update",
                    "title": record.title,
                    "updatedAt": _iso(record.updated_at),
                }
            )


def live_commands(live: LiveSession, peer: Peer) -> None:
    peer.notify(
        "session/update",
        {
            "sessionId": live.id,
            "update": {
                "sessionUpdate": "available_commands_update",
                "availableCommands": [dict(c) for c in COMMANDS],
            },
        },
    )


_Method = Callable[[AcpConnection, Peer, Any, Ready], Awaitable[Any]]


@dataclass(frozen=True)
class Extensions:
    """What a host adds to the agent (`rawtrio.acp.extensions`): its `_rawtrio/*` requests
    and notifications, and `_meta.rawtrio` for the `initialize` answer."""

    requests: Mapping[str, _Method]
    notification: Callable[[AcpConnection, Peer, str, Any], Awaitable[None]]
    handshake: Callable[[], dict[str, Any]]
    #: `_meta.rawtrio` of a session request, checked, as the context `client_options`
    #: takes (`RpcError` -32602 naming what is wrong).
    client_context: Callable[[Any], object]
    #: A session's options resolved with an attached client's context.
    client_options: Callable[[Any, Path, list[Any]], Awaitable[SessionOptions]]


_METHODS: Final[dict[str, _Method]] = {
    "initialize": AcpConnection.initialize,
    "session/new": AcpConnection.new_session,
    "session/load": AcpConnection.load_session,
    "session/resume": AcpConnection.resume_session,
    "session/list": AcpConnection.list_sessions,
    "session/delete": AcpConnection.delete_session,
    "session/close": AcpConnection.close_session,
    "session/prompt": AcpConnection.prompt,
    "session/set_mode": AcpConnection.set_mode,
    "session/set_config_option": AcpConnection.set_config_option,
    "session/set_model": AcpConnection.set_model,
    "_rawtrio/compact": AcpConnection.compact,
}


@asynccontextmanager
async def open_acp_agent(
    runtime: Runtime,
    options_for: OptionsFactory,
    *,
    permission_timeout_s: float = DEFAULT_PERMISSION_TIMEOUT_S,
    close_unattended: bool = False,
) -> AsyncIterator[AcpAgent]:
    """The process's ACP agent; leaving it stops the pumps (the runtime closes sessions)."""
    async with trio.open_nursery() as nursery:
        agent = AcpAgent(
            runtime,
            nursery,
            options_for,
            permission_timeout_s=permission_timeout_s,
            close_unattended=close_unattended,
        )
        try:
            yield agent
        finally:
            nursery.cancel_scope.cancel(reason="ACP agent closed")


async def serve_peer(agent: AcpAgent, peer: Peer, conn: AcpConnection) -> None:
    """Serve one connection until it ends, then detach it from its sessions."""
    try:
        await peer.run()
    finally:
        conn.detach_all(peer)
