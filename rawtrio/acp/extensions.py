"""The host's `_rawtrio/*` methods (docs/contracts.md, "The host and attaching").

ACP is the attach protocol; where it has nothing, a host (`rawtrio serve`) answers these
extension methods on the same connection, next to every ACP method:

- `_rawtrio/session/start` (request): resolve the client's options from its `cwd`, `env`,
  `flags` and `headless` (the host has no configuration of its own), open the session its
  `choice` names — or join it when it is live in this host already (never
  `SessionLocked`: every front end of the host shares one live session) — and send the
  connection every event after the join point as `_rawtrio/event` (with `since`, the
  stored events after it first).
- `_rawtrio/session/submit`, `_rawtrio/session/usage`, `_rawtrio/session/info`,
  `_rawtrio/session/events`,
  `_rawtrio/session/answer_permission`, `_rawtrio/session/set_mode`,
  `_rawtrio/session/set_model`, `_rawtrio/session/compact`, `_rawtrio/session/close`
  (requests), `_rawtrio/session/cancel` (notification): the session operations, with the
  errors the local operation raises.
- `_rawtrio/sessions/list`, `_rawtrio/sessions/get`, `_rawtrio/sessions/fork`,
  `_rawtrio/sessions/delete` (requests): the stored sessions (`Runtime`'s operations).
- `_rawtrio/undo`, `_rawtrio/redo`, `_rawtrio/rewind` (requests): checkpoints
  (docs/checkpoints.md); a conflict is an answer with `applied: false` and the
  `conflicts`, `force: true` overwrites.
- `_rawtrio/host/status`, `_rawtrio/host/stop` (requests).
- `_meta.rawtrio = {"env", "flags"}` on ACP's `session/new`, `session/load` and
  `session/resume` from a connection on the host's socket (an attached `rawtrio acp`
  relaying its editor): that session's options are resolved with the client's environment
  and session flags (`client_context`, `client_options`), as `_rawtrio/session/start`
  resolves them, not headless.

Errors a local run would raise (`RawtrioError`) are -32000 with `data = {"kind", "exit_code"}`
(`rawtrio.errors.exit_code_for`, the mapping every command-line front end uses), so the
client exits as a local run would. The client's environment is only passed to the options
resolution: it is never logged, stored or sent to another connection.
"""

from __future__ import annotations

import argparse
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import trio

from rawtrio.acp import params as p
from rawtrio.acp.agent import AcpAgent, AcpConnection, Extensions
from rawtrio.acp.jsonrpc import RESOURCE_NOT_FOUND, Peer, Ready, Reply, RpcError
from rawtrio.app.choice import Choice, resolve_id, start_session
from rawtrio.cli.flags import PROVIDERS, rule_entry_problem
from rawtrio.context.accounting import usage_to_json
from rawtrio.errors import RawtrioError, TurnInProgress, UsageError, exit_code_for
from rawtrio.events import event_to_json
from rawtrio.frozen import json_type_name
from rawtrio.permissions.approval import AlwaysScope, ApprovalDecision, ApprovalKind

if TYPE_CHECKING:
    from rawtrio.app.options import SessionSetup
    from rawtrio.checkpoints.store import CheckpointStore
    from rawtrio.runtime import Runtime, Session, SessionOptions
    from rawtrio.store.base import SessionRecord

log = logging.getLogger(__name__)

#: The JSON-RPC error code of a `RawtrioError` (docs/contracts.md).
RAWTRIO_ERROR: Final = -32000
#: ACP's "resource not found", kept for both refusals clients already rely on it for: a
#: turn runs in the session (`_rawtrio/session/submit`, `undo`, `redo`, `rewind`), or the
#: session is not live in this host. `data.reason` tells them apart (docs/acp.md).
TURN_IN_PROGRESS: Final = RESOURCE_NOT_FOUND
#: `data.reason` of a -32002 answer: a turn runs there; the session is not live here.
TURN_RUNNING: Final = "turn_running"
NOT_LIVE: Final = "not_live"

_MODES: Final = ("default", "accept-edits", "plan", "bypass")
#: The session flags a client may send (`rawtrio/cli/flags.py` and `--trust`, `--yes`):
#: destination → (JSON type name, check, allowed values or None).
_FLAGS: Final[dict[str, tuple[str, Callable[[Any], bool], tuple[str, ...] | None]]] = {
    "provider": ("a string", lambda v: isinstance(v, str), PROVIDERS),
    "model": ("a string", lambda v: isinstance(v, str), None),
    "base_url": ("a string", lambda v: isinstance(v, str), None),
    "max_steps": ("a positive integer", lambda v: _is_int(v) and v > 0, None),
    "sigterm_grace": ("a number of seconds >= 0", lambda v: _is_seconds(v), None),
    "config": ("a string", lambda v: isinstance(v, str), None),
    "agent": ("a string", lambda v: isinstance(v, str), None),
    "permission_mode": ("a string", lambda v: isinstance(v, str), _MODES),
    "trust": ("true or false", lambda v: isinstance(v, bool), None),
    "yes": ("true or false", lambda v: isinstance(v, bool), None),
    # --allowedTools / --disallowedTools as given, `{"pattern", "effect"}`, mapped for each
    # session from its directory, or rule objects (`rawtrio.cli.flags.session_tool_rules`).
    "tool_rules": ("a list of rule objects", lambda v: _is_rules(v), None),
    "system_prompt": ("a string", lambda v: isinstance(v, str), None),
    "append_system_prompt": ("a string", lambda v: isinstance(v, str), None),
}


def _is_rules(value: Any) -> bool:
    """A list; each entry's shape is checked on its own (`rule_entry_problem`)."""
    return isinstance(value, list)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_seconds(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


class HostControl(Protocol):
    """What the host (`rawtrio.host.server`) offers these methods."""

    def handshake(self) -> dict[str, Any]:
        """`_meta.rawtrio` of the `initialize` answer: version, protocol, pid."""

    def status(self) -> dict[str, Any]:
        """The `_rawtrio/host/status` answer."""

    def stop(self) -> None:
        """Close every session and exit (`_rawtrio/host/stop`)."""

    async def options(
        self,
        *,
        cwd: Path,
        env: Mapping[str, str],
        overrides: argparse.Namespace,
        headless: bool,
    ) -> SessionSetup:
        """A client's session options (`App.options_for`)."""


def rawtrio_error(exc: RawtrioError) -> RpcError:
    """A local run's error as the client must show it and exit with."""
    return RpcError(
        RAWTRIO_ERROR,
        str(exc),
        {"kind": type(exc).__name__, "exit_code": exit_code_for(exc)},
    )


def _host(conn: AcpConnection) -> HostControl:
    host = conn.agent.host
    assert host is not None  # the methods are dispatched only in a host
    return cast("HostControl", host)


def install(agent: AcpAgent, host: HostControl) -> None:
    """Serve the `_rawtrio/*` methods on `agent`, for `host`."""
    agent.host = host
    agent.extensions = Extensions(
        REQUESTS,
        handle_notification,
        host.handshake,
        client_context,
        functools.partial(client_options, host),
    )


# --- params ---------------------------------------------------------------------------


def _env(params: Mapping[str, Any]) -> dict[str, str]:
    env = p.obj(params, "env")
    for key, value in env.items():
        if not isinstance(value, str):
            # Name the variable, never its value: the environment holds secrets.
            raise p.invalid(f"env.{key} must be a string, got {json_type_name(value)}")
    return dict(env)


def flags_namespace(flags: Mapping[str, Any]) -> argparse.Namespace:
    """The client's session flags as the `argparse.Namespace` a local run would parse."""
    ns = argparse.Namespace(**dict.fromkeys(_FLAGS))
    ns.trust = ns.yes = False
    for key, value in flags.items():
        spec = _FLAGS.get(key)
        if spec is None:
            known = ", ".join(sorted(_FLAGS))
            raise p.invalid(f"flags.{key}: unknown flag (one of {known})")
        if value is None:
            continue
        what, check, allowed = spec
        if not check(value):
            raise p.invalid(f"flags.{key} must be {what}, got {json_type_name(value)}")
        if key == "tool_rules":
            for i, entry in enumerate(value):
                if (problem := rule_entry_problem(entry)) is not None:
                    raise p.invalid(f"flags.tool_rules[{i}]: {problem}")
        if allowed is not None and value not in allowed:
            raise p.invalid(f"flags.{key}: {value!r} is not one of {', '.join(allowed)}")
        setattr(ns, key, value)
    return ns


@dataclass(frozen=True)
class ClientContext:
    """What an attached `rawtrio acp` sends with a session request (`_meta.rawtrio`)."""

    env: dict[str, str]
    flags: argparse.Namespace


def client_context(meta: Any) -> ClientContext:
    """`_meta.rawtrio` checked: `{"env": {name: str}, "flags": {...}}` (the flags of
    `_rawtrio/session/start`); -32602 naming what is wrong."""
    where = "_meta.rawtrio"
    if not isinstance(meta, Mapping):
        raise p.invalid(f"{where} must be an object, got {json_type_name(meta)}")
    unknown = sorted(set(meta) - {"env", "flags"})
    if unknown:
        raise p.invalid(f"{where}.{unknown[0]}: unknown key (env, flags)")
    try:
        return ClientContext(_env(meta), flags_namespace(p.obj(meta, "flags")))
    except RpcError as exc:  # named from the context: env.X → _meta.rawtrio.env.X
        what = exc.message.removeprefix(p.invalid("").message)
        raise p.invalid(f"{where}.{what}") from None


async def client_options(
    host: HostControl, client: Any, cwd: Path, servers: list[Any]
) -> SessionOptions:
    """A session's options for an attached editor: its environment and flags, its `cwd`
    and MCP servers (the client's own configuration notices go to the host's log)."""
    from rawtrio.acp.mcp import mcp_servers_from_acp

    assert isinstance(client, ClientContext)
    setup = await host.options(cwd=cwd, env=client.env, overrides=client.flags, headless=False)
    for notice in setup.notices:
        log.warning("%s", notice)
    return mcp_servers_from_acp(setup.options, servers)


def _choice(params: Mapping[str, Any]) -> Choice:
    choice = p.obj(params, "choice")
    unknown = sorted(set(choice) - {"continue", "resume", "fork", "explicit_cwd"})
    if unknown:
        raise p.invalid(f"choice.{unknown[0]}: unknown key (continue, resume, fork)")
    for key in ("continue", "fork", "explicit_cwd"):
        if not isinstance(choice.get(key, False), bool):
            raise p.invalid(f"choice.{key} must be true or false")
    resume = p.string(choice, "resume", required=False)
    if resume == "":
        raise p.invalid("choice.resume must not be empty")
    out = Choice(
        continue_=choice.get("continue", False),
        resume=resume,
        fork=choice.get("fork", False),
        explicit_cwd=choice.get("explicit_cwd", False),
    )
    if out.continue_ and out.resume is not None:
        raise p.invalid("choice: continue and resume exclude each other")
    if out.fork and out.new:
        raise p.invalid("choice.fork needs continue or resume (the session to copy)")
    return out


async def _resumed_directory(runtime: Runtime, choice: Choice) -> Path | None:
    """The stored directory of the session `choice` resumes (no `--cwd` given), when it is
    one existing directory; None otherwise (starting the session then says why)."""
    if choice.resume is None or choice.explicit_cwd:
        return None
    try:
        record = await runtime.get_session(await resolve_id(runtime, choice.resume))
    except RawtrioError:
        return None
    where = Path(record.cwd)
    return where if await trio.Path(where).is_dir() else None


def _since(params: Mapping[str, Any]) -> int | None:
    value = params.get("since")
    if value is None:
        return None
    if not _is_int(value) or value < 0:
        raise p.invalid(f"since must be an integer >= 0, got {json_type_name(value)}")
    return int(value)


def _bool(params: Mapping[str, Any], key: str) -> bool:
    value = params.get(key, False)
    if not isinstance(value, bool):
        raise p.invalid(f"{key} must be true or false, got {json_type_name(value)}")
    return value


# --- methods --------------------------------------------------------------------------


async def session_start(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    cwd = p.absolute_dir(params)
    env = _env(params)
    overrides = flags_namespace(p.obj(params, "flags"))
    choice = _choice(params)
    headless = _bool(params, "headless")
    approves = _bool(params, "approves")
    since = _since(params)
    ready()
    host, agent = _host(conn), conn.agent
    try:
        # A session resumed from elsewhere: its own directory's configuration from the
        # start (the client's directory's is not read); `reconfigure` covers the rest.
        where = await _resumed_directory(agent.runtime, choice) or cwd
        setup = await host.options(cwd=where, env=env, overrides=overrides, headless=headless)

        async def reconfigure(where: Path) -> SessionOptions:
            """A session resumed from another directory: its own project's configuration,
            with the client's flags and environment (rawtrio.app.choice)."""
            nonlocal setup
            setup = await host.options(cwd=where, env=env, overrides=overrides, headless=headless)
            return setup.options

        while True:
            await agent.closes_done()
            if choice.new:
                session = await agent.runtime.create_session(setup.options)
            else:  # the live one when it is live in this host: joined, not locked
                session = await start_session(agent.runtime, choice, setup.options, reconfigure)
            if session.id not in agent.closing:
                break  # else: being closed for want of a client; open it again after
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None
    live = await agent.adopt(session)
    conn.sessions.add(live.id)
    running = session.running_turn
    await live.watch(peer, since, approves=approves and not headless)
    return {
        "sessionId": live.id,
        "agent": setup.agent,
        "model": session.model_name,
        "notices": list(setup.notices),
        "running": running,
    }


def _live_session(conn: AcpConnection, params: Mapping[str, Any]) -> Any:
    sid = p.required_string(params, "sessionId")
    live = conn.agent.sessions.get(sid)
    if live is None or live.session.closed:
        raise RpcError(
            RESOURCE_NOT_FOUND,
            f"session {sid!r} is not live in this host: start it with _rawtrio/session/start",
            {"reason": NOT_LIVE},
        )
    return live


def turn_running(message: str) -> RpcError:
    """The refusal of an operation that waits for the session's turn to end."""
    return RpcError(TURN_IN_PROGRESS, message, {"reason": TURN_RUNNING})


async def session_submit(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    live = _live_session(conn, params)
    text = p.required_string(params, "text")
    try:
        turn_id = await live.session.submit(text)
    except TurnInProgress as exc:
        raise turn_running(str(exc)) from None
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None
    return {"turnId": turn_id}


async def session_usage(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    totals = _live_session(conn, params).session.usage
    return {
        "cost_usd": totals.cost_usd,
        "context_tokens": totals.context_tokens,
        "context_window": totals.context_window,
    }


def session_info(session: Any) -> dict[str, Any]:
    """What a front end shows about a live session (`_rawtrio/session/info`)."""
    totals = session.usage
    return {
        "sessionId": session.id,
        "cwd": str(session.cwd),
        "title": session.record.title,
        "model": session.model_name,
        "models": list(session.model_names),
        "mode": session.policy.mode.value,
        "tools": [spec.name for spec in session.tool_specs],
        "running": session.running_turn,
        "usage": {**usage_to_json(totals), "context_window": totals.context_window},
    }


async def session_info_method(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    return session_info(_live_session(conn, params).session)


async def session_events(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    """The stored events with `seq` > `since` (`Session.events_since`)."""
    live = _live_session(conn, params)
    since = _since(params) or 0
    ready()
    return {"events": [event_to_json(e) for e in await live.session.events_since(since)]}


def _decision(params: Mapping[str, Any]) -> ApprovalDecision:
    data = p.obj(params, "decision")
    kinds = ", ".join(k.value for k in ApprovalKind if k is not ApprovalKind.CANCELLED)
    try:
        kind = ApprovalKind(str(data.get("kind")))
    except ValueError:
        raise p.invalid(f"decision.kind must be one of {kinds}") from None
    if kind is ApprovalKind.CANCELLED:
        raise p.invalid(f"decision.kind must be one of {kinds} (cancel the turn instead)")
    scopes = ", ".join(s.value for s in AlwaysScope)
    try:
        scope = AlwaysScope(str(data.get("scope", AlwaysScope.SESSION.value)))
    except ValueError:
        raise p.invalid(f"decision.scope must be one of {scopes}") from None
    message = p.string(data, "message", required=False)
    by = p.string(data, "answered_by", required=False) or "rawtrio client"
    return ApprovalDecision(kind, scope, message=message, answered_by=by)


async def session_answer_permission(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    live = _live_session(conn, params)
    request_id = p.required_string(params, "requestId")
    decision = _decision(params)
    try:  # the first answer from any front end wins (an editor's through the ACP relay)
        live.session.answer_permission(request_id, decision)
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None
    return {}


async def session_set_mode(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    live = _live_session(conn, params)
    mode = p.required_string(params, "mode")
    if mode not in _MODES:
        raise p.invalid(f"mode: {mode!r} is not one of {', '.join(_MODES)}")
    live.session.set_mode(mode)  # emits mode_changed: every front end is told
    return {"mode": live.session.policy.mode.value}


async def session_set_model(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    live = _live_session(conn, params)
    model = p.required_string(params, "model")
    ready()
    try:
        await live.session.set_model(model)  # emits model_changed
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None
    return {"model": live.session.model_name}


async def session_compact(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    """Compact now, like `/compact [focus]`; `_rawtrio/session/cancel` (or cancelling
    this request) cancels it. The answer is the `compaction_ended` event."""
    live = _live_session(conn, params)
    focus = p.string(params, "focus", required=False)
    ready()
    try:
        ended = await live.session.compact(focus or None)
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None
    return event_to_json(ended)


async def session_close(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    """This connection leaves the session (as when it goes away: the turn goes on; the
    host closes the session once no front end is left and it is idle)."""
    live = _live_session(conn, params)
    conn.sessions.discard(live.id)
    live.detach(peer)
    return {}


def record_json(record: SessionRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "title": record.title,
        "cwd": record.cwd,
        "provider": record.provider,
        "model": record.model,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "message_count": record.message_count,
    }


async def sessions_list(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    cwd = p.string(params, "cwd", required=False)
    if cwd is not None and not Path(cwd).is_absolute():
        raise p.invalid(f"cwd must be an absolute path, got {cwd!r}")
    ready()
    records = await conn.agent.runtime.list_sessions(cwd=cwd)
    return {"sessions": [record_json(r) for r in records]}


async def sessions_get(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    sid = p.required_string(params, "sessionId")
    ready()
    try:
        return record_json(await conn.agent.runtime.get_session(sid))
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None


async def sessions_fork(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    sid = p.required_string(params, "sessionId")
    before_turn = p.string(params, "beforeTurn", required=False)
    title = p.string(params, "title", required=False)
    ready()
    try:
        return {
            "sessionId": await conn.agent.runtime.fork_session(
                sid, before_turn=before_turn, title=title
            )
        }
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None


async def sessions_delete(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    """Delete a stored session; one live in the host with a front end on it is refused."""
    sid = p.required_string(params, "sessionId")
    live = conn.agent.sessions.get(sid)
    if live is not None and not live.session.closed and not live.unattended:
        raise rawtrio_error(UsageError(f"session {sid} is open in another front end"))
    ready()
    try:
        await conn.agent.runtime.delete_session(sid)
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None
    return {}


async def checkpoint_undo(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    """`_rawtrio/undo`: put back the files of the session's last turn that changed some
    (or checkpoint `turn`); `_rawtrio/redo` re-applies. With files changed outside rawtrio
    since, nothing is written and the answer lists the `conflicts` (`applied: false`): the
    client asks its user and sends the request again with `force: true` to overwrite."""
    return await _restore(conn, params, ready, undo=True)


async def checkpoint_redo(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    return await _restore(conn, params, ready, undo=False)


async def _restore(
    conn: AcpConnection, params: Mapping[str, Any], ready: Ready, *, undo: bool
) -> Any:
    from rawtrio.checkpoints.restore import CheckpointError

    live = _live_session(conn, params)
    number = params.get("turn")
    if number is not None and (not _is_int(number) or number < 1):
        raise p.invalid(f"turn must be an integer >= 1, got {json_type_name(number)}")
    force = _bool(params, "force")
    session = live.session
    if session.running_turn is not None:
        raise turn_running("a turn is running; cancel it first to undo or redo")
    ready()
    try:
        checkpoints = session.checkpoints
        if checkpoints is not None:
            run = checkpoints.undo if undo else checkpoints.redo
            outcome = await run(number, force=force)
        else:  # off for this session: what its earlier runs recorded, as the shell does
            from rawtrio.checkpoints import restore

            stored = functools.partial(
                restore.undo if undo else restore.redo,
                _checkpoint_store(session, session.cwd),
                session.id,
                number,
                force=force,
            )
            outcome = await trio.to_thread.run_sync(stored)
    except CheckpointError as exc:
        raise rawtrio_error(UsageError(str(exc))) from None
    cs = outcome.change_set
    return {
        "applied": outcome.applied,
        "turn": cs.number,
        "turnId": cs.turn_id,
        "state": cs.state,
        "summary": cs.summary(),
        "restored": list(outcome.restored),
        "conflicts": [
            {"path": c.path, "expected": c.expected, "found": c.found} for c in outcome.conflicts
        ],
        "notCaptured": [{"path": n.path, "reason": n.reason} for n in cs.not_captured],
        "text": outcome.describe("undo" if undo else "redo"),
    }


async def checkpoint_rewind(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    """`_rawtrio/rewind`: take session `sessionId` back to just before its prompt `prompt`
    (1-based, in the order of its display history): `restore` is "both" (the default: the
    files, and the conversation forked), "files" or "conversation". With files changed
    outside rawtrio since, nothing is done and the answer lists the `conflicts` (`applied:
    false`); `force: true` overwrites them. `sessionId` of the answer is the fork (null
    when the conversation was not rewound); the source session is left as it was."""
    from rawtrio.app.choice import writer_lease
    from rawtrio.checkpoints.rewind import WHATS, prompts_of, rewind

    sid = p.required_string(params, "sessionId")
    number: Any = params.get("prompt")
    if not _is_int(number) or number < 1:
        raise p.invalid(f"prompt must be an integer >= 1, got {json_type_name(number)}")
    what = params.get("restore", "both")
    if what not in WHATS:
        raise p.invalid(f"restore must be one of {', '.join(WHATS)}, got {what!r}")
    force = _bool(params, "force")
    live = conn.agent.sessions.get(sid)
    session = live.session if live is not None and not live.session.closed else None
    if session is not None and session.running_turn is not None:
        raise turn_running("a turn is running; cancel it first to rewind")
    ready()
    runtime = conn.agent.runtime
    try:
        # A session live in the host is held by it; one open in another process (a local
        # chat, a headless run) is refused with `SessionLocked` (exit code 5) rather than
        # rewound under its feet.
        async with writer_lease(runtime, sid):
            record = await runtime.get_session(sid)
            prompts = prompts_of(await runtime.session_events(sid))
            store = _checkpoint_store(session, Path(record.cwd))
            result = await rewind(runtime, store, sid, prompts, number, what, force=force)
    except RawtrioError as exc:
        raise rawtrio_error(exc) from None
    except OSError as exc:
        raise rawtrio_error(UsageError(f"could not restore the files: {exc}")) from None
    return {
        "applied": result.applied,
        "sessionId": result.session_id,
        "title": result.title,
        "prompt": result.prompt.number,
        "promptText": result.prompt.text,
        "restored": list(result.restored),
        "conflicts": [
            {"path": c.path, "expected": c.expected, "found": c.found} for c in result.conflicts
        ],
        "text": result.describe(),
    }


def _checkpoint_store(session: Session | None, cwd: Path) -> CheckpointStore:
    """Where the checkpoints of a session working in `cwd` are: the live `session`'s own
    store while it captures, else this state directory's store for `cwd` — the one `rawtrio
    undo` reads. Checkpoints off stop a session's turns capturing; what its earlier runs
    recorded stays undoable from every front end (docs/checkpoints.md, "Who may undo")."""
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    if session is not None and session.checkpoints is not None:
        return session.checkpoints.store
    return CheckpointStore(checkpoints_root(), cwd)


async def host_status(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    return _host(conn).status()


async def host_stop(
    conn: AcpConnection, peer: Peer, params: Mapping[str, Any], ready: Ready
) -> Any:
    # Stopped once the answer is queued: the host then lets each connection write out.
    return Reply({}, _host(conn).stop)


async def handle_notification(conn: AcpConnection, peer: Peer, method: str, params: Any) -> None:
    if method == "_rawtrio/session/cancel":
        params = params or {}
        live = _live_session(conn, params)
        reason = p.string(params, "reason", required=False) or "cancelled by a client"
        live.cancel(reason)
    else:
        log.info("%s: ignoring unknown notification %s", conn.name, method)


_Method = Callable[[AcpConnection, Peer, Any, Ready], Awaitable[Any]]
REQUESTS: Final[dict[str, _Method]] = {
    "_rawtrio/session/start": session_start,
    "_rawtrio/session/submit": session_submit,
    "_rawtrio/session/usage": session_usage,
    "_rawtrio/session/info": session_info_method,
    "_rawtrio/session/events": session_events,
    "_rawtrio/session/answer_permission": session_answer_permission,
    "_rawtrio/session/set_mode": session_set_mode,
    "_rawtrio/session/set_model": session_set_model,
    "_rawtrio/session/compact": session_compact,
    "_rawtrio/session/close": session_close,
    "_rawtrio/sessions/list": sessions_list,
    "_rawtrio/sessions/get": sessions_get,
    "_rawtrio/sessions/fork": sessions_fork,
    "_rawtrio/sessions/delete": sessions_delete,
    "_rawtrio/undo": checkpoint_undo,
    "_rawtrio/redo": checkpoint_redo,
    "_rawtrio/rewind": checkpoint_rewind,
    "_rawtrio/host/status": host_status,
    "_rawtrio/host/stop": host_stop,
}
